"""The tuner against a full grid, on the churn study's queue.

1. **Capture**: the churn study's queue (a backlog of 50,000 rows; each transaction inserts a
   row, takes the oldest with FOR UPDATE SKIP LOCKED, updates and deletes it) driven by
   pgbench at a fixed rate on a sandbox, captured as a profile (``capture``) while it runs.
2. **Grid**: 3 knobs × 3 levels, 27 trials, each one replay of the profile as the tuner
   measures a trial (``CustomRun.measure_settings``: tables built afresh, the captured
   settings plus the trial's own); then the best, the median and the worst grid points
   measured twice more, for the grid's own repeat noise. Every measured point is appended to
   ``bench/data/tune_grid.json`` as it ends: an interrupted grid resumes where it stopped,
   and the tuner can be scored again without running the grid.
3. **Score**: the tuner over the grid's levels (``--space`` with ``levels``), its measured
   trials answered from the file (a repeated point's measurements in turn), for 3 seeds:
   how many trials it took to come within 5 % of the grid's best dead-tuple peak (the goal:
   at most 9), and where the simulator's pick alone ranks among the 27.

    .venv/bin/python bench/tune_grid.py [--score-only] [--seconds 45] [--warmup 5]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from vacuumlab.collect.capture import capture
from vacuumlab.pg import pgbench
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.custom import CustomConfig
from vacuumlab.records.profile import Profile, load_profile
from vacuumlab.records.tune import Dimension, TrialPoint, TuneConfig
from vacuumlab.records.tune_spec import VERDICT_STAGE, VERDICT_WINNER, kind
from vacuumlab.store import Store
from vacuumlab.studies.base import Measured, Planned
from vacuumlab.studies.churn import SCRIPT, _create_table
from vacuumlab.studies.custom import CustomRun
from vacuumlab.studies.tune.run import TuneRun
from vacuumlab.studies.tune.simulated import Predictor, first_stage

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PROFILE = DATA / "tune_grid_profile.json"
GRID = DATA / "tune_grid.json"
TABLE = "bencher"
#: The grid: naptime in s, the table's scale factor, its cost delay in ms.
LEVELS: dict[str, tuple[float, ...]] = {
    "server.autovacuum_naptime": (10, 30, 60),
    f"{TABLE}.autovacuum_vacuum_scale_factor": (0.01, 0.05, 0.2),
    f"{TABLE}.autovacuum_vacuum_cost_delay": (0, 2, 20),
}
RATE_TPS = 600
BACKLOG = 50_000
SCALE = 0.5
OBJECTIVE = "dead_tuples_peak"
KEPT = ("dead_tuples_peak", "latency_p99_ms", "latency_mean_ms", "tps", "autovacuum_count")


def capture_profile(home: Path, seconds: int) -> Profile:
    """The churn queue under a fixed rate, captured for ``seconds`` after 10 s of load."""
    with Sandbox.start(home / "capture") as sandbox:
        _create_table(sandbox.dsn, BACKLOG)
        script = home / "churn.sql"
        script.write_text(SCRIPT, encoding="utf-8")
        load = pgbench.Load(script=script, clients=4, jobs=2, seconds=seconds + 20,
                            rate=RATE_TPS)  # fmt: skip
        command = pgbench.command(sandbox.bin.exe("pgbench"), load, sandbox.dsn)
        with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            time.sleep(10)
            profile = capture(sandbox.dsn, [f"vacuumlab.{TABLE}"], seconds)
    return profile


def grid_points() -> list[dict[str, str]]:
    keys = list(LEVELS)
    return [
        {k: Dimension(k, None, 0, 1).value(v) for k, v in zip(keys, combo, strict=True)}
        for combo in itertools.product(*LEVELS.values())
    ]


def label(values: dict[str, str]) -> str:
    return ",".join(f"{k.split('.', 1)[1]}={v}" for k, v in sorted(values.items()))


def measure_grid(profile: Profile, home: Path, seconds: int, warmup: int) -> dict[str, Any]:
    results: dict[str, Any] = json.loads(GRID.read_text()) if GRID.exists() else {}
    results.setdefault("points", {})
    results.update(seconds=seconds, warmup=warmup, scale=SCALE, levels=LEVELS)
    with Sandbox.start(home / "grid") as sandbox, Store.open(home / "grid.sqlite") as store:
        config = CustomConfig.from_preset(
            "quick", profile=profile.model_dump(mode="json"), seconds=seconds, warmup=warmup,
            scale=SCALE,
        )  # fmt: skip
        target = Target.of_sandbox(sandbox)
        run_id = store.create_run("custom", config.params(), server_version="", settings={})
        run = CustomRun(config, target, store, run_id=run_id)
        # The profile was captured on a stock sandbox: its settings are this sandbox's own.
        captured: dict[str, str] = {}
        plan = [(values, 0) for values in grid_points()]

        def done() -> dict[str, int]:
            return {k: len(v) for k, v in results["points"].items()}

        for values, _ in plan:
            key = label(values)
            if done().get(key, 0) >= 1:
                continue
            _measure(run, results, values, captured, f"grid-{len(done())}")
        ranked = sorted(results["points"], key=lambda k: _mean(results["points"][k]))
        for key in (ranked[0], ranked[len(ranked) // 2], ranked[-1]):
            values = next(v for v in grid_points() if label(v) == key)
            while done()[key] < 3:
                _measure(run, results, values, captured, f"repeat-{key}-{done()[key]}")
        target.restore()
    return results


def _measure(run: CustomRun, results: dict[str, Any], values: dict[str, str],
             captured: dict[str, str], name: str) -> None:  # fmt: skip
    server = captured | {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith("server")}
    table = {k.split(".", 1)[1]: v for k, v in values.items() if not k.startswith("server")}
    started = time.monotonic()
    measured: Measured = run.measure_settings(name, server, per_table={TABLE: table})
    kept = {m: measured.metrics.get(m) for m in KEPT}
    key = label(values)
    results["points"].setdefault(key, []).append(kept)
    GRID.write_text(json.dumps(results, indent=1, sort_keys=True))
    print(f"{key}: dead peak {kept[OBJECTIVE]}, p99 {kept['latency_p99_ms']} ms "
          f"({time.monotonic() - started:.0f} s)", flush=True)  # fmt: skip


def _mean(measurements: list[dict[str, Any]]) -> float:
    return statistics.fmean(float(m[OBJECTIVE]) for m in measurements)


class GridTune(TuneRun):
    """The tuner with each measured trial answered from the grid's file."""

    grid: ClassVar[dict[str, list[dict[str, Any]]]] = {}
    seen: ClassVar[dict[str, int]] = {}

    def measure_point(self, planned: Planned[TrialPoint]) -> Measured:
        settings = planned.point.settings
        values = {**{f"server.{k}": v for k, v in settings.server.items()}}
        values |= {f"{t}.{k}": v for t, o in settings.tables.items() for k, v in o.items()}
        # The current settings are the captured ones: naptime 60, scale factor 0.2, 2 ms.
        full = {"server.autovacuum_naptime": "60", f"{TABLE}.autovacuum_vacuum_scale_factor":
                "0.2", f"{TABLE}.autovacuum_vacuum_cost_delay": "2"}  # fmt: skip
        full |= {k: _snap(k, v) for k, v in values.items() if k in LEVELS}
        key = label(full)
        found = self.grid[key]
        n = self.seen.get(key, 0)
        self.seen[key] = n + 1
        return Measured(dict(found[n % len(found)]) | {"grid_key": key})


def _snap(key: str, value: str) -> str:
    """A value off the grid (advise's) at the nearest level."""
    level = min(LEVELS[key], key=lambda v: abs(v - float(value)))
    return Dimension(key, None, 0, 1).value(level)


def score(profile: Profile, results: dict[str, Any], home: Path) -> None:
    grid = results["points"]
    means = {k: _mean(v) for k, v in grid.items()}
    best_key = min(means, key=means.__getitem__)
    best = means[best_key]
    ranked = sorted(means, key=means.__getitem__)
    print(
        f"grid: {len(grid)} points, best {best_key} at {best:,.0f}; worst {means[ranked[-1]]:,.0f}"
    )
    for key, values in grid.items():
        if len(values) > 1:
            peaks = [float(v[OBJECTIVE]) for v in values]
            spread = (max(peaks) - min(peaks)) / statistics.fmean(peaks)
            print(f"  repeat noise {key}: {peaks} (range {spread:.1%} of the mean)")
    window = results["warmup"] + results["seconds"]
    space = tuple(
        Dimension(k.split(".", 1)[1], None if k.startswith("server") else TABLE, min(v), max(v),
                  levels=tuple(float(x) for x in v))
        for k, v in LEVELS.items()
    )  # fmt: skip
    stage = first_stage(Predictor(profile, SCALE, window), space, {}, candidates=500, seed=0)
    pick = {k: _snap(k, v) for k, v in stage.best.values.items()}
    pick_key = label(pick)
    print(f"stage 1 alone: the simulator's pick {pick_key} measured {means[pick_key]:,.0f} "
          f"({means[pick_key] / best - 1:+.1%} against the grid's best), rank "
          f"{ranked.index(pick_key) + 1} of {len(ranked)} "
          f"(predicted {stage.best.prediction.dead_peak:,.0f})")  # fmt: skip
    GridTune.grid = grid
    with Sandbox.start(home / "score") as sandbox:
        for seed in (0, 1, 2):
            GridTune.seen = {}
            with Store.open(home / f"score-{seed}.sqlite") as store:
                config = TuneConfig.from_preset(
                    "quick", profile=profile.model_dump(mode="json"), space=space, trials=9,
                    confirm=2, candidates=500, seed=seed, seconds=results["seconds"],
                    warmup=results["warmup"], scale=SCALE,
                )  # fmt: skip
                run = GridTune(config, Target.of_sandbox(sandbox), store)
                run_id = run.execute()
                points = store.points(run_id)
            firsts = [p for p in points if kind(p.params) == "trial" and p.repetition == 0]
            firsts.sort(key=lambda p: p.params["trial"])
            near = [means[str(p.metrics["grid_key"])] <= best * 1.05 for p in firsts]
            within = next((n for n, ok in enumerate(near, 1) if ok), None)
            [verdict] = [p for p in points if kind(p.params) == VERDICT_STAGE]
            winner = verdict.metrics.get(VERDICT_WINNER)
            won = next((p for p in firsts if p.params["trial"] == winner), None)
            won_key = str(won.metrics["grid_key"]) if won is not None else "none"
            print(f"seed {seed}: within 5 % of the grid's best after {within} measured trials "
                  f"(of {len(firsts)}); verdict winner {won_key} "
                  f"({means.get(won_key, float('nan')) / best - 1:+.1%})", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--score-only", action="store_true")
    parser.add_argument("--seconds", type=int, default=45)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--capture-seconds", type=int, default=30)
    args = parser.parse_args()
    DATA.mkdir(exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="vacuumlab-tune-grid-"))
    if not PROFILE.exists():
        profile = capture_profile(home, args.capture_seconds)
        PROFILE.write_text(profile.dump_json())
    profile = load_profile(PROFILE)
    if args.score_only:
        results = json.loads(GRID.read_text())
    else:
        results = measure_grid(profile, home, args.seconds, args.warmup)
    score(profile, results, home)


if __name__ == "__main__":
    main()
