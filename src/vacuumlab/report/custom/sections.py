"""The custom report's view model: the steps (as the churn report shows them), the replayed
rates of every table beside the captured ones, the settings each step ran with as read back
from the server, and the notices of steps whose replay is off."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from vacuumlab.model.knobs import KNOBS
from vacuumlab.records.custom import CustomConfig
from vacuumlab.records.custom_spec import (
    RATE_SECONDS,
    SAMPLED_TABLE,
    Check,
    checks,
    rate_metric,
    rate_tables,
    reloptions_in_force,
    settings_in_force,
)
from vacuumlab.report.churn import charts
from vacuumlab.report.churn.data import Recorded, Step, by_step, recorded
from vacuumlab.report.churn.sections import step_cells
from vacuumlab.report.common import DASH, Cell, metric, text
from vacuumlab.report.page import Header, header, overview, param_rows, status_notice, stored_config
from vacuumlab.store import Point, Run, Store

PARAM_LABELS = (
    ("profile_file", "profile"),
    ("scale", "scale (rows and rates)"),
    ("schema_file", "schema file"),
    ("rate", "rate (tx/s, scripts)"),
    ("target", "target"),
    ("clients", "pgbench clients"),
    ("jobs", "pgbench threads (jobs)"),
    ("seconds", "seconds per step (after warm-up)"),
    ("warmup", "warm-up (s, excluded)"),
    ("repeat", "repetitions"),
)


#: Parameters too long for the header: the steps have sections, the files their names.
_HIDDEN = ("steps", "profile", "schema", "scripts")


@dataclass(frozen=True, slots=True)
class RateRow:
    table: str
    what: str
    replayed: str
    captured: str
    deviation: str
    off: bool


@dataclass(frozen=True, slots=True)
class InForce:
    """A setting or storage parameter a step ran with, as read back when its load started."""

    where: str  # "server", or the table whose storage parameter it is
    name: str
    value: str
    own: bool  # the step sets it


@dataclass(frozen=True, slots=True)
class StepView:
    number: int
    name: str
    repetition: int
    anchor: str
    sampled: str
    cells: dict[str, Cell]
    rates: list[RateRow]
    in_force: list[InForce]
    svg: Markup
    png: str
    chart_id: str
    off: bool


@dataclass(frozen=True, slots=True)
class Report:
    header: Header
    steps: list[StepView]
    captured: bool
    scripts: list[str]


def _number(value: float) -> str:
    return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.0f}"


def _rate_rows(point: Point) -> tuple[list[RateRow], list[Check]]:
    """Replayed against captured, per table; replayed only where nothing was captured."""
    m = point.metrics
    found = checks(m, metric(m, RATE_SECONDS) or 0.0)
    rows = [
        RateRow(c.table, c.what, _share(c) if c.what == "HOT share" else _number(c.replayed),
                _share(c, captured=True) if c.what == "HOT share" else _number(c.captured),
                _deviation(c), c.off)
        for c in found
    ]  # fmt: skip
    if not found:
        for table in rate_tables(m):
            for rate in ("inserts", "updates", "hot_updates", "deletes", "dead_tuples"):
                shown = _shown(metric(m, rate_metric("replayed", rate, table)))
                rows.append(RateRow(table, rate.replace("_", " "), shown, DASH, DASH, False))
    else:
        for table in rate_tables(m):
            replayed = _shown(metric(m, rate_metric("replayed", "dead_tuples", table)))
            captured = _shown(metric(m, rate_metric("captured", "dead_tuples", table)))
            rows.append(RateRow(table, "dead tuples (not judged)", replayed, captured, DASH, False))
    return rows, found


def _shown(value: float | None) -> str:
    return DASH if value is None else _number(value)


def _share(check: Check, captured: bool = False) -> str:
    return f"{(check.captured if captured else check.replayed):.2f}"


def _deviation(check: Check) -> str:
    d = check.deviation
    if d is None:
        return DASH
    if check.what == "HOT share":
        return f"{d:+.2f}"
    return f"{d * 100:+.1f} %"


def _in_force(step: Step, point: Point, shown: Collection[str]) -> list[InForce]:
    """The server settings among ``shown`` and every storage parameter of the tables, as the
    point read them back; a setting in its base unit, named where the lab knows it."""
    settings = settings_in_force(point.metrics)
    rows = []
    for name in sorted(n for n in shown if n in settings):
        knob = KNOBS.get(name)
        unit = f" {knob.unit}" if knob is not None and knob.unit else ""
        own = step.scope == "server" and name in step.settings
        rows.append(InForce("server", name, f"{settings[name]}{unit}", own))
    for table, options in sorted(reloptions_in_force(point.metrics).items()):
        for name, value in sorted(options.items()):
            own = step.scope == "table" and name in step.settings
            rows.append(InForce(table, name, value, own))
    return rows


def shown_settings(recorded_rows: Recorded) -> set[str]:
    """The server settings worth a row: those a step names, and those that read differently
    in two of the run's points."""
    named = {name for step, _ in recorded_rows for name in step.settings}
    read = [settings_in_force(point.metrics) for _, point in recorded_rows]
    names = {name for settings in read for name in settings}
    return named | {n for n in names if len({settings.get(n) for settings in read}) > 1}


def _step_view(store: Store, step_point: tuple[Step, Point], warmup: float | None,
               out_dir: Path, shown: Collection[str]) -> tuple[StepView, list[Check]]:  # fmt: skip
    step, point = step_point
    rows, found = _rate_rows(point)
    svg, png, _ = charts.step_chart(store, step, point, warmup, out_dir)
    number = step.number
    view = StepView(
        number=number, name=step.name, repetition=point.repetition + 1,
        anchor=f"step-{number}-{point.repetition}", sampled=text(point.metrics.get(SAMPLED_TABLE)),
        cells=step_cells(point.metrics), rates=rows, in_force=_in_force(step, point, shown),
        svg=svg, png=png, chart_id=f"chart-step-{number}", off=any(c.off for c in found),
    )  # fmt: skip
    return view, found


def _off_notice(view: StepView, found: list[Check]) -> str:
    parts = [f"{c.table} {c.what} {_deviation(c)}" for c in found if c.off]
    return (f"Step {view.number} ({view.name}): the replay is off by more than 10 % of the "
            "captured rates (more for a short capture, whose counters may lag by a second): "
            f"{'; '.join(parts)}.")  # fmt: skip


def build_report(store: Store, run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    config = stored_config(CustomConfig, run.params)
    warmup = float(config.warmup) if config is not None else None
    rows: Recorded = recorded(points)
    steps = by_step(rows)
    shown = shown_settings(rows)
    views, notices = [], []
    for number in sorted(steps):
        for pair in steps[number]:
            view, found = _step_view(store, pair, warmup, out_dir, shown)
            views.append(view)
            if view.off:
                notices.append(_off_notice(view, found))
    notices = notices + status_notice(run.status, "steps")
    planned = len(config.steps) if config is not None else len(steps)
    counts = ("steps recorded", f"{len(steps)} of {max(planned, len(steps))}")
    return Report(
        header=header(
            run, None, notices, overview(run, counts),
            param_rows(run.params, PARAM_LABELS, text, hidden=_HIDDEN),
            about="Your own table and workload, replayed on the lab's server under settings "
            "steps: no published work is reproduced.",
        ),
        steps=views,
        captured=config is not None and config.profile is not None,
        scripts=[f"{s.name} @{s.weight}" for s in (config.scripts if config else ())],
    )  # fmt: skip
