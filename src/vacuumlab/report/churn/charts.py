"""The churn report's charts: a step over time, and every step compared, drawn from the
store and saved beside the page."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from markupsafe import Markup

from vacuumlab.records.churn_spec import PUBLISHED, SERIES_AUTOVACUUM
from vacuumlab.report.churn import figures
from vacuumlab.report.churn.data import Recorded, Step, post_number
from vacuumlab.report.common import metric
from vacuumlab.report.page import draw
from vacuumlab.store import Point, Store

COMPARISON_PNG = "comparison.png"


def step_chart(
    store: Store, step: Step, point: Point, warmup: float | None, out_dir: Path
) -> tuple[Markup, str, int]:
    """The step's chart (inline SVG), its PNG's name and how many autovacuums it shows."""

    def series(metric: str) -> list[tuple[float, float | None]]:
        return store.series(point.id, metric)

    autovacuums = series(SERIES_AUTOVACUUM)
    fig = figures.step_chart(
        f"Step {step.number}: {step.name}",
        latency_p50=series("latency_p50_ms"),
        latency_p99=series("latency_p99_ms"),
        tps=series("tps"),
        dead_tuples=series("n_dead_tup"),
        autovacuums=autovacuums,
        warmup_s=warmup,
    )
    png = f"step-{step.number}.png"
    return draw(fig, f"chart-step-{step.number}", out_dir / png), png, len(autovacuums)


def _result(step: Step, point: Point) -> figures.StepResult:
    m = point.metrics
    return figures.StepResult(
        step=step.number,
        repetition=point.repetition,
        latency_mean_ms=metric(m, "latency_mean_ms"),
        latency_mean_ci_low=metric(m, "latency_mean_ci_low"),
        latency_mean_ci_high=metric(m, "latency_mean_ci_high"),
        latency_stddev_ms=metric(m, "latency_stddev_ms"),
        tps=metric(m, "tps"),
        tps_ci_low=metric(m, "tps_ci_low"),
        tps_ci_high=metric(m, "tps_ci_high"),
        dead_tuples_peak=metric(m, "dead_tuples_peak"),
    )


def comparison_chart(points: Sequence[tuple[Step, Point]] | Recorded, out_dir: Path) -> Markup:
    """Every step side by side, with the post's figures where the step's settings are the
    post's."""
    post = {}
    for step, _ in points:
        published = PUBLISHED.get(post_number(step) or 0)
        if published is not None:
            post[step.number] = published
    fig = figures.comparison_chart(
        [_result(step, point) for step, point in points],
        published_latency_ms={n: p.latency_ms for n, p in post.items()},
        published_stddev_ms={n: p.stddev_ms for n, p in post.items()},
        published_tps={n: p.tps for n, p in post.items()},
    )
    return draw(fig, "chart-comparison", out_dir / COMPARISON_PNG)
