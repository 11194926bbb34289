"""What measuring costs: churn TPS under vacuumlab against bare pgbench, side by side.

Both run the study's own script on the same sandbox with the same clients. "vacuumlab" is a
real study step: per-transaction logging (-l), the 1 Hz sampler in its own session, and
--progress. "bare" is plain pgbench. The two alternate (bare, vacuumlab, bare, ...) so that
drift in the machine hits both alike, each on a fresh table with the same backlog and with
autovacuum off, so that vacuum timing does not differ between them. Prints each run's TPS and
the ratio of the medians (goal: at least 0.97).

    .venv/bin/python bench/churn_overhead.py [--seconds 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

from vacuumlab.pg import pgbench
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.churn import ChurnConfig, Step
from vacuumlab.store import Store
from vacuumlab.studies.churn import SCRIPT, ChurnRun, _create_table

NO_AUTOVACUUM = Step("autovacuum off", {"autovacuum": "off"})


def bare(sandbox: Sandbox, work: Path, seconds: int, clients: int, jobs: int) -> float:
    _create_table(sandbox.dsn, 100_000)
    script = work / "churn.sql"
    script.write_text(SCRIPT, encoding="utf-8")
    load = pgbench.Load(script=script, clients=clients, jobs=jobs, seconds=seconds)
    output = pgbench.run_subprocess(pgbench.command(sandbox.bin.exe("pgbench"), load, sandbox.dsn))
    tps = pgbench.parse_tps(output)
    assert tps is not None
    return tps


def measured(sandbox: Sandbox, store: Store, seconds: int, clients: int, jobs: int) -> float:
    config = replace(
        ChurnConfig.presets()["quick"], steps=(NO_AUTOVACUUM,), seconds=seconds, warmup=0,
        backlog=100_000, clients=clients, jobs=jobs,
    )  # fmt: skip
    run_id = ChurnRun(config, Target.of_sandbox(sandbox), store).execute()
    [point] = store.points(run_id)
    tps = point.metrics["tps"]
    assert isinstance(tps, int | float)
    return float(tps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    defaults = ChurnConfig.presets()["quick"]
    clients, jobs = defaults.clients, defaults.jobs
    results: dict[str, list[float]] = {"bare": [], "vacuumlab": []}
    with (
        tempfile.TemporaryDirectory(prefix="vacuumlab-bench-") as tmp,
        Sandbox.start(Path(tmp) / "sandbox", settings={"autovacuum": "off"}) as sandbox,
        Store.open(Path(tmp) / "results.sqlite") as store,
    ):
        for round_ in range(1, args.rounds + 1):
            results["bare"].append(bare(sandbox, Path(tmp), args.seconds, clients, jobs))
            results["vacuumlab"].append(measured(sandbox, store, args.seconds, clients, jobs))
            print(
                f"round {round_}: bare {results['bare'][-1]:,.0f} tps, "
                f"vacuumlab {results['vacuumlab'][-1]:,.0f} tps",
                flush=True,
            )
    bare_tps = statistics.median(results["bare"])
    lab_tps = statistics.median(results["vacuumlab"])
    print(f"{clients} clients, {jobs} threads, {args.seconds} s per run, {args.rounds} rounds")
    print(f"median tps: bare {bare_tps:,.0f}, vacuumlab {lab_tps:,.0f}")
    print(f"ratio vacuumlab / bare: {lab_tps / bare_tps:.3f} (goal >= 0.97)")


if __name__ == "__main__":
    main()
