"""``vacuumlab compare``: runs of one study side by side, refused when their parameters differ,
and a cost-driver matrix on the embedded 18 against the PostgreSQL of VACUUMLAB_TEST_DSN."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from helpers.cli import run_cli
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.cost_driver import CostDriverConfig
from vacuumlab.report.compare import Side, compare
from vacuumlab.stats.significance import paired
from vacuumlab.store import Store
from vacuumlab.studies.cost_driver import CostDriverRun

#: The machine's PostgreSQL 15 (Debian's layout), or where VACUUMLAB_TEST_PG15_BIN says.
PG15_BIN = Path(os.environ.get("VACUUMLAB_TEST_PG15_BIN", "/usr/lib/postgresql/15/bin"))
MATRIX = dict(rows=20_000, dead_pcts=(10, 50), indexes=(0, 1), distributions=("compact",), repeat=1)


def test_runs_with_other_parameters_are_refused(store: Store) -> None:
    a = store.create_run("cost-driver", {"rows": 20_000, "target": "sandbox"},
                         server_version="18.6", settings={})  # fmt: skip
    b = store.create_run("cost-driver", {"rows": 50_000, "target": "server"},
                         server_version="15.20", settings={})  # fmt: skip
    c = store.create_run("toast", {"rows": 20_000}, server_version="18.6", settings={})
    side = [Side(str(i), store.run(i), []) for i in (a, b, c)]
    with pytest.raises(VacuumlabError, match=r"differ in rows \(rows: 20000 against 50000\)"):
        compare(side[:2])
    with pytest.raises(VacuumlabError, match="compare runs of one study"):
        compare([side[0], side[2]])
    result = run_cli("compare", str(a), str(b), "--store", str(store.path), "--format", "md")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_shift_beyond_the_scatter_is_real_and_noise_is_not(store: Store) -> None:
    """The paired test: a 20 % longer duration at every point is real; a difference that
    changes sign from point to point is noise; equal counts are identical."""
    scale = [1.0, 2.0, 4.0, 8.0, 16.0]
    assert paired([v * 1.2 for v in scale], scale).verdict == "significant"
    jitter = [1.05, 1.9, 4.3, 7.6, 16.4]
    assert paired(jitter, scale).verdict == "within noise"
    assert paired(scale, scale).text == "identical at every point"
    when = datetime.now(UTC)
    for version, factor in (("18.6", 1.0), ("15.20", 1.5)):
        run = store.create_run("cost-driver", {"rows": 1}, server_version=version, settings={})
        for i, v in enumerate(scale):
            metrics = {"duration_s": v * factor, "dead_tuples": 100 * i}
            store.record_point(run, {"i": i}, 0, metrics, started_at=when, ended_at=when)
    c = compare([Side(str(i), store.run(i), store.points(i)) for i in (1, 2)])
    real = {r.metric: r.real[1] for r in c.rows}
    assert real == {"duration_s": True, "dead_tuples": False}
    assert [d.what for d in c.differences] == ["server"]


@pytest.mark.slow
@pytest.mark.skipif(not PG15_BIN.is_dir(), reason=f"no PostgreSQL 15 in {PG15_BIN}")
def test_cost_driver_on_18_and_15_side_by_side(
    sandbox: Sandbox, sandbox_root: Path, tmp_path: Path
) -> None:
    """The same matrix on the embedded 18 and on a sandbox of the machine's 15 (its bin
    directory, as ``--pg-bin`` gives it: the system server's own autovacuum may be off)."""
    config = CostDriverConfig.from_preset("quick", **MATRIX)  # type: ignore[arg-type]
    on_18, on_15 = tmp_path / "18.sqlite", tmp_path / "15.sqlite"
    with Store.open(on_18) as store:
        CostDriverRun(config, Target.of_sandbox(sandbox), store).execute()
    with (
        Store.open(on_15) as store,
        Sandbox.start(sandbox_root / "pg15", pg_bin=PG15_BIN) as fifteen,
    ):
        CostDriverRun(config, Target.of_sandbox(fifteen), store).execute()
    runs = [f"{on_18}:1", f"{on_15}:1"]
    md = run_cli("compare", *runs, "--format", "md")
    assert md.returncode == 0, md.stderr
    data = json.loads(run_cli("compare", *runs, "--format", "json").stdout)
    [server_row] = [d for d in data["differences"] if d["what"] == "server"]
    assert server_row["values"][0].startswith("PostgreSQL 18.")
    assert server_row["values"][1].startswith("PostgreSQL 15.")
    assert data["shared_points"] == 4
    dead = next(m for m in data["metrics"] if m["metric"] == "dead_tuples")
    assert dead["real"] == [False, False]  # the same rows die on both
    assert "| server | PostgreSQL 18." in md.stdout
    html = run_cli("compare", *runs, "--output", str(tmp_path / "c.html"))
    assert html.returncode == 0, html.stderr
    assert "side by side" in (tmp_path / "c.html").read_text(encoding="utf-8")
