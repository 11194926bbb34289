"""The churn report: one self-contained HTML file, and a PNG per chart, from the store alone.

`render_churn_report` reads a churn run (its parameters, points, metrics and series) from the
results store and nothing else: no server, no pgbench logs. Its output depends only on the
store's contents, so rendering the same run twice gives byte-identical files.

The HTML has no JavaScript and loads nothing: the charts are inline SVG and the CSS is in the
page. Every string that came from the store is escaped by Jinja2's autoescaping; the only
markup inserted unescaped is the SVG that `vacuumlab.report.charts` generated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from vacuumlab.errors import VacuumlabError
from vacuumlab.report import charts
from vacuumlab.report.common import (
    DASH,
    Cell,
    count,
    duration,
    environment,
    machine_rows,
    metric,
    study_run,
    text,
    when,
    write_png,
)
from vacuumlab.store import Metric, Point, Run, Store
from vacuumlab.studies.churn_spec import (
    POST_STEPS,
    PUBLISHED,
    SERIES_AUTOVACUUM,
    STUDY,
    Published,
)

REPORT_FILE = "report.html"
COMPARISON_PNG = "comparison.png"
NOT_PUBLISHED = "not published"

_STATUS_NOTICE = {
    "running": "This run has not finished (it is still running, or it was killed without "
    "recording an end): the report shows only the steps recorded so far.",
    "interrupted": "This run was interrupted: the report shows only the steps recorded "
    "before the interruption.",
    "failed": "This run failed: the report shows only the steps recorded before the failure.",
}

#: Run parameters shown in the header, in reading order, with their labels.
_PARAM_LABELS = (
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


# -- the view model: plain strings, escaped by the template --------------------------------


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
    run_id: int
    status: str
    notices: list[str]
    note: str | None
    overview: list[tuple[str, str]]
    machine: list[tuple[str, str]]
    params: list[tuple[str, str]]
    server_settings: list[tuple[str, str]]
    summary: list[SummaryRow]
    steps: list[StepSection]
    comparison_svg: Markup
    comparison_png: str
    any_settings_differ: bool
    repeat: int


# -- reading the store ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Step:
    """A step as planned in the run's parameters or as recorded in a point."""

    number: int
    name: str
    scope: str
    settings: dict[str, str]


def _as_step(raw: Mapping[str, Any], fallback_number: int) -> _Step:
    number = raw.get("step", raw.get("number"))
    if not isinstance(number, int) or isinstance(number, bool):
        number = fallback_number
    settings = raw.get("settings")
    return _Step(
        number=number,
        name=str(raw.get("name") or f"step {number}"),
        scope=str(raw.get("scope") or "server"),
        settings=(
            {str(k): text(v) for k, v in settings.items()} if isinstance(settings, dict) else {}
        ),
    )


def _planned_steps(run: Run) -> dict[int, _Step]:
    raw = run.params.get("steps")
    if not isinstance(raw, list):
        return {}
    steps = [_as_step(s, i + 1) for i, s in enumerate(raw) if isinstance(s, dict)]
    return {s.number: s for s in steps}


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


def _cells(metrics: Mapping[str, Metric]) -> dict[str, Cell]:
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


def _differs_from_post(step: _Step) -> bool:
    """Whether the step's settings miss or change any of the post's settings for its number.
    Extra settings are allowed; a step the post does not have counts as different."""
    if not 1 <= step.number <= len(POST_STEPS):
        return True
    post = POST_STEPS[step.number - 1].settings
    return any(step.settings.get(name) != value for name, value in post.items())


def _param_rows(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    known = {key for key, _ in _PARAM_LABELS}
    rows = [(label, text(params.get(key))) for key, label in _PARAM_LABELS]
    rows += [(key, text(params[key])) for key in sorted(params) if key not in known | {"steps"}]
    return rows


def _step_caption(step: _Step, point: Point, reps: int, autovacuums: int) -> str:
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


# -- rendering -----------------------------------------------------------------------------


def _step_chart(
    store: Store, step: _Step, point: Point, warmup: float | None, out_dir: Path
) -> tuple[Markup, str, int]:
    def series(metric: str) -> list[tuple[float, float | None]]:
        return store.series(point.id, metric)

    autovacuums = series(SERIES_AUTOVACUUM)
    fig = charts.step_chart(
        f"Step {step.number}: {step.name}",
        latency_p50=series("latency_p50_ms"),
        latency_p99=series("latency_p99_ms"),
        tps=series("tps"),
        dead_tuples=series("n_dead_tup"),
        autovacuums=autovacuums,
        warmup_s=warmup,
    )
    png = f"step-{step.number}.png"
    svg = Markup(charts.svg_markup(fig, f"chart-step-{step.number}"))
    write_png(fig, out_dir / png)
    return svg, png, len(autovacuums)


def _comparison(points: Sequence[tuple[_Step, Point]], out_dir: Path) -> Markup:
    results = []
    for step, point in points:
        m = point.metrics
        results.append(
            charts.StepResult(
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
        )
    shown = {step.number for step, _ in points if not _differs_from_post(step)}
    post = {n: p for n, p in PUBLISHED.items() if p is not None and n in shown}
    fig = charts.comparison_chart(
        results,
        published_latency_ms={n: p.latency_ms for n, p in post.items()},
        published_stddev_ms={n: p.stddev_ms for n, p in post.items()},
        published_tps={n: p.tps for n, p in post.items()},
    )
    svg = Markup(charts.svg_markup(fig, "chart-comparison"))
    write_png(fig, out_dir / COMPARISON_PNG)
    return svg


def build_report(store: Store, run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    """Draw the run's charts (writing their PNGs to `out_dir`) and return the view model the
    template renders."""
    planned = _planned_steps(run)
    recorded = sorted(
        ((_as_step(p.params, i + 1), p) for i, p in enumerate(points)),
        key=lambda sp: (sp[0].number, sp[1].repetition, sp[1].id),
    )
    by_step: dict[int, list[tuple[_Step, Point]]] = {}
    for step, point in recorded:
        by_step.setdefault(step.number, []).append((step, point))
    repeat_param = run.params.get("repeat")
    repeat = repeat_param if isinstance(repeat_param, int) and repeat_param > 0 else 1

    notices: list[str] = []
    if run.status in _STATUS_NOTICE:
        notices.append(_STATUS_NOTICE[run.status])
    missing = sorted(set(planned) - set(by_step))
    if missing:
        names = ", ".join(f"{n} ({planned[n].name})" for n in missing)
        notices.append(f"Not measured: step{'s' if len(missing) > 1 else ''} {names}.")
    short = [
        f"step {n}: {len(rows)} of {repeat}" for n, rows in by_step.items() if len(rows) < repeat
    ]
    if short:
        notices.append(f"Missing repetitions ({'; '.join(short)}).")

    # Summary rows: every planned or recorded step, in step order.
    summary: list[SummaryRow] = []
    sections: list[StepSection] = []
    previous: _Step | None = None
    for number in sorted(set(planned) | set(by_step)):
        rows_of_step = by_step.get(number, [])
        step = rows_of_step[0][0] if rows_of_step else planned[number]
        differs = _differs_from_post(step) and PUBLISHED.get(number) is not None
        published = _published_cells(PUBLISHED.get(number))
        step_rows: list[SummaryRow] = []
        if not rows_of_step:
            step_rows.append(
                SummaryRow(number, step.name, DASH, False, True, 1, {}, published, differs)
            )
        for k, (_, point) in enumerate(rows_of_step):
            step_rows.append(
                SummaryRow(
                    step=number,
                    name=step.name,
                    repetition=str(point.repetition + 1),
                    measured=True,
                    first=k == 0,
                    span=len(rows_of_step),
                    cells=_cells(point.metrics),
                    published=published,
                    settings_differ=differs,
                )
            )
        summary += step_rows
        if rows_of_step:
            point = rows_of_step[0][1]
            warmup = metric(point.metrics, "warmup_s")
            if warmup is None:
                warmup = metric(run.params, "warmup")
            svg, png, autovacuums = _step_chart(store, step, point, warmup, out_dir)
            baseline = planned.get(number - 1, previous)
            sections.append(
                StepSection(
                    number=number,
                    name=step.name,
                    anchor=f"step-{number}",
                    scope=(
                        "queue table only (storage parameters)"
                        if step.scope == "table"
                        else "server-wide"
                    ),
                    chart_id=f"chart-step-{number}",
                    svg=svg,
                    png=png,
                    caption=_step_caption(step, point, len(rows_of_step), autovacuums),
                    settings=[
                        Setting(
                            name,
                            value,
                            baseline is not None and baseline.settings.get(name) != value,
                        )
                        for name, value in sorted(step.settings.items())
                    ],
                    rows=step_rows,
                )
            )
        previous = step

    comparison_svg = _comparison(recorded, out_dir)
    version = run.server_version
    overview = [
        ("status", run.status),
        ("started", when(run.started_at)),
        ("ended", when(run.ended_at)),
        ("duration", duration(run.started_at, run.ended_at)),
        ("server", version),
        ("steps recorded", f"{len(by_step)} of {max(len(planned), len(by_step))}"),
    ]
    return Report(
        run_id=run.id,
        status=run.status,
        notices=notices,
        note=run.note,
        overview=overview,
        machine=machine_rows(run.machine),
        params=_param_rows(run.params),
        server_settings=sorted((str(k), text(v)) for k, v in run.settings.items()),
        summary=summary,
        steps=sections,
        comparison_svg=comparison_svg,
        comparison_png=COMPARISON_PNG,
        any_settings_differ=any(r.settings_differ for r in summary),
        repeat=repeat,
    )


def render_churn_report(store: Store, run_id: int, out_dir: Path) -> Path:
    """Render churn run `run_id` to `out_dir/report.html` (one self-contained file) plus one
    PNG per chart (`step-N.png`, `comparison.png`); return the HTML's path.

    Reads only the store. Raises VacuumlabError if the run does not exist, is not a churn run,
    has no points, or the files cannot be written.
    """
    run, points = study_run(store, run_id, STUDY, unit="steps")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VacuumlabError(f"{out_dir}: cannot create: {exc.strerror or exc}") from exc
    report = build_report(store, run, points, out_dir)
    html = environment().get_template("churn.html.j2").render(r=report)
    path = out_dir / REPORT_FILE
    try:
        path.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise VacuumlabError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    return path
