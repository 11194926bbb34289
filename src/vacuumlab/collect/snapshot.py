"""Collect a :class:`~vacuumlab.records.snapshot.Snapshot` in a fixed number of queries.

Each probe is one query whatever the number of tables. A probe that fails for a reason the
user can fix (a missing privilege, a timeout, a lock) or that the server is too old for is
turned off with a note; the others go on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import psycopg
from psycopg import errors

from vacuumlab import __version__
from vacuumlab.errors import VacuumlabError
from vacuumlab.memory import collector_paused
from vacuumlab.pg.connect import Session, VersionTooOld, first_line
from vacuumlab.records import snapshot as m


@dataclass(frozen=True, slots=True)
class Probe:
    """One question asked of the server, and where its answer goes in the snapshot."""

    field: str
    query: str
    record: type[m.Record]
    single: bool = False
    #: Whether the query takes ``measure`` (see collect()).
    sized: bool = False


PROBES: tuple[Probe, ...] = (
    Probe("settings", "settings", m.Setting),
    Probe("tables", "tables", m.Relation, sized=True),
    Probe("io", "io", m.IoRow),
    Probe("checkpointer", "checkpointer", m.Checkpointer, single=True),
    Probe("bgwriter", "bgwriter", m.Bgwriter, single=True),
    Probe("wal", "wal", m.Wal, single=True),
    Probe("xids", "xids", m.XidState, single=True),
    Probe("databases", "databases", m.Database),
    Probe("backends", "backends", m.Backend),
    Probe("slots", "slots", m.ReplicationSlot),
    Probe("prepared", "prepared", m.PreparedXact),
    Probe("vacuums", "vacuums", m.VacuumProgress),
)

Sizes = Literal["measured", "estimated"]

_PRIVILEGE_FIX = "GRANT pg_monitor TO {user};"


def collect(session: Session, *, sizes: Sizes = "measured") -> m.Snapshot:
    """Ask every probe; build the snapshot from what answered and notes for what did not.

    ``sizes="estimated"`` takes every relation's size from ``pg_class.relpages`` instead of
    opening it (pg/queries/tables*.sql): the same statements, in a fraction of the server's
    time at 10,000 tables. For the live view, whose thresholds and simulation work from
    reltuples, the statistics and pages, as autovacuum does; the snapshot says so
    (``Snapshot.sizes``)."""
    with collector_paused():
        return _collect(session, sizes)


def _collect(session: Session, sizes: Sizes) -> m.Snapshot:
    taken_at = datetime.now(UTC)
    values: dict[str, Any] = {}
    notes: list[m.ProbeNote] = []
    for probe in PROBES:
        params = {"measure": sizes == "measured"} if probe.sized else None
        try:
            rows = session.fetch(probe.query, probe.record, params)
        except VacuumlabError as exc:
            if not isinstance(exc, VersionTooOld):
                raise
            notes.append(m.ProbeNote(probe=probe.query, reason=str(exc)))
            continue
        except psycopg.DatabaseError as exc:
            notes.append(_note(probe, exc, session))
            continue
        values[probe.field] = (rows[0] if rows else None) if probe.single else rows
    values["tables"] = assemble_tables(values.get("tables", []))
    notes.extend(_visibility_notes(session))
    return m.Snapshot(
        vacuumlab_version=__version__,
        taken_at=taken_at,
        server=session.info,
        sizes=sizes,
        notes=notes,
        **values,
    )


def _note(probe: Probe, exc: psycopg.DatabaseError, session: Session) -> m.ProbeNote:
    """A note for a failed probe, or re-raise when the failure is not the probe's own."""
    if isinstance(exc, psycopg.OperationalError) and session.conn.closed:
        raise VacuumlabError(f"lost the connection to the server: {first_line(exc)}") from None
    fix = None
    if isinstance(exc, errors.InsufficientPrivilege):
        fix = _PRIVILEGE_FIX.format(user=session.info.user)
    elif isinstance(exc, errors.QueryCanceled):
        fix = "the server is busy or the query too slow; try again or raise the timeout"
    elif isinstance(exc, errors.LockNotAvailable):
        fix = "a relation was locked; try again"
    return m.ProbeNote(probe=probe.query, reason=first_line(exc), fix=fix)


def _visibility_notes(session: Session) -> Iterable[m.ProbeNote]:
    if not session.info.can_read_all_stats:
        yield m.ProbeNote(
            probe="backends",
            reason="other roles' sessions show no xmin or query without pg_read_all_stats",
            fix=_PRIVILEGE_FIX.format(user=session.info.user),
        )


def assemble_tables(rows: Iterable[m.Relation]) -> list[m.Table]:
    """Pair each heap with its TOAST relation (rows of both kinds come in one list); tables
    in ``schema.name`` order. The query leaves the order to us: names compare as PostgreSQL's
    ``name`` type does (collation "C", byte order, which UTF-8 shares with code points)."""
    rows = sorted(rows, key=lambda row: (row.schema_name, row.name))
    toasts = {row.toast_of: row for row in rows if row.toast_of is not None}
    return [m.Table(heap=row, toast=toasts.get(row.oid)) for row in rows if row.toast_of is None]
