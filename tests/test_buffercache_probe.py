"""collect/buffercache.py on the embedded server: the pages of each changed relation and of
its indexes in shared buffers, counted from pg_buffercache, match the relation's size when
it was just written and drop to nothing once it is evicted; without the extension nothing is
asked, without the privilege a note says why and how to fix it; the advisor prices every page
of an evicted table as a miss."""

from __future__ import annotations

from psycopg import sql
from psycopg.conninfo import make_conninfo

from helpers.db import execute
from vacuumlab.collect.buffercache import with_buffercache
from vacuumlab.collect.snapshot import PROBES, collect
from vacuumlab.lab.advice import collect_advice
from vacuumlab.pg.connect import connect

#: 226 (int, int) rows fill a page.
ROWS = 226 * 300


def _table(dsn: str) -> None:
    execute(
        dsn,
        "CREATE TABLE t (id int PRIMARY KEY, n int) WITH (autovacuum_enabled = off)",
        f"INSERT INTO t SELECT g, 0 FROM generate_series(1, {ROWS}) g",
        "UPDATE t SET n = 1 WHERE id % 1000 = 0",  # changes: the probe's candidate
        "SELECT pg_stat_force_next_flush()",
    )


def _sizes(dsn: str) -> tuple[int, int]:
    with connect(dsn) as session:
        row = session.conn.execute(
            "SELECT pg_relation_size('t') / 8192, pg_relation_size('t_pkey') / 8192"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_cached_pages_are_counted_and_evicted_ones_are_not(embedded_database: str) -> None:
    dsn = embedded_database
    _table(dsn)
    with connect(dsn) as session:
        snap = collect(session)
        assert with_buffercache(session, snap) is snap  # no pg_buffercache: nothing asked
    execute(dsn, "CREATE EXTENSION pg_buffercache")
    heap, index = _sizes(dsn)
    with connect(dsn) as session:
        before = session.statements
        [cached] = with_buffercache(session, collect(session)).cached
        assert session.statements - before == len(PROBES) + 2  # the schema, then the buffers
    assert (cached.heap, cached.indexes) == (heap, index)  # just written: all there
    execute(dsn, "SELECT pg_buffercache_evict_relation('t')")
    with connect(dsn) as session:
        [cached] = with_buffercache(session, collect(session)).cached
    assert (cached.heap, cached.indexes) == (0, index)


def test_a_role_without_the_privilege_gets_a_note(embedded_database: str) -> None:
    """pg_buffercache 1.2 grants its view to pg_monitor only."""
    _table(embedded_database)
    execute(embedded_database, "CREATE EXTENSION pg_buffercache")
    role = "vl_no_monitor"
    execute(embedded_database, sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    try:
        with connect(make_conninfo(embedded_database, user=role)) as session:
            snap = with_buffercache(session, collect(session))
    finally:
        execute(embedded_database, sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    assert snap.cached == []
    [note] = [n for n in snap.notes if n.probe == "buffercache"]
    assert "shared buffers could not be read" in note.reason
    assert note.fix == f"GRANT pg_monitor TO {role};"


def test_the_advisor_prices_an_evicted_table_as_misses(embedded_database: str) -> None:
    """The table evicted before the advice: the timing finding says the cached pages were
    counted, and that every page of the table and its index is read in."""
    dsn = embedded_database
    _table(dsn)
    execute(
        dsn,
        "CREATE EXTENSION pg_buffercache",
        "ALTER TABLE t SET (autovacuum_vacuum_threshold = 2, autovacuum_vacuum_scale_factor = 0)",
    )

    def change(_seconds: float) -> None:
        execute(
            dsn,
            "UPDATE t SET n = 2 WHERE id % 1000 = 1",
            "SELECT pg_stat_force_next_flush()",
            "SELECT pg_buffercache_evict_relation('t')",
            "SELECT pg_buffercache_evict_relation('t_pkey')",
        )

    advice, _ = collect_advice(dsn, interval=1.0, on_wait=change)
    [finding] = [f for f in advice.findings if f.question == "timing" and f.relation == "public.t"]
    assert finding.evidence["pages_cached_from"] == "pg_buffercache"
    assert finding.evidence["pages_missed_share"] == 1.0
