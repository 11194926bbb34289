"""Scenarios: real workloads on the embedded server, each with the findings that must appear
and those that must not (false positives), declared as data (scenarios/expect.py). A fresh
database per scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.db import execute, xmin_holder
from scenarios.expect import (
    HORIZON_BLAME,
    IDLE_TIMEOUT,
    NO_FILLFACTOR,
    NO_IDLE_TIMEOUT,
    SERVER,
    Expect,
    Match,
    Top,
    Verdict,
    no_blame,
)
from scenarios.workloads import advise_over, pgbench_init, pgbench_load
from vacuumlab.pg.sandbox import Sandbox

STEADY_OLTP = Expect(
    may=(),
    must_not=(NO_IDLE_TIMEOUT, no_blame(), NO_FILLFACTOR),
)


@pytest.mark.slow
def test_steady_oltp(embedded_database: str, sandbox: Sandbox, verdict: Verdict) -> None:
    """pgbench TPC-B (scale 20, 4 clients), advised over 35 s under production naptime.
    Must not: any finding at warning or above, a timeout for sessions idle in a transaction
    (pgbench's are so between statements), horizon blame, a fillfactor rewrite."""
    pgbench_init(sandbox, embedded_database, scale=20)
    with pgbench_load(sandbox, embedded_database, seconds=45):
        advice, _ = advise_over(embedded_database, interval=35)
    verdict(advice, STEADY_OLTP)


CHURN = "UPDATE churn SET n = n + 1 WHERE id = 1 + (random() * 999)::int;\n"
CHURN_TABLE = (
    "CREATE TABLE churn (id int PRIMARY KEY, n int NOT NULL)",
    "INSERT INTO churn SELECT g, 0 FROM generate_series(1, 1000) g",
    "ANALYZE churn",
)


def idle_holder(pid: int) -> Expect:
    held = Match("the holder at warning", "horizon", SERVER, evidence={"pid": pid})
    timeout = Match("the idle-session timeout", "horizon", SERVER, setting=IDLE_TIMEOUT)
    return Expect(
        must=(
            held,
            timeout,
            Match(
                "churn's dead tuples blamed on the horizon",
                "thresholds",
                "public.churn",
                title=HORIZON_BLAME,
                at_least="info",
            ),
        ),
        top=(Top(timeout, needed=True),),
    )


@pytest.mark.slow
@pytest.mark.usefixtures("short_naptime")
def test_abandoned_idle_in_transaction(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """A session idle in a transaction holds the horizon across the interval while a table
    churns. Must: the horizon finding at warning or above, the timeout recommended (once, at
    the top), the churning table's dead tuples blamed on the horizon."""
    execute(embedded_database, *CHURN_TABLE)
    script = tmp_path / "churn.sql"
    script.write_text(CHURN)
    with (
        xmin_holder(embedded_database) as pid,
        pgbench_load(sandbox, embedded_database, 40, clients=2, script=script),
    ):
        advice, _ = advise_over(embedded_database, interval=30)
    outcome = verdict(advice, idle_holder(pid))
    assert sum(IDLE_TIMEOUT in line for line in outcome.top_three) == 1


FRESH_BULK_LOAD = Expect(
    # True: the UPDATE left every old version dead, half the table, until a vacuum.
    may=(Match("half the table dead", "bloat", "public.bulk", title="estimated bloat: 50%"),),
    must=(
        Match(
            "never vacuumed or analyzed: its thresholds count 0 rows, not 1,000× its threshold",
            "thresholds",
            "public.bulk",
            title="never vacuumed or analyzed, so its thresholds count 0 rows",
            detail="Once its 200,000 live rows are counted, they become",
            at_least="info",
        ),
    ),
    must_not=(
        NO_FILLFACTOR,
        Match(
            "no scale factor while reltuples is -1",
            relation="public.bulk",
            setting="autovacuum_vacuum_scale_factor",
            at_least="info",
        ),
    ),
)


@pytest.mark.slow
def test_fresh_bulk_load(embedded_database: str, verdict: Verdict) -> None:
    """A table loaded by one INSERT, then one UPDATE of every row. Must: the table seen as
    never analysed. May: its dead half as bloat (true until a vacuum). Must not: a fillfactor
    rewrite (one pass of updates says nothing of the steady pattern), scale-factor advice for a
    table whose reltuples is still -1."""
    execute(
        embedded_database,
        "CREATE TABLE bulk (id int PRIMARY KEY, v int NOT NULL, pad text NOT NULL)",
        "INSERT INTO bulk SELECT g, 0, repeat('x', 60) FROM generate_series(1, 200000) g",
        "UPDATE bulk SET v = v + 1",
    )
    advice, later = advise_over(embedded_database, interval=5)
    unknown = {t.heap.qualified_name for t in later.tables if t.heap.reltuples < 0}
    assert "public.bulk" in unknown  # the scenario is the one it claims: never analysed yet
    verdict(advice, FRESH_BULK_LOAD)


PARTITIONED = (
    "CREATE TABLE events (id int NOT NULL, at date NOT NULL, v int NOT NULL) "
    "PARTITION BY RANGE (at)",
    *(
        f"CREATE TABLE events_{q} PARTITION OF events FOR VALUES FROM "
        f"('2026-{3 * q - 2:02d}-01') TO ('{2026 + q // 4}-{(3 * q) % 12 + 1:02d}-01')"
        + (" WITH (autovacuum_enabled = off)" if q == 4 else "")
        for q in (1, 2, 3, 4)
    ),
    "INSERT INTO events SELECT g, date '2026-01-01' + g % 365, 0 FROM generate_series(1, 200000) g",
)
#: Updates through the partitioned table of rows in its first quarter.
PARTITION_CHURN = (
    "\\set id random(1, 200000)\n"
    "UPDATE events SET v = v + 1 WHERE id = :id AND at < '2026-04-01';\n"
)
_OTHER_QUESTIONS = ("timing", "workers", "bloat", "hot", "toast", "wraparound", "horizon")
_EVENTS_4_ON = Match(
    "autovacuum back on for the partition that has it off",
    "thresholds",
    "public.events_4",
    setting="autovacuum_enabled",
    at_least="info",
)
PARTITIONED_NEVER_ANALYZED = Expect(
    top=(Top(_EVENTS_4_ON, needed=True),),
    must=(
        Match(
            "the partitioned table's missing statistics, with ANALYZE",
            "thresholds",
            "public.events",
            # The rows are the partitions' live-row counts, which an autovacuum beside the
            # updates can leave one or two short of 200,000: they are checked below.
            title="partitioned table never analyzed: ",
            detail='ANALYZE "public"."events";',
        ),
        Match(
            "the partition with autovacuum off keeps its own finding",
            "thresholds",
            "public.events_4",
            title="autovacuum is off for it",
            at_least="info",
        ),
    ),
    must_not=(
        NO_FILLFACTOR,
        *(
            Match(f"no {q} finding on the partitioned table", q, "public.events", at_least="info")
            for q in _OTHER_QUESTIONS
        ),
        Match(
            "no storage parameter on the partitioned table (it takes none)",
            relation="public.events",
            setting="autovacuum_vacuum_scale_factor",
            at_least="info",
        ),
    ),
)


@pytest.mark.slow
def test_partitioned_table_never_analyzed(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """A table partitioned by range into four, 200,000 rows loaded and never analyzed by
    anyone, its first quarter updated through it; its last partition has autovacuum off.
    Must: the partitioned table's missing statistics, with ANALYZE as the fix (autovacuum
    never analyzes a partitioned table); the last partition's own finding under its own name.
    Must not: any other question's finding, or a storage parameter, on the partitioned table
    (it holds no rows and takes no autovacuum parameters)."""
    execute(embedded_database, *PARTITIONED)
    script = tmp_path / "partition.sql"
    script.write_text(PARTITION_CHURN)
    with pgbench_load(sandbox, embedded_database, 30, clients=2, script=script):
        advice, _ = advise_over(embedded_database, interval=15)
    verdict(advice, PARTITIONED_NEVER_ANALYZED)
    [status] = advice.partitioned
    assert (status.relation, status.partitions) == ("public.events", 4)
    assert abs(status.rows - 200_000) <= 200, status.rows  # live-row counts: an estimate
    grouped = {t.relation for t in advice.tables if t.partition_of == "public.events"}
    assert {f"public.events_{q}" for q in (1, 2, 3, 4)} <= grouped
