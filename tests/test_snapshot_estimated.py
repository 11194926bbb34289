"""The snapshot with estimated sizes (the live view's): every size is pg_class.relpages × block
size, the statements are the same, and nothing else in the snapshot changes."""

from __future__ import annotations

import time

import psycopg

from helpers.db import execute
from helpers.snapshot import SIZED
from vacuumlab.collect.snapshot import Kept, collect, tables, with_sizes
from vacuumlab.pg import queries
from vacuumlab.pg.connect import connect
from vacuumlab.records.snapshot import Snapshot
from vacuumlab.watch.source import SIZES, Source

#: Each relation's own pages, its indexes' pages and, for a heap, its TOAST relation's and
#: that one's index's pages, as pg_class has them.
PAGES = """
SELECT c.relname, c.relpages,
       (SELECT coalesce(sum(i.relpages), 0) FROM pg_index x JOIN pg_class i
            ON i.oid = x.indexrelid WHERE x.indrelid = c.oid),
       t.relpages,
       (SELECT coalesce(sum(i.relpages), 0) FROM pg_index x JOIN pg_class i
            ON i.oid = x.indexrelid WHERE x.indrelid = t.oid)
  FROM pg_class c LEFT JOIN pg_class t ON t.oid = c.reltoastrelid
 WHERE c.relname IN ('fresh', 'written', 'rolled_back', 'emptied', 'truncated')
"""


def taken(dsn: str, *, sizes: str) -> tuple[Snapshot, int]:
    with connect(dsn) as session:
        before = session.statements
        snap = collect(session, sizes=sizes)  # type: ignore[arg-type]
        return snap, session.statements - before


def test_estimated_sizes_are_pg_class_pages(embedded_database: str) -> None:
    execute(embedded_database, *SIZED)
    measured, asked = taken(embedded_database, sizes="measured")
    estimated, asked_too = taken(embedded_database, sizes="estimated")
    assert asked_too == asked
    assert (measured.sizes, estimated.sizes) == ("measured", "estimated")
    block = estimated.server.block_size
    tables = {t.heap.name: t for t in estimated.tables}
    with psycopg.connect(embedded_database) as conn:
        rows = conn.execute(PAGES).fetchall()
    assert len(rows) == 5
    for name, heap, indexes, toast, toast_indexes in rows:
        t = tables[name]
        assert (t.heap.heap_bytes, t.heap.index_bytes) == (heap * block, indexes * block), name
        if t.toast is None:
            assert toast is None, name  # emptied: an int column only
            continue
        assert (t.toast.heap_bytes, t.toast.index_bytes) == (
            toast * block,
            toast_indexes * block,
        ), name
        assert t.heap.toast_bytes == (toast + toast_indexes) * block, name
    # An estimate, not a measure: 300 rows written and never vacuumed nor analysed are in the
    # files but not yet in relpages.
    written = next(t for t in measured.tables if t.heap.name == "written")
    assert written.toast is not None
    assert tables["written"].toast is not None
    assert tables["written"].toast.heap_bytes == 0 < (written.toast.heap_bytes or 0)
    # Everything but the sizes is the same.
    sizes = {"heap_bytes", "index_bytes", "toast_bytes"}
    for exact, guess in zip(measured.tables, estimated.tables, strict=True):
        for a, b in ((exact.heap, guess.heap), (exact.toast, guess.toast)):
            assert (a is None) == (b is None)
            if a is not None and b is not None:
                assert a.model_dump(exclude=sizes | {"n_live_tup", "n_dead_tup"}) == (
                    b.model_dump(exclude=sizes | {"n_live_tup", "n_dead_tup"})
                )


def test_estimated_sizes_do_not_wait_for_a_lock(embedded_database: str) -> None:
    """A relation held in ACCESS EXCLUSIVE is not opened, so its estimate is there; the
    measured snapshot leaves its size out rather than wait."""
    execute(
        embedded_database,
        "CREATE TABLE held (id int PRIMARY KEY)",
        "INSERT INTO held SELECT generate_series(1, 1000)",
        "ANALYZE held",
    )
    with psycopg.connect(embedded_database) as conn:
        conn.execute("LOCK TABLE held IN ACCESS EXCLUSIVE MODE")
        measured, _ = taken(embedded_database, sizes="measured")
        estimated, _ = taken(embedded_database, sizes="estimated")
        pages = conn.execute("SELECT relpages FROM pg_class WHERE relname = 'held'").fetchone()
    assert pages is not None
    assert pages[0] > 0
    (exact,) = measured.tables
    (guess,) = estimated.tables
    assert exact.heap.heap_bytes is None
    assert guess.heap.heap_bytes == pages[0] * estimated.server.block_size
    assert (guess.heap.index_bytes or 0) > 0


def test_the_live_view_refreshes_with_estimates(embedded_database: str) -> None:
    execute(embedded_database, "CREATE TABLE t (id int PRIMARY KEY)")
    source = Source(embedded_database)
    try:
        refresh = source.refresh()
    finally:
        source.close()
    assert refresh.error is None
    assert refresh.snapshot is not None
    assert SIZES == refresh.snapshot.sizes == "estimated"


def test_every_tables_file_estimates(embedded_database: str) -> None:
    """Each version's tables query (its version fragments filled in), run here with
    estimates, gives what the 18 one gives."""
    execute(embedded_database, *SIZED)
    with connect(embedded_database) as session:
        found = {
            v: tables(
                session,
                with_sizes(queries.get("tables", v) or "", by_file=False),
                {"measure": False},
                None,
            )
            for v in queries.versions("tables")
        }
    assert len(found) == 3
    sizes = {
        v: sorted(
            (r.name, r.heap_bytes, r.index_bytes, r.toast_bytes)
            for t in made
            for r in (t.heap, t.toast)
            if r is not None
        )
        for v, made in found.items()
    }
    newest = sizes[max(sizes)]
    assert any(row[3] for row in newest)  # a TOAST size, filled in from the TOAST row
    assert all(rows == newest for rows in sizes.values())


def test_kept_relations_are_what_a_fresh_collect_gives(embedded_database: str) -> None:
    """A live view's collects keep the records of relations whose rows came back the same;
    the snapshot is still the one a collect from nothing gives, ages and changes included."""
    execute(
        embedded_database,
        "CREATE TABLE quiet (id int PRIMARY KEY, body text)",
        "CREATE TABLE busy (id int PRIMARY KEY)",
    )
    kept = Kept()
    with connect(embedded_database) as session:
        first = collect(session, sizes="estimated", kept=kept)
        execute(embedded_database, "INSERT INTO busy SELECT generate_series(1, 50)")
        # Another transaction id: every relation's frozenxid_age grows.
        execute(embedded_database, "SELECT pg_current_xact_id()")
        deadline = time.monotonic() + 10
        while True:  # the insert reaches the statistics within about a second
            fresh = collect(session, sizes="estimated")
            busy = next(t for t in fresh.tables if t.heap.name == "busy")
            if busy.heap.n_tup_ins == 50 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        second = collect(session, sizes="estimated", kept=kept)
        third = collect(session, sizes="estimated", kept=kept)
    assert second.tables == fresh.tables
    assert third.tables == fresh.tables
    names = ("quiet", "busy")
    before, after, again = ({t.heap.name: t for t in s.tables} for s in (first, second, third))
    assert [after[n].heap.frozenxid_age for n in names] > [
        before[n].heap.frozenxid_age for n in names
    ]
    assert after["busy"].heap.n_tup_ins == 50 != before["busy"].heap.n_tup_ins
    # Nothing changed from the second to the third: the same records, not validated again.
    assert all(again[n].heap is after[n].heap for n in names)
    assert again["quiet"].toast is after["quiet"].toast
