"""The TOAST study's quick preset end to end, in a file of its own so that it runs beside the
rest of the TOAST tests (the suite gives each file to one process). Its wall time is a
benchmark's to measure, not a test's: under three processes on two cores it took 181 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.toast import arm, table
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.toast import ToastConfig
from vacuumlab.store import Store
from vacuumlab.studies.toast import ToastRun


@pytest.mark.slow
def test_the_quick_preset_shows_the_published_findings(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    """The preset docs/commands.md describes: 50,000 rows of 4 kB, every storage, three arms.
    In line, the narrow UPDATE and the VACUUM are the slower; the overlapping arm waits."""
    target = Target(embedded_database, sandbox.bin.exe("pgbench"), "sandbox", sandbox)
    with Store.open(tmp_path / "results.sqlite") as store:
        ToastRun(ToastConfig.from_preset("quick"), target, store).execute()
        points = store.points(1)
    main, extended = table(points, "main"), table(points, "extended")
    assert main["update_s"] > 10 * extended["update_s"]
    assert main["vacuum_s"] > 1.5 * extended["vacuum_s"]
    assert arm(points, "overlapping")["lock_wait_table_s"] > 0.1
