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
    update_script,
    write_script,
)
from vacuumlab.advise import advise
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Advice

TABLE = "events"
ROWS = 100_000  # about 1,300 pages: ANALYZE reads them all (fewer than 300 × its target)
#: A throttled ANALYZE, as autoanalyze is (autovacuum_vacuum_cost_delay): about 8 s for the
#: table's pages at one cost unit each (vacuum_delay_point() in vacuum.c, called per block by
#: acquire_sample_rows() in analyze.c).
SLOW_ANALYZE = (
    "SET vacuum_cost_limit = 1",
    "SET vacuum_cost_delay = 6",
    f"ANALYZE {TABLE}",
)
INTERVAL = 16.0
ANALYZE_AT = 2.0


def _dead_per_second(advice: Advice) -> float:
    table = next(t for t in advice.tables if t.relation == f"public.{TABLE}")
    assert table.dead_per_second is not None
    return table.dead_per_second


def _analyzed(dsn: str, done: list[float]) -> None:
    time.sleep(ANALYZE_AT)
    started = time.monotonic()
    execute_all(dsn, *SLOW_ANALYZE)
    done.append(time.monotonic() - started)


@pytest.mark.slow
def test_analyze_inside_the_interval(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    """A steady load of non-HOT updates on a table autovacuum leaves alone, measured over an
    interval without an ANALYZE, then over one with a throttled manual ANALYZE in its middle.
    The ANALYZE overwrites n_dead_tup with what it counted as it read the pages, and misses
    the updates made behind it while it read (pgstat_report_analyze() in pgstat_relation.c):
    the growth of n_dead_tup across it is short by about half its duration's worth. The rate
    the advice reports must stay within 20 % of the one without the ANALYZE."""
    dsn = embedded_database
    load_table(dsn, TABLE, ROWS, options="autovacuum_enabled = off", index_n=True)
    script = write_script(tmp_path, TABLE, update_script(TABLE, ROWS))
    took: list[float] = []
    with pgbench_load(sandbox, dsn, int(2 * INTERVAL + 6), clients=2, script=script, rate=400):
        time.sleep(2.0)  # the clients connected and the load steady
        plain = advise(*snapshots(dsn, INTERVAL))
        analyze = threading.Thread(target=_analyzed, args=(dsn, took))
        analyze.start()
        first, later = snapshots(dsn, INTERVAL)
        analyze.join()
    [seconds] = took
    assert seconds < INTERVAL - ANALYZE_AT  # it ended inside the interval
    before = next(t.heap for t in first.tables if t.heap.name == TABLE)
    after = next(t.heap for t in later.tables if t.heap.name == TABLE)
    assert (after.analyze_count or 0) == (before.analyze_count or 0) + 1
    assert (after.vacuum_count, after.autovacuum_count) == (
        before.vacuum_count,
        before.autovacuum_count,
    )
    without, across = _dead_per_second(plain), _dead_per_second(advise(first, later))
    assert without > 100, without
    assert across == pytest.approx(without, rel=0.2), (without, across, took)
