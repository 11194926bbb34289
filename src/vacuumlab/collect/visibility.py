"""The visibility-map probe: where the ``pg_visibility`` extension is installed and the role
may call it, the heap pages the next vacuum of each changed relation reads, counted from
``pg_visibility_map()`` (pg/queries/pages_scanned.sql) instead of estimated.

The advisor never installs the extension. The probe reads only the visibility map (two bits
per heap page), but returns a row per heap page to the query that counts the runs, so it is
bounded: the relations with changes (between the two snapshots, or since their last vacuum
with one), most changes first, up to ``MAX_PAGES`` heap pages in all, in one statement. A
missing extension costs nothing; a missing privilege, a timeout or a lock turns the probe off
with a note, and the advice estimates the pages instead.
"""

from __future__ import annotations

import psycopg

from vacuumlab.collect.probes import extension_note, per_relation
from vacuumlab.pg.connect import Session
from vacuumlab.records.snapshot import PagesScanned, ProbeNote, Relation, Snapshot

PROBE = "visibility"
EXTENSION = "pg_visibility"
#: At most this many heap pages (8 GB at 8 kB) in one probe: about a second of the server's
#: time (20,000 pages took 25 ms on the embedded server).
MAX_PAGES = 1_000_000
#: pg_visibility 1.2 (PostgreSQL 10+) grants its functions to this role only.
_FIXES = (
    "GRANT pg_stat_scan_tables TO {user};",
    "the server is busy or the tables large; try again",
)
_REASON = "the visibility maps could not be read ({error}): pages estimated"


def with_visibility(
    session: Session, snapshot: Snapshot, earlier: Snapshot | None = None
) -> Snapshot:
    """The snapshot with the visibility maps of its changed relations, and a note when the
    probe could not run; unchanged when pg_visibility is not installed."""
    if EXTENSION not in session.info.extensions:
        return snapshot
    relations = candidates(snapshot, earlier)
    if not relations:
        return snapshot
    scanned, notes = pages_scanned(session, relations)
    return snapshot.model_copy(update={"scanned": scanned, "notes": [*snapshot.notes, *notes]})


def candidates(snapshot: Snapshot, earlier: Snapshot | None = None) -> list[Relation]:
    """The relations whose next vacuum the advice times: changed between the snapshots, or
    with one snapshot since their last vacuum; most changes first, within ``MAX_PAGES``."""
    before = {}
    if earlier is not None:
        before = {r.oid: r for t in earlier.tables for r in (t.heap, t.toast) if r is not None}
    block = snapshot.server.block_size
    changed: list[tuple[int, int, Relation]] = []
    for table in snapshot.tables:
        for rel in (table.heap, table.toast):
            if rel is None:
                continue
            amount = _changes(rel, before.get(rel.oid), compare=earlier is not None)
            if amount > 0:
                pages = rel.heap_bytes // block if rel.heap_bytes is not None else rel.relpages
                changed.append((amount, pages, rel))
    chosen, budget = [], MAX_PAGES
    for _amount, pages, rel in sorted(changed, key=lambda c: -c[0]):
        if pages <= budget:
            chosen.append(rel)
            budget -= pages
    return chosen


def _changes(rel: Relation, before: Relation | None, *, compare: bool) -> int:
    if not compare:
        return (rel.n_dead_tup or 0) + (rel.n_ins_since_vacuum or 0)
    if before is None:
        return 0

    def total(r: Relation) -> int:
        return (r.n_tup_ins or 0) + (r.n_tup_upd or 0) + (r.n_tup_del or 0)

    return total(rel) - total(before)


def pages_scanned(
    session: Session, relations: list[Relation]
) -> tuple[list[PagesScanned], list[ProbeNote]]:
    """Each relation's pages as the next vacuum reads them, in one statement; a note instead
    when the probe fails."""
    try:
        oids = [r.oid for r in relations]
        return per_relation(session, EXTENSION, "pages_scanned", PagesScanned, oids), []
    except psycopg.DatabaseError as exc:
        if isinstance(exc, psycopg.OperationalError) and session.conn.closed:
            raise
        return [], [extension_note(session, exc, PROBE, _REASON, _FIXES)]
