"""Partitioned tables in the advice, on real servers (the embedded 18 and, where given, the
VACUUMLAB_TEST_DSN one): a partitioned table never analyzed, or analyzed long before its
partitions moved, gets ``ANALYZE parent``; its partitions keep their own findings; the table
view groups them under it; a partition attached between two snapshots is no rate. And a
table no vacuum or analyze has counted says so rather than reading as 1,000× its threshold."""

from __future__ import annotations

import re

import psycopg
import pytest
from rich.console import Console

from helpers.db import execute
from vacuumlab.advise import advise
from vacuumlab.collect.snapshot import collect
from vacuumlab.pg.connect import connect
from vacuumlab.records.advice import Advice, Finding
from vacuumlab.records.snapshot import Snapshot
from vacuumlab.report.advice.html import render_html
from vacuumlab.report.advice.markdown import render_markdown
from vacuumlab.report.advice.text import render

#: Four range partitions of 5,000 rows each, autovacuum off on the partitions so that nothing
#: analyzes them behind the test's back (a partitioned table takes no storage parameters).
EVENTS = (
    "CREATE TABLE events (id int, at date, v int) PARTITION BY RANGE (at)",
    *(
        f"CREATE TABLE events_{q} PARTITION OF events FOR VALUES FROM "
        f"('2026-{3 * q - 2:02d}-01') TO ('{2026 + q // 4}-{(3 * q) % 12 + 1:02d}-01') "
        "WITH (autovacuum_enabled = off)"
        for q in (1, 2, 3, 4)
    ),
    "INSERT INTO events SELECT g, date '2026-01-01' + g % 365, g FROM generate_series(1, 20000) g",
)


def snap(dsn: str) -> Snapshot:
    with connect(dsn) as session:
        return collect(session)


def about(advice: Advice, relation: str) -> list[Finding]:
    return [f for f in advice.findings if f.relation == relation]


def test_a_partitioned_table_never_analyzed_gets_analyze(database: str) -> None:
    execute(database, *EVENTS)
    advice = advise(snap(database))
    [parent] = about(advice, "public.events")
    assert parent.severity == "warning"
    assert parent.title.startswith("partitioned table never analyzed: 20,000 rows in 4 partitions")
    assert 'ANALYZE "public"."events";' in parent.detail
    assert parent.evidence["fix"] == 'ANALYZE "public"."events";'
    # Each partition keeps its own findings, under its own name, never under the parent's.
    for q in (1, 2, 3, 4):
        own = about(advice, f"public.events_{q}")
        assert own, f"events_{q} has no finding of its own"
        assert all("partitioned" not in f.title for f in own)
    # The table view groups the partitions under their parent, with its sums.
    grouped = {s.relation: s.partition_of for s in advice.tables if not s.is_toast}
    assert {grouped[f"public.events_{q}"] for q in (1, 2, 3, 4)} == {"public.events"}
    [status] = advice.partitioned
    assert (status.relation, status.partitions, status.rows) == ("public.events", 4, 20000)
    assert status.inserted == 20000
    assert status.analyzed_rows is None
    rendered_grouped(advice)


def rendered_grouped(advice: Advice) -> None:
    """Text, Markdown and HTML list the four partitions straight under their partitioned
    table's row, which reads "never analyzed"."""
    lines = render_markdown(advice).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("| public.events |"))
    assert "| partitioned |" in lines[at]
    assert "never analyzed" in lines[at]
    assert "4 partitions, 20,000 rows" in lines[at]
    below = [line.split(" | ")[0] for line in lines[at + 1 : at + 5]]
    assert below == [f"| ↳ public.events_{q}" for q in (1, 2, 3, 4)]

    console = Console(record=True, width=200)
    console.print(render(advice))
    text = console.export_text()
    assert text.index("public.events ") < text.index("↳ public.events_1")

    html = render_html(advice)
    rows = re.findall(r'<tr class="(partition(?:ed)?)">\s*<td class="code rel">([^<]*)', html)
    assert rows == [("partitioned", "public."), *[("partition", "public.")] * 4]


def test_analyzed_straight_after_its_load_is_no_finding(database: str) -> None:
    """Loaded and analyzed in one session, within pgstat's flush interval: the load's counts
    reach the statistics after the ANALYZE, so the partitions show 40,000 live rows and
    20,000 changed since, of the 20,000 rows the ANALYZE sampled."""
    with psycopg.connect(database, autocommit=True) as conn:
        for statement in (*EVENTS, "ANALYZE events"):
            conn.execute(statement)
    assert not about(advise(snap(database)), "public.events")


def test_analyzed_then_moved_by_most_of_its_rows_is_a_warning(database: str) -> None:
    execute(database, *EVENTS)
    execute(database, "ANALYZE events")
    assert not about(advise(snap(database)), "public.events")

    execute(
        database,
        "INSERT INTO events SELECT g, date '2026-02-01', g FROM generate_series(1, 3000) g",
    )
    [info] = about(advise(snap(database)), "public.events")
    assert info.severity == "info"
    assert "at least 15% of the 20,000 rows its last ANALYZE counted" in info.title
    # The rows now are the partitions' reltuples scaled to their pages, as the planner
    # scales them: within a page of rows of each partition.
    assert info.evidence["rows"] == pytest.approx(23000, rel=0.01)
    assert info.evidence["rows_moved"] == pytest.approx(3000, rel=0.05)

    # A rolling window: 13,000 rows go, a new partition takes as many. The row count is back
    # to 23,000, but the new partition's rows all came since the ANALYZE.
    execute(
        database,
        "DELETE FROM events WHERE id <= 10000",
        "CREATE TABLE events_5 PARTITION OF events FOR VALUES FROM ('2027-01-01') TO "
        "('2027-04-01') WITH (autovacuum_enabled = off)",
        "INSERT INTO events SELECT g, date '2027-01-02', g FROM generate_series(1, 13000) g",
    )
    [warning] = about(advise(snap(database)), "public.events")
    assert warning.severity == "warning"
    assert (warning.evidence["rows"], warning.evidence["rows_changed_since"]) == (23000, 13000)
    assert "at least 65% of the 20,000 rows" in warning.title
    assert "5 partitions now hold 23,000, and at least 13,000 of their rows" in warning.detail


def test_a_partition_attached_between_snapshots_is_no_rate(embedded_database: str) -> None:
    """events_5 arrives with 5,000 dead tuples of its own: the parent's dead tuples jump by
    5,000 between the snapshots, its rate stays the 100 rows deleted in them."""
    dsn = embedded_database
    execute(
        dsn,
        *EVENTS,
        "ANALYZE events",
        "CREATE TABLE events_5 (id int, at date, v int) WITH (autovacuum_enabled = off)",
        "INSERT INTO events_5 SELECT g, date '2027-01-02', g FROM generate_series(1, 6000) g",
        "DELETE FROM events_5 WHERE id <= 5000",
    )
    first = snap(dsn)
    execute(
        dsn,
        "ALTER TABLE events ATTACH PARTITION events_5 "
        "FOR VALUES FROM ('2027-01-01') TO ('2027-04-01')",
        "DELETE FROM events WHERE id <= 100",
    )
    later = snap(dsn)
    advice = advise(first, later)
    [status] = advice.partitioned
    assert status.partitions == 5
    assert status.dead == 5100
    assert status.dead_per_second is not None
    seconds = (later.taken_at - first.taken_at).total_seconds()
    assert status.dead_per_second * seconds == pytest.approx(100, abs=1)


def test_a_table_never_counted_says_so_and_what_its_thresholds_become(database: str) -> None:
    execute(
        database,
        "CREATE TABLE loaded (id int) WITH (autovacuum_enabled = off)",
        "INSERT INTO loaded SELECT generate_series(1, 20000)",
        "DELETE FROM loaded WHERE id <= 2000",
    )
    advice = advise(snap(database))
    found = [f for f in about(advice, "public.loaded") if f.question == "thresholds"]
    [finding] = found  # one finding: its analyze is told in it, not beside it
    assert finding.title.startswith("never vacuumed or analyzed, so its thresholds count 0 rows")
    assert "×" not in finding.title
    assert "reltuples is -1" in finding.detail
    assert (
        "Once its 18,000 live rows are counted, they become 3,650 dead tuples for a vacuum, "
        "4,600 inserted for a vacuum, 1,850 changed for an analyze." in finding.detail
    )
    [row] = [s for s in advice.tables if s.relation == "public.loaded"]
    assert row.never_counted
