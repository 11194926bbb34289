"""The scheduling report's sections: the arms' medians, and per arm its timelines and its
error table, worst tables first. Plain strings, escaped by the template."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from vacuumlab.records.scheduling import SchedulingConfig, SchedulingPoint
from vacuumlab.records.scheduling_spec import (
    ABOUT,
    GOAL,
    MEASURED,
    PREDICTED,
    PUBLICATION,
    series_name,
    table_metric,
)
from vacuumlab.report.common import DASH, metric
from vacuumlab.report.page import (
    Header,
    draw,
    header,
    of,
    overview,
    param_rows,
    planned_repeat,
    status_notice,
    stored_config,
    typed,
)
from vacuumlab.report.scheduling import charts
from vacuumlab.store import Point, Run, Store

PARAM_LABELS = (
    ("preset", "preset"),
    ("target", "target"),
    ("workload", "workload"),
    ("tables", "tables"),
    ("quiet", "of which quiet (no load)"),
    ("rows", "rows per table"),
    ("spread", "busiest over slowest busy table"),
    ("busy_rows", "rows of the mixed workload's busy table"),
    ("seconds", "seconds per arm"),
    ("warmup", "first snapshot (s)"),
    ("interval", "second snapshot after (s)"),
    ("clients", "pgbench clients"),
    ("jobs", "pgbench threads (jobs)"),
    ("repeat", "repetitions"),
)
HIDDEN = ("arms",)
#: The worst tables each arm lists by count error, then by peak error.
WORST = 5


def pct(value: float | None) -> str:
    return DASH if value is None else f"{100 * value:.0f} %"


def num(value: float | None, digits: int = 0) -> str:
    return DASH if value is None else f"{value:,.{digits}f}"


@dataclass(frozen=True, slots=True)
class ArmRow:
    """One arm in the summary."""

    number: int
    name: str
    repetition: int
    anchor: str
    tps: str
    vacuums: str  # measured / predicted
    busy: str  # worker busy share measured / predicted
    count_error: str
    peak_error: str
    duration_error: str
    first_start_error: str
    count_ok: bool
    peak_ok: bool


@dataclass(frozen=True, slots=True)
class TableRow:
    table: str
    rate: str
    vacuums: tuple[str, str]
    first_start: tuple[str, str]
    duration: tuple[str, str]
    peak: tuple[str, str]
    count_error: str
    peak_error: str
    duration_error: str


@dataclass(frozen=True, slots=True)
class ArmSection:
    row: ArmRow
    settings: list[tuple[str, str]]
    window: str
    svg: Markup
    png: str
    tables: list[TableRow]
    worst: list[str]


@dataclass(frozen=True, slots=True)
class Report:
    header: Header
    goal: str
    arms: list[ArmSection]


def build_report(store: Store, run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    config = stored_config(SchedulingConfig, run.params)
    arms = sorted(
        ((typed(SchedulingPoint.from_params, p.params), p) for p in points),
        key=lambda ap: (ap[0].number if ap[0] else 0, ap[1].repetition, ap[1].id),
    )
    sections = [_section(store, a, p, out_dir) for a, p in arms if a is not None]
    planned = len(config.arms) * planned_repeat(config) if config else 0
    head = header(
        run,
        PUBLICATION,
        status_notice(run.status, "arms"),
        overview(run, ("arms recorded", of(len(sections), planned))),
        param_rows(run.params, PARAM_LABELS, hidden=HIDDEN),
        about=ABOUT,
    )
    return Report(head, pct(GOAL), sections)


def _tables(point: Point) -> list[str]:
    return sorted({name.split("|")[0] for name in point.metrics if "|" in name})


def _section(store: Store, arm: SchedulingPoint, point: Point, out_dir: Path) -> ArmSection:
    m = point.metrics
    names = _tables(point)
    rows = [_table_row(point, t) for t in names]
    shown = [t for t in names if _vacuumed(point, t)]
    measured = {t: store.series(point.id, series_name(MEASURED, t)) for t in shown}
    predicted = {t: store.series(point.id, series_name(PREDICTED, t)) for t in shown}
    start = metric(m, "window_start_s") or 0.0
    window = (start, start + (metric(m, "window_s") or 0.0))
    suffix = f"{arm.number}-{point.repetition}"
    fig = charts.gantt(f"Arm {arm.number}: {arm.arm.name}", shown, measured, predicted, window)
    png = f"arm-{suffix}.png"
    svg = draw(fig, f"chart-arm-{suffix}", out_dir / png)
    anchor = f"arm-{suffix}"
    row = _arm_row(arm, point, anchor)
    worst = sorted(
        (r for r in rows if _error(point, r.table, "count_error") is not None),
        key=lambda r: (
            -(_error(point, r.table, "count_error") or 0.0),
            -(_error(point, r.table, "peak_error") or 0.0),
        ),
    )[:WORST]
    settings = sorted(arm.arm.settings().items())
    return ArmSection(
        row=row,
        settings=settings,
        window=f"{window[0]:.0f} s to {window[1]:.0f} s",
        svg=svg,
        png=png,
        tables=rows,
        worst=[r.table for r in worst if (_error(point, r.table, "count_error") or 0) > 0],
    )


def _error(point: Point, table: str, name: str) -> float | None:
    return metric(point.metrics, table_metric(table, name))


def _vacuumed(point: Point, table: str) -> bool:
    return any(
        (metric(point.metrics, table_metric(table, f"vacuums_{side}")) or 0) > 0
        for side in ("measured", "predicted")
    )


def _arm_row(arm: SchedulingPoint, point: Point, anchor: str) -> ArmRow:
    m = point.metrics
    count, peak = metric(m, "median_count_error"), metric(m, "median_peak_error")
    first = metric(m, "median_first_start_error_s")
    return ArmRow(
        number=arm.number,
        name=arm.arm.name,
        repetition=point.repetition + 1,
        anchor=anchor,
        tps=num(metric(m, "tps")),
        vacuums=f"{num(metric(m, 'vacuums_measured'))} / {num(metric(m, 'vacuums_predicted'))}",
        busy=f"{pct(metric(m, 'busy_share_measured'))} / {pct(metric(m, 'busy_share_predicted'))}",
        count_error=pct(count),
        peak_error=pct(peak),
        duration_error=pct(metric(m, "median_duration_error")),
        first_start_error=DASH if first is None else f"{first:.1f} s",
        count_ok=count is not None and count <= GOAL,
        peak_ok=peak is not None and peak <= GOAL,
    )


def _table_row(point: Point, table: str) -> TableRow:
    def get(name: str) -> float | None:
        return metric(point.metrics, table_metric(table, name))

    def pair(name: str, digits: int = 0) -> tuple[str, str]:
        return num(get(f"{name}_measured"), digits), num(get(f"{name}_predicted"), digits)

    return TableRow(
        table=table,
        rate=num(get("dead_per_second"), 1),
        vacuums=pair("vacuums"),
        first_start=(num(get("first_start_measured_s"), 1), num(get("first_start_predicted_s"), 1)),
        duration=(
            num(get("mean_duration_measured_s"), 3),
            num(get("mean_duration_predicted_s"), 3),
        ),
        peak=pair("peak_dead"),
        count_error=pct(get("count_error")),
        peak_error=pct(get("peak_error")),
        duration_error=pct(get("duration_error")),
    )
