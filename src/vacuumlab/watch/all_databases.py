"""Refreshes of every database of a server (``watch`` and ``exporter --all-databases``): each
refresh lists the databases that accept connections (pg/databases.py), reads each in turn
through a :class:`~vacuumlab.watch.source.Source` of its own, one statement at a time across
the server, and merges their views into one (watch/merged.py).

- **The list is read again at every refresh**, one statement on the DSN's own session: a new
  database shows at the next refresh, a dropped one leaves it (its source closed and
  forgotten). One that fails to connect is looked up again before it is called unread, so a
  database dropped between the list and its visit goes without a word.
- **Sessions are kept between refreshes**, one per database, up to :data:`KEPT_SESSIONS` with
  the DSN's own; the databases past them (in name order) are visited on a session opened and
  closed each time.
  On the embedded PostgreSQL 18, ten databases of 200 tables each took 0.15 s a round on kept
  sessions and 0.47 s reconnecting every time: 11 ms a connection, and the rest the new
  backend filling its catalog caches for the snapshot's statements (36 ms a database instead
  of 15). An idle kept session holds a connection slot and about 10 MB of the server's
  memory, hence the bound. Each database's previous snapshot (for rates), last vacuum lengths
  and kept rows stay whichever way it is visited.
- **A database it cannot read is no failure of the refresh**: it goes into the view's
  ``unread`` with the reason and, for a missing CONNECT privilege, the GRANT that fixes it.
  A kept session found lost (a restart, say) is opened again once, at once. Only when the list
  cannot be read, or no database can, is the refresh a failure.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import psycopg
from psycopg.conninfo import make_conninfo

from vacuumlab.errors import VacuumlabError
from vacuumlab.memory import collector_paused
from vacuumlab.pg.connect import Session, Timeouts, first_line
from vacuumlab.pg.databases import connectable, failure, refused
from vacuumlab.records.live import LiveView, Refresh
from vacuumlab.records.snapshot import ProbeNote, Snapshot
from vacuumlab.watch.merged import merged
from vacuumlab.watch.source import APPLICATION_NAME, TIMEOUTS, Source
from vacuumlab.watch.view import HORIZON_S, Pick

#: Sessions kept open between refreshes at most (see above).
KEPT_SESSIONS: Final = 10


@dataclass
class _Round:
    """What one refresh found: each database's view and snapshot, and those not read."""

    views: list[LiveView] = field(default_factory=list)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    unread: dict[str, ProbeNote] = field(default_factory=dict)
    statements: int = 0


class ServerSource:
    """Refreshes of every database of the server of ``dsn``; ``pick``'s limit caps the rows
    of the whole server. Not thread-safe: one caller at a time."""

    def __init__(
        self,
        dsn: str,
        *,
        timeouts: Timeouts = TIMEOUTS,
        horizon_s: float = HORIZON_S,
        pick: Pick | None = None,
        application_name: str = APPLICATION_NAME,
    ) -> None:
        self.dsn = dsn
        self.timeouts = timeouts
        self.horizon_s = horizon_s
        self.pick = pick or Pick()
        self.application_name = application_name
        #: The DSN's own database: the list is read on its session.
        self.home = self._source(dsn)
        #: Each database listed, by name (the DSN's own is ``home``).
        self.sources: dict[str, Source] = {}

    def open(self) -> Session:
        """The DSN's session, opened now if there is none (a VacuumlabError says why not)."""
        session = self.home.open()
        self.sources.setdefault(session.info.database, self.home)
        return session

    def refresh(self) -> Refresh:
        """Read every database; the refresh fails only when none can be read."""
        start = time.perf_counter()
        with collector_paused():
            try:
                session = self.open()
                counted = session.statements
                names = connectable(session)
                statements = session.statements - counted
            except (VacuumlabError, psycopg.Error) as exc:
                self.home.close()
                return Refresh(None, first_line(exc), time.perf_counter() - start, 0)
            self._forget(set(names))
            found = self._visit(names, session)
            if not found.views:
                return Refresh(
                    None, _nothing_read(found), time.perf_counter() - start, found.statements
                )
            view = merged(
                found.views,
                home=session.info.database,
                unread=found.unread,
                limit=self.pick.limit,
            )
        return Refresh(
            view,
            None,
            time.perf_counter() - start,
            statements + found.statements,
            snapshots=found.snapshots,
        )

    def close(self) -> None:
        for source in {id(s): s for s in (self.home, *self.sources.values())}.values():
            source.close()

    # -- one refresh ------------------------------------------------------------------------

    def _visit(self, names: list[str], home: Session) -> _Round:
        """Each database in turn: its view, or the note that says why there is none."""
        found = _Round()
        listed: set[str] | None = None  # read again when a database fails to connect
        kept = 1  # the DSN's own session
        for name in names:
            source = self.sources.get(name)
            if source is None:
                source = self.sources[name] = self._source(self._conninfo(name))
            note = self._read(source, name, home, found)
            if note is not None:
                if listed is None:
                    listed = self._listed(home, found)
                if name in listed:
                    found.unread[name] = note
                else:  # dropped since the list was read
                    self._forget(listed)
            if source is self.home:
                continue
            if kept < KEPT_SESSIONS and source.session is not None:
                kept += 1
            else:
                source.close()
        return found

    def _read(self, source: Source, name: str, home: Session, found: _Round) -> ProbeNote | None:
        kept = source.session is not None
        try:
            source.open()
        except VacuumlabError as exc:
            return refused(name, home.info.user, failure(source.dsn, str(exc)))
        refresh = source.refresh()
        if refresh.view is None and kept and source.lost:
            refresh = source.refresh()  # a kept session lost since: once more, on a new one
        found.statements += refresh.statements
        if refresh.view is None:
            return ProbeNote(
                probe="snapshot", reason=f"cannot read database {name}: {refresh.error}"
            )
        found.views.append(refresh.view)
        if refresh.snapshot is not None:
            found.snapshots[name] = refresh.snapshot
        return None

    def _listed(self, home: Session, found: _Round) -> set[str]:
        """The databases listed now (the list read at the start if it cannot be read)."""
        counted = home.statements
        try:
            return set(connectable(home))
        except (VacuumlabError, psycopg.Error):
            return set(self.sources)
        finally:
            found.statements += home.statements - counted

    def _forget(self, listed: Iterable[str]) -> None:
        """Close and forget the sources of the databases no longer listed."""
        keep = set(listed)
        for name in [n for n in self.sources if n not in keep]:
            source = self.sources.pop(name)
            if source is not self.home:
                with contextlib.suppress(psycopg.Error):
                    source.close()

    def _conninfo(self, name: str) -> str:
        return make_conninfo(self.dsn, dbname=name)

    def _source(self, dsn: str) -> Source:
        return Source(
            dsn,
            timeouts=self.timeouts,
            horizon_s=self.horizon_s,
            pick=self.pick,
            application_name=self.application_name,
            named=True,
        )


def _nothing_read(found: _Round) -> str:
    if not found.unread:
        return "the server has no database that accepts connections"
    first = next(iter(found.unread.values()))
    return f"no database of the server could be read: {first.reason}"
