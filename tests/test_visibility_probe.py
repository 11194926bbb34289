"""collect/visibility.py on the embedded server: the pages the next vacuum reads, counted from
pg_visibility_map() with vacuum's skipping rules, equal what VACUUM reports; without the
extension nothing is asked, without the privilege a note says why and how to fix it."""

from __future__ import annotations

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from helpers.db import execute
from vacuumlab.collect.snapshot import PROBES, collect
from vacuumlab.collect.vacuum_log import parse_report
from vacuumlab.collect.visibility import with_visibility
from vacuumlab.lab.advice import collect_advice
from vacuumlab.pg.connect import connect

#: 40 int pairs fill a page (fillfactor 100): 226 rows a page.
PER_PAGE = 226
PAGES = 300


def _frozen_table(dsn: str) -> None:
    execute(
        dsn,
        "CREATE TABLE t (id int, n int) WITH (autovacuum_enabled = off)",
        f"INSERT INTO t SELECT g, 0 FROM generate_series(1, {PER_PAGE * PAGES}) g",
        "VACUUM (FREEZE, ANALYZE) t",
    )


def _update_pages(dsn: str, *pages: int) -> None:
    """One row on each page: a TID scan reads that page alone; the new version goes to the
    end, every page being full."""
    execute(dsn, *[f"UPDATE t SET n = 1 WHERE ctid = '({p},1)'" for p in pages])


def _vacuum_scanned(dsn: str) -> int:
    """The pages a plain VACUUM (VERBOSE) reports it scanned."""
    notices: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        conn.execute("VACUUM (VERBOSE) t")
    [report] = [parse_report(n) for n in notices if n.startswith("finished vacuuming")]
    assert report.pages_scanned is not None
    return report.pages_scanned


def test_counted_pages_are_the_pages_vacuum_reads(embedded_database: str) -> None:
    """Changed pages 10, 30, 100 and 250: the 19 pages between 10 and 30 are read (a run
    shorter than 32), the 69 between 30 and 100 skipped; the new versions went to a new last
    page. PostgreSQL reads 1 + 0..9 (a run of 10) + 10..30 + 100 + 250 + the last page."""
    _frozen_table(embedded_database)
    _update_pages(embedded_database, 10, 30, 100, 250)
    with connect(embedded_database) as session:
        snap = collect(session)
        assert with_visibility(session, snap) is snap  # no pg_visibility: nothing asked
    execute(embedded_database, "CREATE EXTENSION pg_visibility")
    with connect(embedded_database) as session:
        before = session.statements
        [counted] = with_visibility(session, collect(session)).scanned
        assert session.statements - before == len(PROBES) + 2  # the schema, then the maps
    assert (counted.pages, counted.all_visible) == (PAGES + 1, PAGES - 4)
    assert counted.normal == 10 + 21 + 1 + 1 + 1
    assert counted.aggressive == counted.normal  # every all-visible page is all-frozen
    assert _vacuum_scanned(embedded_database) == counted.normal


def test_a_role_without_the_privilege_gets_a_note(embedded_database: str) -> None:
    """pg_visibility 1.2 grants its functions to pg_stat_scan_tables only."""
    _frozen_table(embedded_database)
    execute(embedded_database, "CREATE EXTENSION pg_visibility")
    _update_pages(embedded_database, 10)
    role = "vl_no_scan_tables"
    execute(embedded_database, sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    try:
        with connect(make_conninfo(embedded_database, user=role)) as session:
            snap = with_visibility(session, collect(session))
    finally:
        execute(embedded_database, sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    assert snap.scanned == []
    [note] = [n for n in snap.notes if n.probe == "visibility"]
    assert "pages estimated" in note.reason
    assert note.fix == f"GRANT pg_stat_scan_tables TO {role};"


def test_the_advisor_counts_the_pages_where_it_may(embedded_database: str) -> None:
    """collect_advice reads the maps on the later snapshot, for the tables changed in the
    interval; the timing finding says the pages were counted. (A threshold of 2 dead tuples:
    the vacuum comes with the 4 there are, not with more changes to come.)"""
    _frozen_table(embedded_database)
    execute(
        embedded_database,
        "CREATE EXTENSION pg_visibility",
        "ALTER TABLE t SET (autovacuum_vacuum_threshold = 2, autovacuum_vacuum_scale_factor = 0)",
    )

    def change(_seconds: float) -> None:
        _update_pages(embedded_database, 10, 30, 100, 250)
        execute(embedded_database, "SELECT pg_stat_force_next_flush()")

    advice, _ = collect_advice(embedded_database, interval=1.0, on_wait=change)
    [finding] = [f for f in advice.findings if f.question == "timing" and f.relation == "public.t"]
    assert finding.evidence["heap_pages_from"] == "pg_visibility_map"
    assert finding.evidence["heap_pages_to_visit"] == 34
    assert "counted from the visibility map" in finding.detail
