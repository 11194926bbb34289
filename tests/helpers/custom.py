"""A custom-study run built in the store without a server: a one-table profile and one
recorded step per ``recorded``, with the replayed rates beside the captured ones."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from vacuumlab.records.custom import CustomConfig
from vacuumlab.records.custom_spec import STUDY, rate_metric
from vacuumlab.records.profile import (
    CapturedTable,
    Column,
    ColumnStats,
    Profile,
    Rates,
    Shape,
)
from vacuumlab.store import Store

#: Per second: what the profile captured and what the replay did, by counter.
RATES = {"inserts": (5.0, 5.0), "updates": (5.0, 4.8), "hot_updates": (0.0, 0.0),
         "deletes": (5.0, 5.1), "dead_tuples": (0.0, 1.0)}  # fmt: skip


def tiny_profile() -> Profile:
    stats = ColumnStats(null_frac=0.0, avg_width=8, n_distinct=-1, correlation=1.0)
    shape = Shape(
        schema_name="app", name="jobs", rows=10, pages=1, heap_bytes=8192,
        columns=[Column(name="id", type="bigint", not_null=True, storage="plain", stats=stats)],
    )  # fmt: skip
    rates = Rates(**{name: captured for name, (captured, _) in RATES.items()})
    return Profile(
        vacuumlab_version="test", captured_at=datetime(2026, 1, 2, tzinfo=UTC), seconds=60,
        server_version_num=180000, tables=[CapturedTable(shape=shape, rates=rates, explained=1)],
        source="counters",
    )  # fmt: skip


def make_custom_run(
    store: Store, *, recorded: int = 1, status: Literal["done", "interrupted"] = "done"
) -> int:
    config = CustomConfig.from_preset(
        "quick", profile=tiny_profile().model_dump(mode="json"), seconds=5, warmup=1
    )
    run_id = store.create_run(STUDY, config.params(), server_version="PostgreSQL 18.6",
                              settings={}, machine={})  # fmt: skip
    metrics: dict[str, object] = {"tps": 10.0, "rate_seconds": 6, "sampled_table": "jobs"}
    for name, (captured, replayed) in RATES.items():
        metrics[rate_metric("replayed", name, "jobs")] = replayed
        metrics[rate_metric("captured", name, "jobs")] = captured
    now = datetime(2026, 1, 2, 3, tzinfo=UTC)
    for step in range(1, recorded + 1):
        params = {"step": step, "name": f"step {step}", "scope": "server", "settings": {}}
        store.record_point(run_id, params, 0, metrics, started_at=now, ended_at=now)
    store.finish_run(run_id, status)
    return run_id
