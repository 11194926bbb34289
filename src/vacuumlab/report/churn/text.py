"""The churn study's summary table for the terminal, read from the results store only."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from vacuumlab.records.churn import ChurnPoint
from vacuumlab.records.churn_spec import PUBLISHED
from vacuumlab.report.churn.data import as_step, post_number
from vacuumlab.store import Point, Store


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
        # The post's figures for the post's step these settings are (the demo's second step
        # is the post's sixth).
        published = PUBLISHED.get(post_number(as_step(step)) or number)
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


def finding(store: Store, run_id: int) -> str | None:
    """One line on what the table means: the first step against the last (the defaults
    against the post's final settings, in the post's order and in the demo), and whether the
    95 % intervals tell them apart. None with fewer than two steps measured."""
    firsts: dict[int, Point] = {}
    for point in store.points(run_id):
        firsts.setdefault(ChurnPoint.from_params(point.params).number, point)
    if len(firsts) < 2:
        return None
    a, b = firsts[min(firsts)], firsts[max(firsts)]
    first, last = ChurnPoint.from_params(a.params).step, ChurnPoint.from_params(b.params).step
    m, n = a.metrics, b.metrics
    try:
        line = (
            f"{first.name} → {last.name}: dead-tuple peak {m['dead_tuples_peak']:,} → "
            f"{n['dead_tuples_peak']:,} ({m['autovacuum_count']} → {n['autovacuum_count']} "
            f"autovacuums), latency {m['latency_mean_ms']:.2f} → {n['latency_mean_ms']:.2f} ms, "
            f"{m['tps']:,.0f} → {n['tps']:,.0f} tps; "
        )
    except (KeyError, TypeError, ValueError):
        return None
    apart = [
        what for what, key in (("latency", "latency_mean"), ("tps", "tps")) if _apart(m, n, key)
    ]
    if len(apart) == 2:
        return line + "both 95 % intervals are apart: a real difference, not noise."
    if apart:
        return line + f"the {apart[0]} intervals are apart, the others overlap (noise)."
    return line + "the 95 % intervals overlap: this run cannot tell the speeds apart."


def _apart(m: dict[str, Any], n: dict[str, Any], key: str) -> bool:
    bounds = [d.get(f"{key}_ci_{end}") for d in (m, n) for end in ("low", "high")]
    numbers = [float(v) for v in bounds if isinstance(v, int | float)]
    if len(numbers) < len(bounds):
        return False
    low_m, high_m, low_n, high_n = numbers
    return high_m < low_n or high_n < low_m
