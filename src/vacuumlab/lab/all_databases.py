"""Every database of a server, for ``snapshot --all-databases`` and ``advise --all-databases``.

A session reads one database's tables, so each database that accepts connections is visited on
a session of its own, one at a time (open, collect with the same statements as for one
database, close): the DSN with only its database name replaced, opened as every session is
(:func:`vacuumlab.pg.connect.connect`: read-only, the same timeouts). A database the role may
not connect to, or that refuses the connection for any other reason (its connection limit, or
dropped since it was listed), becomes a note with the fix, and the others go on.

With an interval every database is visited twice: all of them once, then, ``interval`` after
the first visit began, all of them again, so each database's two snapshots are about
``interval`` apart while no more than one session is open at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from psycopg.conninfo import make_conninfo

from vacuumlab import __version__
from vacuumlab.advise.all_databases import advise_all
from vacuumlab.collect.exact import with_exact
from vacuumlab.collect.snapshot import collect
from vacuumlab.errors import VacuumlabError
from vacuumlab.lab.advice import TIMEOUTS, probed
from vacuumlab.pg.connect import Session, connect
from vacuumlab.pg.databases import connectable, failure, refused
from vacuumlab.records.all_databases import AllDatabasesAdvice, AllDatabasesSnapshot
from vacuumlab.records.snapshot import ProbeNote, Snapshot
from vacuumlab.studies.base import Progress, Silent

#: What one visit does with a database's session: its snapshot.
Work = Callable[[Session], Snapshot]


def collect_all(
    dsn: str,
    *,
    exact: bool = False,
    progress: Progress | None = None,
    application_name: str = "vacuumlab",
) -> AllDatabasesSnapshot:
    """A snapshot of every database of the server of ``dsn`` (``exact``: with the bloat
    probe's figures); raises only when no database at all could be read."""
    progress = progress or Silent()
    names, user = databases(dsn, application_name)
    progress.started(len(names))

    def work(session: Session) -> Snapshot:
        snap = collect(session)
        return with_exact(session, snap) if exact else snap

    return _round(dsn, names, user, work, progress, application_name).snapshot()


def collect_all_advice(
    dsn: str,
    *,
    interval: float | None = None,
    exact: bool = False,
    on_wait: Callable[[float], None] | None = None,
    progress: Progress | None = None,
) -> AllDatabasesAdvice:
    """Inspect every database of the server read-only and advise each, from one snapshot or,
    with ``interval``, from two that far apart (rates)."""
    progress = progress or Silent()
    app = "vacuumlab-advise"
    names, user = databases(dsn, app)
    progress.started(len(names) * (2 if interval else 1))
    began = time.monotonic()
    if not interval:

        def once(session: Session) -> Snapshot:
            return probed(session, collect(session), exact=exact)

        return advise_all(_round(dsn, names, user, once, progress, app).snapshot())
    first = _round(dsn, names, user, collect, progress, app).snapshot()
    wait = interval - (time.monotonic() - began)
    if wait > 0:
        if on_wait is not None:
            on_wait(wait)
        time.sleep(wait)
    earlier = first.by_database()

    def again(session: Session) -> Snapshot:
        before = earlier[session.info.database]
        return probed(session, collect(session), before, exact=exact)

    read = [n for n in names if n in earlier]
    for unread in (n for n in names if n not in earlier):  # the progress counted them twice
        progress.point_started(f"database {unread} (not read)", None)
        progress.point_finished(f"database {unread} (not read)", {})
    later = _round(dsn, read, user, again, progress, app, label=" (second snapshot)")
    if later.found:
        return advise_all(first, later.snapshot())
    # Read the first time but not the second: each advised from its one snapshot, the notes
    # saying why.
    return advise_all(first.model_copy(update={"notes": [*first.notes, *later.notes]}))


def databases(dsn: str, application_name: str) -> tuple[list[str], str]:
    """The names of the databases that accept connections, and the role's name, read on a
    session to the DSN's own database (its failure is the command's)."""
    with connect(dsn, timeouts=TIMEOUTS, application_name=application_name) as session:
        return connectable(session), session.info.user


@dataclass
class _Round:
    """One visit of each database: the snapshots read and the notes for the others."""

    taken_at: datetime
    found: list[Snapshot] = field(default_factory=list)
    notes: list[ProbeNote] = field(default_factory=list)

    def snapshot(self) -> AllDatabasesSnapshot:
        """The round's snapshots, or a one-line error when it could read no database."""
        if not self.found:
            if not self.notes:
                raise VacuumlabError("the server has no database that accepts connections")
            raise VacuumlabError(f"no database of the server could be read: {self.notes[0].reason}")
        return AllDatabasesSnapshot(
            vacuumlab_version=__version__,
            taken_at=self.taken_at,
            snapshots=self.found,
            notes=self.notes,
        )


def _round(
    dsn: str,
    names: list[str],
    user: str,
    work: Work,
    progress: Progress,
    application_name: str,
    *,
    label: str = "",
) -> _Round:
    """Each database in turn, one session at a time."""
    found = _Round(taken_at=datetime.now(UTC))
    for name in names:
        point = f"database {name}{label}"
        progress.point_started(point, None)
        started = time.monotonic()
        result = _visit(make_conninfo(dsn, dbname=name), name, user, work, application_name)
        if isinstance(result, ProbeNote):
            found.notes.append(result)
            progress.point_finished(point, {})
        else:
            found.found.append(result)
            progress.point_finished(point, {"duration_wall_s": time.monotonic() - started})
    return found


def _visit(
    conninfo: str, name: str, user: str, work: Work, application_name: str
) -> Snapshot | ProbeNote:
    """One database: its snapshot, or the note that says why there is none."""
    try:
        session = connect(conninfo, timeouts=TIMEOUTS, application_name=application_name)
    except VacuumlabError as exc:
        return refused(name, user, failure(conninfo, str(exc)))
    with session:
        try:
            return work(session)
        except VacuumlabError as exc:
            # A session lost halfway (the database dropped with FORCE, say): this database's
            # problem, not the others'.
            return ProbeNote(probe="snapshot", reason=f"cannot read database {name}: {exc}")
