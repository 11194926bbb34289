"""Each study's params records against parameters as stores written before the records existed
hold them (schema_version 1): they read back and are written out again unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from vacuumlab.records.churn import ChurnConfig, ChurnPoint
from vacuumlab.records.cost_driver import CostDriverConfig, CostDriverPoint
from vacuumlab.records.fillfactor import FillfactorConfig, FillfactorPoint
from vacuumlab.records.params import Params
from vacuumlab.records.toast import ParallelPoint, Span, StoragePoint, ToastConfig, toast_point

_SETTINGS = {
    "autovacuum_naptime": "1min",
    "autovacuum_vacuum_cost_delay": "20ms",
    "autovacuum_vacuum_cost_limit": "-1",
    "autovacuum_vacuum_scale_factor": "0.2",
    "vacuum_cost_limit": "200",
}
#: As the studies stored them before the records (written by that code, copied here).
STORED: list[tuple[type[Params], dict[str, Any]]] = [
    (ChurnConfig, {"backlog": 100000, "clients": 3, "continuous": False, "jobs": 2,
                   "preset": "paper", "repeat": 2, "seconds": 300, "target": "sandbox",
                   "warmup": 10, "steps": [{"number": 1, "name": "defaults", "scope": "server",
                                            "settings": _SETTINGS}]}),
    (ChurnPoint, {"step": 1, "name": "defaults", "scope": "server", "settings": _SETTINGS}),
    (CostDriverConfig, {"dead_pcts": [10, 25, 50], "distributions": ["compact", "spread"],
                        "indexes": [0, 1, 3, 5], "manual": True, "preset": "quick", "repeat": 3,
                        "rows": 1000000, "target": "sandbox", "work_mem": "1MB"}),
    (CostDriverPoint, {"distribution": "compact", "dead_pct": 10, "indexes": 0,
                       "rows": 1000000, "mode": "autovacuum"}),
    (FillfactorConfig, {"clients": 2, "fillfactors": [70, 80, 90, 100], "jobs": 1,
                        "preset": "quick", "repeat": 2, "seconds": 45, "shared_buffers": None,
                        "sizes": ["fits", "2x"], "target": "server", "warmup": 5}),
    (FillfactorPoint, {"size": "fits", "fillfactor": 70, "scale": 4}),
    (ToastConfig, {"parallel": True, "preset": "quick", "repeat": 1, "rows": 50000,
                   "storages": ["extended", "main", "external"], "target": "sandbox",
                   "toast_tuple_targets": [2032, 128], "width": 10000}),
    (StoragePoint, {"experiment": "storage", "storage": "extended", "toast_tuple_target": 2032,
                    "rows": 50000, "width": 10000}),
    (ParallelPoint, {"experiment": "parallel", "arm": "overlapping", "rows": 50000,
                     "width": 10000}),
]  # fmt: skip


@pytest.mark.parametrize(("record", "stored"), STORED, ids=lambda v: getattr(v, "__name__", ""))
def test_stored_params_read_back_unchanged(record: type[Params], stored: dict[str, Any]) -> None:
    assert record.from_params(stored).params() == stored


def test_a_toast_point_is_read_by_its_experiment() -> None:
    assert isinstance(toast_point(STORED[-1][1]), ParallelPoint)
    assert isinstance(toast_point(STORED[-2][1]), StoragePoint)


def test_a_timeline_span_round_trips_through_its_json() -> None:
    stored = {"session": "table", "start": 0.1234, "end": 0.5, "category": "lock",
              "phase": "scanning heap", "wait_event": "Lock:relation",
              "lock_mode": "ShareUpdateExclusiveLock", "relation": "toast", "granted": False,
              "blocked_by": ["toast"]}  # fmt: skip
    assert Span.from_json(stored).to_json() == stored
