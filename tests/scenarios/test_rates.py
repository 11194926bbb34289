"""Scenarios of the rates the advice is built on: a dead-tuple rate taken across an ANALYZE."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from scenarios.workloads import (
    execute_all,
    load_table,
    pgbench_load,
    snapshots,
    write_script,
)
from vacuumlab.advise import advise
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Advice

ROWS = 100_000  # about 1,300 pages: ANALYZE reads them all (fewer than 300 × its target)
#: Two tables under one load: every transaction updates the same row of each, so the one
#: without an ANALYZE measures, over the same interval, the rate the other must show.
TABLES = ("analyzed", "steady")
SCRIPT = "\\set id random(1, {rows})\n" + "".join(
    f"UPDATE {t} SET n = n + 1 WHERE id = :id;\n" for t in TABLES
)
#: A throttled ANALYZE, as autoanalyze is (autovacuum_vacuum_cost_delay): about 11 s for the
#: table's pages at one cost unit each (vacuum_delay_point() in vacuum.c, called per block by
#: acquire_sample_rows() in analyze.c).
SLOW_ANALYZE = ("SET vacuum_cost_limit = 1", "SET vacuum_cost_delay = 8", "ANALYZE analyzed")
INTERVAL = 16.0
ANALYZE_AT = 1.5


def _dead_per_second(advice: Advice, table: str) -> float:
    found = next(t for t in advice.tables if t.relation == f"public.{table}")
    assert found.dead_per_second is not None
    return found.dead_per_second


def _analyzed(dsn: str, done: list[float]) -> None:
    time.sleep(ANALYZE_AT)
    started = time.monotonic()
    execute_all(dsn, *SLOW_ANALYZE)
    done.append(time.monotonic() - started)


@pytest.mark.slow
def test_analyze_inside_the_interval(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    """A steady load of non-HOT updates on two like tables autovacuum leaves alone, and a
    throttled manual ANALYZE of one of them in the middle of the advice's interval. The
    ANALYZE overwrites n_dead_tup with what it counted as it read the pages, and misses the
    updates made behind it while it read (pgstat_report_analyze() in pgstat_relation.c): the
    growth of n_dead_tup across it is short by about half its duration's worth. The rate the
    advice reports for it must stay within 20 % of the other's, measured over the same load
    without the ANALYZE."""
    dsn = embedded_database
    for table in TABLES:
        load_table(dsn, table, ROWS, options="autovacuum_enabled = off", index_n=True)
    script = write_script(tmp_path, "twins", SCRIPT.format(rows=ROWS))
    took: list[float] = []
    with pgbench_load(sandbox, dsn, int(INTERVAL + 6), clients=2, script=script, rate=200):
        time.sleep(2.0)  # the clients connected and the load steady
        analyze = threading.Thread(target=_analyzed, args=(dsn, took))
        analyze.start()
        first, later = snapshots(dsn, INTERVAL)
        analyze.join()
    [seconds] = took
    assert seconds < INTERVAL - ANALYZE_AT  # it ended inside the interval
    before, after = (
        next(t.heap for t in s.tables if t.heap.name == "analyzed") for s in (first, later)
    )
    assert (after.analyze_count or 0) == (before.analyze_count or 0) + 1
    assert (after.vacuum_count, after.autovacuum_count) == (
        before.vacuum_count,
        before.autovacuum_count,
    )
    advice = advise(first, later)
    without, across = (_dead_per_second(advice, t) for t in ("steady", "analyzed"))
    assert without > 50, without
    assert across == pytest.approx(without, rel=0.2), (without, across, seconds)
