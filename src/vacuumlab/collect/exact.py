"""The exact-bloat probe (``--exact``): ``pgstattuple_approx`` for the tables most likely
bloated, within a size limit. It reads every page that is not all-visible, so it is opt-in
and bounded; a table it cannot read gets a note and the others go on."""

from __future__ import annotations

import psycopg

from vacuumlab.pg.connect import Session
from vacuumlab.records.snapshot import ExactBloat, ProbeNote, Relation, Snapshot

#: At most this many tables, the largest dead shares first, each at most ``EXACT_MAX_BYTES``.
EXACT_TABLES = 20
EXACT_MAX_BYTES = 1 << 30
PROBE = "exact"


def with_exact(session: Session, snapshot: Snapshot) -> Snapshot:
    """The snapshot with the probe's measurements and notes: they travel in its JSON."""
    measured, notes = exact_bloat(session, candidates(snapshot))
    return snapshot.model_copy(update={"exact": measured, "notes": [*snapshot.notes, *notes]})


def candidates(snapshot: Snapshot) -> list[Relation]:
    """The heaps with the most dead rows, of at most ``EXACT_MAX_BYTES`` each."""
    heaps = (t.heap for t in snapshot.tables if (t.heap.heap_bytes or 0) <= EXACT_MAX_BYTES)
    return sorted(heaps, key=lambda r: -(r.n_dead_tup or 0))[:EXACT_TABLES]


def exact_bloat(
    session: Session, relations: list[Relation]
) -> tuple[list[ExactBloat], list[ProbeNote]]:
    """Measure each relation; a missing extension or an unreadable table becomes a note."""
    if "pgstattuple" not in session.info.extensions:
        fix = "CREATE EXTENSION pgstattuple;"
        note = ProbeNote(probe=PROBE, reason="the pgstattuple extension is not installed", fix=fix)
        return [], [note]
    measured: list[ExactBloat] = []
    notes: list[ProbeNote] = []
    for rel in relations:
        try:
            measured.extend(session.fetch("exact_bloat", ExactBloat, {"relid": rel.oid}))
        except psycopg.Error as exc:
            reason = f"{rel.qualified_name}: {exc.diag.message_primary}"
            notes.append(ProbeNote(probe=PROBE, reason=reason))
    return measured, notes
