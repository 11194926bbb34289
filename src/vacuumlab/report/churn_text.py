"""The churn study's summary table for the terminal, read from the results store only."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from vacuumlab.records.churn import ChurnPoint
from vacuumlab.records.churn_spec import PUBLISHED
from vacuumlab.store import Store


def summary_table(store: Store, run_id: int) -> Table:
    """One row per step and repetition: what was measured, next to what the post published."""
    run = store.run(run_id)
    table = Table(title=f"churn run {run_id} ({run.status})", title_justify="left")
    columns = (
        "step",
        "tps",
        "latency ms [95 % CI]",
        "stddev",
        "p99",
        "autovacuums",
        "dead peak",
        "sawtooth",
        "post: tps / ms / stddev",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "step" else "right")
    for point in store.points(run_id):
        m: dict[str, Any] = point.metrics
        step = ChurnPoint.from_params(point.params)
        number = step.number
        published = PUBLISHED.get(number)
        post = (
            f"{published.tps:,.0f} / {published.latency_ms:.2f} / {published.stddev_ms:.2f}"
            if published
            else "not published"
        )
        table.add_row(
            Text(f"{number} {step.step.name}"),
            _num(m.get("tps"), "{:,.0f}"),
            f"{_num(m.get('latency_mean_ms'), '{:.2f}')} "
            f"[{_num(m.get('latency_mean_ci_low'), '{:.2f}')}–"
            f"{_num(m.get('latency_mean_ci_high'), '{:.2f}')}]",
            _num(m.get("latency_stddev_ms"), "{:.2f}"),
            _num(m.get("latency_p99_ms"), "{:.2f}"),
            _num(m.get("autovacuum_count"), "{}"),
            _num(m.get("dead_tuples_peak"), "{:,}"),
            _num(m.get("sawtooth_amplitude"), "{:.2f}×"),
            post,
        )
    return table


def _num(value: object, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)
