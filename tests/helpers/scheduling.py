"""A synthetic scheduling run in a real results store, for report tests (no server needed):
the run's parameters, then one point per arm with the metrics and series the study records.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from helpers.report import MACHINE, SERVER_VERSION, T0, XSS
from vacuumlab.records.scheduling import QUICK_ARMS, SchedulingConfig, SchedulingPoint
from vacuumlab.records.scheduling_spec import (
    DEAD,
    MEASURED,
    PREDICTED,
    STUDY,
    series_name,
    table_metric,
)
from vacuumlab.store import Metric, Store
from vacuumlab.studies.scheduling_compare import workload

Samples = list[tuple[float, float | None]]


def _arm(number: int, tables: list[str]) -> tuple[dict[str, Metric], dict[str, Samples]]:
    """Each table vacuumed every period; the prediction one vacuum short on the last table."""
    metrics: dict[str, Metric] = {
        "window_start_s": 75.0, "window_s": 95.0, "tps": 2500.0, "vacuums_measured": 0,
        "vacuums_predicted": 0, "median_count_error": 0.05 * number,
        "median_peak_error": 0.08, "median_duration_error": 0.4,
        "median_first_start_error_s": 1.2, "busy_share_measured": 0.9 / number,
        "busy_share_predicted": 0.8 / number, "tables_counted": len(tables),
    }  # fmt: skip
    series: dict[str, Samples] = {}
    for i, table in enumerate(tables):
        period = 10.0 + 5 * i
        starts = [t for t in range(5, 170, int(period))]
        predicted = [float(t) for t in starts if t >= 75][: -1 if i == len(tables) - 1 else None]
        series[series_name(MEASURED, table)] = [(float(t), 0.5) for t in starts]
        series[series_name(PREDICTED, table)] = [(t, 0.6) for t in predicted]
        series[series_name(DEAD, table)] = [
            (float(t), float(40 * (t % period))) for t in range(170)
        ]
        measured_n = len([t for t in starts if t >= 75])
        values: dict[str, Metric] = {
            "dead_per_second": 40.0, "vacuums_measured": measured_n,
            "vacuums_predicted": len(predicted), "first_start_measured_s": float(starts[0]),
            "first_start_predicted_s": predicted[0] if predicted else None,
            "mean_duration_measured_s": 0.5, "mean_duration_predicted_s": 0.6,
            "peak_dead_measured": 40 * (period - 1), "peak_dead_predicted": 40 * period,
            "count_error": abs(len(predicted) - measured_n) / max(measured_n, 1),
            "peak_error": 1 / (period - 1), "duration_error": 0.2,
        }  # fmt: skip
        metrics |= {table_metric(table, k): v for k, v in values.items()}
    return metrics, series


def make_scheduling_run(store: Store, *, tables: int = 6, with_xss: bool = False) -> int:
    config = SchedulingConfig(tables=tables, quiet=1)
    params: dict[str, Any] = config.params()
    run_id = store.create_run(STUDY, params, server_version=SERVER_VERSION,
                              settings={"autovacuum_naptime": "5s"}, machine=MACHINE,
                              note=XSS if with_xss else None)  # fmt: skip
    names = [t.name for t in workload(tables, 1, config.spread, config.rows)]
    for number, arm in enumerate(QUICK_ARMS, start=1):
        metrics, series = _arm(number, names)
        start = T0 + timedelta(minutes=4 * number)
        store.record_point(run_id, SchedulingPoint(number, arm).params(), 0, metrics,
                           started_at=start, ended_at=start + timedelta(seconds=170),
                           series=series)  # fmt: skip
    store.finish_run(run_id, "done")
    return run_id
