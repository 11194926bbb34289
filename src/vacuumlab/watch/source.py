"""Where refreshes come from: one read-only session, reused from one refresh to the next and
opened again after the connection is lost; the previous snapshot, kept for rates; and the
last vacuum lengths seen, kept for the relations whose snapshots no longer tell.

A refresh asks the server the snapshot's fixed number of statements (collect/snapshot.py),
whatever the number of tables, under the session's statement and lock timeouts
(pg/connect.py). A failed refresh says why and leaves the source ready for the next one.

Its snapshot's sizes are estimates (:data:`SIZES`): nothing the view shows is a size, and what
it works from (the thresholds' reltuples and statistics, the simulator's and the ETA's pages)
is what autovacuum reads too, pg_class's relpages and reltuples. Measuring the files instead
(pg_relation_size() on every heap, TOAST relation and index) was most of a refresh's server
time: at 10,000 tables it fell from 0.29 to 0.15 s without (bench/watch_refresh.py).
"""

from __future__ import annotations

import contextlib
import time
from typing import Final, Protocol

import psycopg

from vacuumlab.collect.snapshot import Kept, QuietFilter, Sizes, collect
from vacuumlab.errors import VacuumlabError
from vacuumlab.memory import collector_paused
from vacuumlab.model import thresholds as th
from vacuumlab.pg.connect import Session, Timeouts, connect, first_line
from vacuumlab.records.live import LiveView, Refresh
from vacuumlab.records.snapshot import Snapshot
from vacuumlab.watch.quiet import QUIET_FROM, WINDOW_MARGIN_S, xid_rate
from vacuumlab.watch.view import HORIZON_S, Pick, live_view, relations_of

APPLICATION_NAME = "vacuumlab-watch"
TIMEOUTS = Timeouts()
#: How a refresh sizes relations (see above).
SIZES: Final[Sizes] = "estimated"


class Refreshes(Protocol):
    """What the live view and the exporter refresh from: one database's :class:`Source`, or
    every database's (watch/all_databases.py)."""

    dsn: str

    def open(self) -> Session: ...

    def refresh(self) -> Refresh: ...

    def close(self) -> None: ...


class Source:
    """Refreshes of one server. Not thread-safe: one caller at a time."""

    def __init__(
        self,
        dsn: str,
        *,
        timeouts: Timeouts = TIMEOUTS,
        horizon_s: float = HORIZON_S,
        pick: Pick | None = None,
        application_name: str = APPLICATION_NAME,
        named: bool = False,
    ) -> None:
        self.dsn = dsn
        self.timeouts = timeouts
        self.horizon_s = horizon_s
        self.pick = pick or Pick()
        self.application_name = application_name
        self.session: Session | None = None
        self.previous: Snapshot | None = None
        self.durations: dict[int, float] = {}
        self.kept = Kept()
        #: For the quiet tables' filter: when the last collect began, the view's relations
        #: and the transaction ids its horizon consumes at the last rate.
        self.started: float | None = None
        self.relations = 0
        self.reach = 0.0
        #: Rows name their database (a view of several: watch/all_databases.py).
        self.named = named
        #: The last refresh failed because its connection was lost.
        self.lost = False

    def open(self) -> Session:
        """The session, opened now if there is none (a VacuumlabError says why it cannot)."""
        if self.session is None or self.session.conn.closed:
            self.session = connect(
                self.dsn, timeouts=self.timeouts, application_name=self.application_name
            )
        return self.session

    def refresh(self) -> Refresh:
        """Take a snapshot and build its view; on failure, drop the session and say why."""
        start = time.perf_counter()
        with collector_paused():
            try:
                session = self.open()
                counted = session.statements
                snapshot = self.take(session)
            except (VacuumlabError, psycopg.Error) as exc:
                self.lost = self.session is not None and self.session.conn.broken
                self.close()
                return Refresh(None, first_line(exc), time.perf_counter() - start, 0)
            self.lost = False
            statements = session.statements - counted
            view = self.build(snapshot)
        return Refresh(view, None, time.perf_counter() - start, statements, snapshot)

    def take(self, session: Session) -> Snapshot:
        """A snapshot for the view: sizes estimated, unchanged relations kept; in a large
        database, the quiet tables left to the server to count (watch/quiet.py)."""
        started, self.started = self.started, time.monotonic()
        return collect(
            session, sizes=SIZES, kept=self.kept, halves=False, quiet=self.quiet(started)
        )

    def quiet(self, started: float | None) -> QuietFilter | None:
        """The server's filter of the quiet tables, once the previous view counted more than
        QUIET_FROM tables' relations: ages under their freeze limits by what the horizon
        consumes (twice the last rate, for a burst), and no vacuum or analyze since the
        previous snapshot began, with a margin."""
        last = self.previous
        if last is None or started is None or self.relations <= 2 * QUIET_FROM:
            return None
        server = th.server_settings(last)
        limits = th.effective(server, {}, version_num=last.server.version_num).freeze
        return QuietFilter(
            xid_age=max(limits.xid - 2 * self.reach, 0.0),
            mxid_age=limits.mxid,
            window_s=time.monotonic() - started + WINDOW_MARGIN_S,
        )

    def build(self, snapshot: Snapshot) -> LiveView:
        """The view of ``snapshot`` after the previous one; then it becomes the previous one."""
        view = live_view(
            self.previous,
            snapshot,
            durations=self.durations,
            horizon_s=self.horizon_s,
            pick=self.pick,
            named=self.named,
        )
        if self.previous is not None and view.interval_s:
            self.reach = xid_rate(self.previous, snapshot, view.interval_s) * self.horizon_s
        self.relations = view.relations
        self.previous = snapshot
        # Kept for every relation still there, picked or not: a table may leave the rows
        # (--max-tables) and come back.
        known = self.durations | {t.oid: t.last_vacuum_s for t in view.tables if t.last_vacuum_s}
        here = relations_of(snapshot)  # kept: the next refresh's view reads it again
        self.durations = {oid: seconds for oid, seconds in known.items() if oid in here}
        return view

    def close(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            # Closing a broken connection may fail: there is nothing left to release then.
            with contextlib.suppress(psycopg.Error):
                session.close()
