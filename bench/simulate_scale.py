"""The simulator against the number of tables: wall time of ``vacuumlab simulate``'s work (two
snapshots → inputs → 24 h of launcher and workers → the record), side by side for fleets of
growing size, and against the goal of under 1 s for 10,000 tables over 24 h.

The fleets are built as records, not on a server: the simulation is pure, and what it costs
depends on how many vacuums the window holds, not on where the snapshots came from. Each
fleet mixes tables as a production server has them: 0.2 % hot queues (200 dead tuples/s),
2 % busy tables (5/s), 20 % slow ones (0.2/s), the rest quiet, all of 10,000 rows on 100
pages with one index, under PostgreSQL 18's defaults. A last line runs every table busy, to
show what the cost follows: vacuums simulated.

Measured on the 2-core machine (medians of 3): 0.56 s for 10,000 tables (85,800 vacuums) and
0.05 s for 1,000, against 1.1 s and 0.1 s before the simulator's loop was rewritten on the same
machine and hour; with every one of 1,000 tables busy, 4 to 5 µs per vacuum simulated.

    .venv/bin/python bench/simulate_scale.py [--tables 1000 10000] [--hours 24] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta

from vacuumlab.model.forecast import forecast
from vacuumlab.model.knobs import stock_settings
from vacuumlab.records.simulation import Simulation
from vacuumlab.records.snapshot import Relation, ServerInfo, Setting, Snapshot, Table

GOAL_S = 1.0
T0 = datetime(2026, 1, 1, tzinfo=UTC)
SETTINGS = stock_settings(180000)
#: (share of the fleet, dead tuples per second)
MIX = ((0.002, 200.0), (0.02, 5.0), (0.2, 0.2))


def relation(oid: int, dead: int) -> Relation:
    return Relation.model_construct(
        oid=oid, schema_name="public", name=f"t{oid}", kind="r", toast_of=None,
        reltuples=10_000.0, relpages=100, relallvisible=100, relallfrozen=0,
        n_live_tup=10_000, n_dead_tup=dead, n_ins_since_vacuum=0, n_mod_since_analyze=dead,
        n_tup_ins=10_000, n_tup_upd=dead, n_tup_del=0, n_tup_hot_upd=0, n_tup_newpage_upd=0,
        last_vacuum=None, last_autovacuum=None, last_analyze=None, last_autoanalyze=None,
        vacuum_count=0, autovacuum_count=0, analyze_count=0, autoanalyze_count=0,
        total_vacuum_time_ms=0.0, total_autovacuum_time_ms=0.0, total_analyze_time_ms=0.0,
        total_autoanalyze_time_ms=0.0, heap_bytes=100 * 8192, index_bytes=30 * 8192,
        toast_bytes=None, n_indexes=1, reloptions={}, frozenxid_age=1000, minmxid_age=0,
    )  # fmt: skip


def rate_of(index: int, count: int, *, all_busy: bool) -> float:
    if all_busy:
        return 5.0
    edge = 0.0
    for share, rate in MIX:
        edge += share * count
        if index < edge:
            return rate
    return 0.0


def snapshots(count: int, *, all_busy: bool = False) -> tuple[Snapshot, Snapshot]:
    server = ServerInfo(
        version_num=180001, version="PostgreSQL 18.1", database="app", user="postgres",
        is_superuser=True, in_recovery=False, block_size=8192, can_read_all_stats=True,
        extensions=frozenset(), columns=frozenset(),
    )  # fmt: skip
    settings = [
        Setting(
            name=k,
            setting=v,
            unit=None,
            vartype="real",
            source="default",
            context="sighup",
            pending_restart=False,
        )
        for k, v in SETTINGS.items()
    ]
    first, later = [], []
    for i in range(count):
        rate = rate_of(i, count, all_busy=all_busy)
        first.append(Table.model_construct(heap=relation(10_000 + i, 0), toast=None))
        later.append(Table.model_construct(heap=relation(10_000 + i, round(rate * 60)), toast=None))

    def snap(tables: list[Table], seconds: float) -> Snapshot:
        return Snapshot(
            vacuumlab_version="bench", taken_at=T0 + timedelta(seconds=seconds), server=server,
            settings=settings, tables=tables,
        )  # fmt: skip

    return snap(first, 0), snap(later, 60)


def measure(count: int, hours: float, repeat: int, *, all_busy: bool = False) -> tuple[float, int]:
    before, after = snapshots(count, all_busy=all_busy)
    times = []
    sim: Simulation | None = None
    for _ in range(repeat):
        start = time.perf_counter()
        sim = forecast(before, after, hours=hours)
        times.append(time.perf_counter() - start)
    assert sim is not None
    return statistics.median(times), sum(r.vacuums for r in sim.relations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'tables':>8} {'hours':>6} {'vacuums':>9} {'median s':>9}  goal")
    for count in args.tables:
        seconds, vacuums = measure(count, args.hours, args.repeat)
        verdict = f"{seconds / GOAL_S:.2f}× the {GOAL_S:g} s goal" if count >= 10_000 else ""
        print(f"{count:>8} {args.hours:>6g} {vacuums:>9,} {seconds:>9.3f}  {verdict}")
    count = args.tables[0]
    seconds, vacuums = measure(count, args.hours, 1, all_busy=True)
    print(
        f"{count:>8} {args.hours:>6g} {vacuums:>9,} {seconds:>9.3f}  every table busy: "
        f"{seconds / max(vacuums, 1) * 1e6:.0f} µs per vacuum simulated"
    )


if __name__ == "__main__":
    main()
