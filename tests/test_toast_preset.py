"""The TOAST study's quick preset end to end, in a file of its own so that it runs beside the
rest of the TOAST tests (the suite gives each file to one process). Its wall time is a
benchmark's to measure, not a test's: under three processes on two cores it took 181 s."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from helpers.toast import arm, table
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.toast import ToastConfig
from vacuumlab.records.toast_spec import PARTS, vacuum_metric
from vacuumlab.store import Store
from vacuumlab.studies.toast import ToastRun


@pytest.mark.slow
def test_the_quick_preset_shows_the_published_findings(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    """The preset docs/commands.md describes: 50,000 rows of 4 kB, every storage, three arms.
    In line, the narrow UPDATE and the VACUUM are the slower; the overlapping arm waits.

    The VACUUMs are compared on their own CPU time (their reports' "system usage" line, heap
    and TOAST together): about a second each, their wall times swing with what the other test
    process runs, and once came out 1.02 s for main against 1.15 s for extended. Their CPU times
    were 1.01 s and 0.39 s in a run beside the whole suite."""
    target = Target(embedded_database, sandbox.bin.exe("pgbench"), "sandbox", sandbox)
    with Store.open(tmp_path / "results.sqlite") as store:
        ToastRun(ToastConfig.from_preset("quick"), target, store).execute()
        points = store.points(1)
    main, extended = table(points, "main"), table(points, "extended")
    assert main["update_s"] > 10 * extended["update_s"]
    cpu = vacuum_cpu(main), vacuum_cpu(extended)
    assert cpu[0] > 1.5 * cpu[1], f"VACUUM CPU: main {cpu[0]} s, extended {cpu[1]} s"
    assert arm(points, "overlapping")["lock_wait_table_s"] > 0.1


def vacuum_cpu(point: Mapping[str, Any]) -> float:
    """The plain VACUUM's CPU seconds, heap and TOAST relation together."""
    parts = [point[vacuum_metric("vacuum", part, "cpu_s")] for part in PARTS]
    return sum(float(p) for p in parts if p is not None)
