"""The churn report's sections: the summary tables, one section per step, and the view model
the template renders. Plain strings, escaped by the template."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from vacuumlab.records.churn import ChurnConfig
from vacuumlab.records.churn_spec import PUBLICATION, PUBLISHED, Published
from vacuumlab.report.churn import charts
from vacuumlab.report.churn.data import (
    Recorded,
    Step,
    by_step,
    planned_steps,
    post_number,
    recorded,
)
from vacuumlab.report.common import DASH, Cell, count, metric, text
from vacuumlab.report.page import (
    Header,
    header,
    overview,
    param_rows,
    planned_repeat,
    status_notice,
    stored_config,
)
from vacuumlab.store import Metric, Point, Run, Store

NOT_PUBLISHED = "not published"

#: Run parameters shown in the header, in reading order, with their labels.
PARAM_LABELS = (
    ("preset", "preset"),
    ("target", "target"),
    ("backlog", "backlog (queue rows)"),
    ("clients", "pgbench clients"),
    ("jobs", "pgbench threads (jobs)"),
    ("seconds", "seconds per step"),
    ("warmup", "warm-up (s, excluded)"),
    ("repeat", "repetitions"),
    ("continuous", "continuous (no reset between steps)"),
)


@dataclass(frozen=True, slots=True)
class SummaryRow:
    step: int
    name: str
    repetition: str
    measured: bool
    first: bool  # first row of its step: carries the step, name and published cells
    span: int  # rows of its step
    cells: dict[str, Cell]
    published: dict[str, str]
    settings_differ: bool


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    value: str
    changed: bool


@dataclass(frozen=True, slots=True)
class StepSection:
    number: int
    name: str
    anchor: str
    scope: str
    chart_id: str
    svg: Markup
    png: str
    caption: str
    settings: list[Setting]
    rows: list[SummaryRow]


@dataclass(frozen=True, slots=True)
class Report:
    header: Header
    summary: list[SummaryRow]
    steps: list[StepSection]
    comparison_svg: Markup
    comparison_png: str
    any_settings_differ: bool
    repeat: int


# -- formatting ----------------------------------------------------------------------------


def _ratio(value: Any) -> str:
    """A max/min ratio, e.g. ``1.84×``."""
    return DASH if value is None else f"{float(value):.2f}×"


def _ms(value: float | None) -> str:
    if value is None:
        return DASH
    if abs(value) < 10:
        return f"{value:.3f}"
    if abs(value) < 100:
        return f"{value:.2f}"
    return f"{value:.1f}"


def _tps(value: float | None) -> str:
    if value is None:
        return DASH
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}"


def _ci(low: float | None, high: float | None, fmt: Any) -> str | None:
    if low is None or high is None:
        return None
    return f"[{fmt(low)}, {fmt(high)}]"


def _bytes(value: float) -> str:
    size = abs(value)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


def _growth(start: float | None, end: float | None) -> Cell:
    if start is None or end is None:
        return Cell(DASH)
    delta = end - start
    sign = "+" if delta >= 0 else "−"
    shown = f"{sign}{_bytes(abs(delta))}"
    if start > 0:
        return Cell(shown, f"{sign}{abs(delta) / start * 100:.0f} %")
    return Cell(shown)


def _correlation(value: float | None) -> str:
    return DASH if value is None else f"{value:+.2f}"


def step_cells(metrics: Mapping[str, Metric]) -> dict[str, Cell]:
    m = {name: metric(metrics, name) for name in metrics}

    def get(name: str) -> float | None:
        return m.get(name)

    return {
        "tps": Cell(_tps(get("tps")), _ci(get("tps_ci_low"), get("tps_ci_high"), _tps)),
        "latency_mean": Cell(
            _ms(get("latency_mean_ms")),
            _ci(get("latency_mean_ci_low"), get("latency_mean_ci_high"), _ms),
        ),
        "stddev": Cell(_ms(get("latency_stddev_ms"))),
        "p50": Cell(_ms(get("latency_p50_ms"))),
        "p95": Cell(_ms(get("latency_p95_ms"))),
        "p99": Cell(
            _ms(get("latency_p99_ms")),
            _ci(get("latency_p99_ci_low"), get("latency_p99_ci_high"), _ms),
        ),
        "autovacuums": Cell(count(get("autovacuum_count"))),
        "dead_peak": Cell(count(get("dead_tuples_peak"))),
        "heap_growth": _growth(get("heap_bytes_start"), get("heap_bytes_end")),
        "index_growth": _growth(get("index_bytes_start"), get("index_bytes_end")),
        "sawtooth": Cell(_ratio(get("sawtooth_amplitude"))),
        "correlation": Cell(_correlation(get("latency_dead_correlation"))),
    }


def _published_cells(published: Published | None) -> dict[str, str]:
    if published is None:
        return {"tps": NOT_PUBLISHED, "latency": NOT_PUBLISHED, "stddev": NOT_PUBLISHED}
    return {
        "tps": f"{published.tps:.0f}",
        "latency": f"{published.latency_ms:.3f}",
        "stddev": f"{published.stddev_ms:.3f}",
    }


def _step_caption(point: Point, reps: int, autovacuums: int) -> str:
    shown = (
        f"Repetition {point.repetition + 1} of {reps} is drawn; every repetition is in the "
        "table below. "
        if reps > 1
        else ""
    )
    runs = "1 autovacuum run" if autovacuums == 1 else f"{autovacuums} autovacuum runs"
    return (
        f"{shown}Look for the sawtooth: dead tuples (grey, right axis) pile up until an "
        f"autovacuum (orange span; {runs} here) removes them, and latency, p99 most, "
        "should climb and fall with them while TPS moves the other way. Short, frequent "
        "orange spans and a low, flat grey curve are what tuning aims for. The hatched start "
        "is the warm-up, excluded from every figure in the tables."
    )


# -- the header ----------------------------------------------------------------------------


def _notices(
    run: Run, planned: Mapping[int, Step], steps: Mapping[int, Recorded], reps: int
) -> list[str]:
    notices = status_notice(run.status, "steps")
    missing = sorted(set(planned) - set(steps))
    if missing:
        names = ", ".join(f"{n} ({planned[n].name})" for n in missing)
        notices.append(f"Not measured: step{'s' if len(missing) > 1 else ''} {names}.")
    short = [f"step {n}: {len(rows)} of {reps}" for n, rows in steps.items() if len(rows) < reps]
    if short:
        notices.append(f"Missing repetitions ({'; '.join(short)}).")
    return notices


# -- the steps -----------------------------------------------------------------------------


def _summary_rows(number: int, step: Step, rows_of_step: Recorded) -> list[SummaryRow]:
    """The step's rows in the summary tables: one per repetition, or one 'not measured'."""
    post = post_number(step)
    differs = post is None and PUBLISHED.get(number) is not None
    published = _published_cells(PUBLISHED.get(post or number))
    if not rows_of_step:
        return [SummaryRow(number, step.name, DASH, False, True, 1, {}, published, differs)]
    return [
        SummaryRow(
            step=number,
            name=step.name,
            repetition=str(point.repetition + 1),
            measured=True,
            first=k == 0,
            span=len(rows_of_step),
            cells=step_cells(point.metrics),
            published=published,
            settings_differ=differs,
        )
        for k, (_, point) in enumerate(rows_of_step)
    ]


def _settings(step: Step, baseline: Step | None) -> list[Setting]:
    """The step's settings, marked where they differ from the step before."""
    return [
        Setting(name, value, baseline is not None and baseline.settings.get(name) != value)
        for name, value in sorted(step.settings.items())
    ]


def _step_section(
    store: Store,
    run: Run,
    rows: list[SummaryRow],
    recorded_rows: Recorded,
    baseline: Step | None,
    out_dir: Path,
) -> StepSection:
    step, point = recorded_rows[0]
    warmup = metric(point.metrics, "warmup_s")
    config = stored_config(ChurnConfig, run.params)
    if warmup is None and config is not None:
        warmup = float(config.warmup)
    svg, png, autovacuums = charts.step_chart(store, step, point, warmup, out_dir)
    return StepSection(
        number=step.number,
        name=step.name,
        anchor=f"step-{step.number}",
        scope="queue table only (storage parameters)" if step.scope == "table" else "server-wide",
        chart_id=f"chart-step-{step.number}",
        svg=svg,
        png=png,
        caption=_step_caption(point, len(recorded_rows), autovacuums),
        settings=_settings(step, baseline),
        rows=rows,
    )


def _steps(
    store: Store, run: Run, planned: Mapping[int, Step], steps: Mapping[int, Recorded], out: Path
) -> tuple[list[SummaryRow], list[StepSection]]:
    """Summary rows of every planned or recorded step, in step order, and a section with a
    chart for each recorded one."""
    summary: list[SummaryRow] = []
    sections: list[StepSection] = []
    previous: Step | None = None
    for number in sorted(set(planned) | set(steps)):
        rows_of_step = steps.get(number, [])
        step = rows_of_step[0][0] if rows_of_step else planned[number]
        step_rows = _summary_rows(number, step, rows_of_step)
        summary += step_rows
        if rows_of_step:
            baseline = planned.get(number - 1, previous)
            sections.append(_step_section(store, run, step_rows, rows_of_step, baseline, out))
        previous = step
    return summary, sections


def build_report(store: Store, run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    """Draw the run's charts (writing their PNGs to `out_dir`) and return the view model the
    template renders."""
    planned = planned_steps(run)
    points_by_step = recorded(points)
    steps = by_step(points_by_step)
    reps = planned_repeat(stored_config(ChurnConfig, run.params))
    summary, sections = _steps(store, run, planned, steps, out_dir)
    comparison_svg = charts.comparison_chart(points_by_step, out_dir)
    counts = ("steps recorded", f"{len(steps)} of {max(len(planned), len(steps))}")
    return Report(
        header=header(
            run,
            PUBLICATION,
            _notices(run, planned, steps, reps),
            overview(run, counts),
            param_rows(run.params, PARAM_LABELS, text, hidden=("steps",)),
        ),
        summary=summary,
        steps=sections,
        comparison_svg=comparison_svg,
        comparison_png=charts.COMPARISON_PNG,
        any_settings_differ=any(r.settings_differ for r in summary),
        repeat=reps,
    )
