"""One cost-driver matrix run on the local loop, then on a local Ray with 1 and with 2
``vacuumlab_pg`` slots: the wall time of each, the speed-up, the seconds per point, and how far
the measured durations shift when points run side by side.

    .venv/bin/python bench/ray_speedup.py --rows 100000 --dead 10,50 --indexes 0,1
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from vacuumlab.lab.cluster import RESOURCE, RayExecutor, load_ray
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.cost_driver import CostDriverConfig
from vacuumlab.store import Store
from vacuumlab.studies.cost_driver import CostDriverRun

DURATIONS = ("duration_stats_s", "duration_wall_s")


def one(store: Store, config: CostDriverConfig, target: Target, slots: int | None) -> int:
    run = CostDriverRun(config, target, store)
    if slots is not None:
        ray = load_ray()
        ray.init(num_cpus=os.cpu_count(), resources={RESOURCE: slots},
                 include_dashboard=False, log_to_driver=False, logging_level="ERROR")  # fmt: skip
        run.executor = RayExecutor()
    try:
        return run.execute()
    finally:
        if slots is not None:
            load_ray().shutdown()


def medians(store: Store, run_id: int) -> dict[str, float]:
    points = store.points(run_id)
    found = {}
    for name in DURATIONS:
        values = [float(v) for p in points if isinstance(v := p.metrics.get(name), int | float)]
        found[name] = statistics.median(values) if values else float("nan")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dead", default="10,50")
    parser.add_argument("--indexes", default="0,1")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    config = CostDriverConfig.from_preset(
        "quick", rows=args.rows, dead_pcts=tuple(int(d) for d in args.dead.split(",")),
        indexes=tuple(int(k) for k in args.indexes.split(",")), repeat=args.repeat,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="vacuumlab-ray-bench-") as place:
        os.environ["VACUUMLAB_HOME"] = place
        with (
            Store.open(Path(place) / "results.sqlite") as store,
            Sandbox.start(Path(place) / "sandbox") as sandbox,
        ):
            target = Target.of_sandbox(sandbox)
            rows = []
            for name, slots in (("local loop", None), ("ray, 1 slot", 1), ("ray, 2 slots", 2)):
                clock = time.monotonic()
                run_id = one(store, config, target, slots)
                wall = time.monotonic() - clock
                points = len(store.points(run_id))
                rows.append((name, wall, points, medians(store, run_id)))
    base_wall, base = rows[0][1], rows[0][3]
    print(f"cost-driver: {args.rows:,} rows, {rows[0][2]} points, on {os.cpu_count()} cores")
    head = ("executor", "wall s", "s/point", "speed-up", "median vacuum s", "shift",
            "median wall s", "shift")  # fmt: skip
    widths = (14, 8, 9, 10, 17, 8, 15, 8)
    print(
        f"{head[0]:<14}" + "".join(f"{h:>{w}}" for h, w in zip(head[1:], widths[1:], strict=True))
    )
    for name, wall, points, m in rows:
        shifts = [m[k] / base[k] - 1 if base[k] else float("nan") for k in DURATIONS]
        print(
            f"{name:<14}{wall:>8.1f}{wall / points:>9.1f}{base_wall / wall:>9.2f}×"
            f"{m['duration_stats_s']:>17.3f}{shifts[0]:>+8.0%}"
            f"{m['duration_wall_s']:>15.3f}{shifts[1]:>+8.0%}"
        )


if __name__ == "__main__":
    main()
