"""The run page every study's report shares: reading a run, its header (status notice, run,
machine, parameters, server settings), one observation per point, chart saving and writing the
page. A study's report adds only its own sections and charts.

Pure: it reads the store, never a server. No JavaScript, nothing loaded: charts are inline SVG,
the CSS is in the page, every string from the store is escaped by Jinja2's autoescaping, and
only the generated SVG is marked safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeGuard, TypeVar

from markupsafe import Markup
from matplotlib.figure import Figure

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.params import Config, field_names
from vacuumlab.records.publication import Publication
from vacuumlab.report import charts
from vacuumlab.report.common import DASH, duration, environment, machine_rows, metric, text, when
from vacuumlab.stats.aggregate import Spread, spread
from vacuumlab.store import Metric, Point, Run, Store

REPORT_FILE = "report.html"

#: What the notice says of an unfinished run; {unit} is what the study records ("points").
_STATUS_NOTICE = {
    "running": "This run has not finished (it is still running, or it was killed without "
    "recording an end): the report shows only the {unit} recorded so far.",
    "interrupted": "This run was interrupted: the report shows only the {unit} recorded "
    "before the interruption.",
    "failed": "This run failed: the report shows only the {unit} recorded before the failure.",
}

#: A study's parameters in reading order: (key in the run's parameters, label).
ParamLabels = Sequence[tuple[str, str]]
Rows = list[tuple[str, str]]
K = TypeVar("K")
R = TypeVar("R")
P = TypeVar("P")
C = TypeVar("C", bound=Config)


def is_int(value: Any) -> TypeGuard[int]:
    """An int that is not a bool: parameters come back from JSON untyped."""
    return isinstance(value, int) and not isinstance(value, bool)


def typed(read: Callable[[Mapping[str, Any]], P], params: Mapping[str, Any]) -> P | None:
    """Stored parameters as the study's record (``read`` is its ``from_params``), or None when
    they are not what the study writes."""
    try:
        return read(params)
    except (KeyError, TypeError, ValueError):
        return None


def stored_config(config: type[C], params: Mapping[str, Any]) -> C | None:
    """The run's config as the run stored it, or None when it did not store every field: what
    a run planned is not guessed from today's defaults. A field the study added later reads
    as what runs stored before it ran with (``Config.added``)."""
    params = {**config.added, **params}
    if not field_names(config) <= set(params):
        return None
    return typed(config.from_params, params)


class Repeated(Protocol):
    """A config that plans repetitions (every study's does)."""

    @property
    def repeat(self) -> int: ...


def planned_repeat(config: Repeated | None) -> int:
    """The repetitions the run planned (1 when not recorded)."""
    return 1 if config is None or not is_int(config.repeat) else max(config.repeat, 1)


# -- the header ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Header:
    """What every report shows above its own sections."""

    run_id: int
    publication: Publication | None  # the published work the study reproduces, if any
    status: str
    notices: list[str]
    note: str | None
    overview: Rows
    machine: Rows
    params: Rows
    server_settings: Rows
    about: str | None = None  # what a study without a publication is for


def status_notice(status: str, unit: str = "points") -> list[str]:
    """The notice of an unfinished run, or none for a finished one."""
    notice = _STATUS_NOTICE.get(status)
    return [] if notice is None else [notice.format(unit=unit)]


def list_text(value: Any) -> str:
    """A parameter: a list as its items joined by commas."""
    if isinstance(value, list):
        return ", ".join(text(v) for v in value) if value else DASH
    return text(value)


def param_text(value: Any) -> str:
    """A parameter: lists joined, large counts with thousands separators."""
    if is_int(value) and abs(value) >= 10_000:
        return f"{value:,}"
    return list_text(value)


def param_rows(
    params: Mapping[str, Any],
    labels: ParamLabels,
    fmt: Callable[[Any], str] = param_text,
    hidden: Iterable[str] = (),
) -> Rows:
    """The labelled parameters in order, then any other (but `hidden`) by name."""
    known = {key for key, _ in labels} | set(hidden)
    rows = [(label, fmt(params.get(key))) for key, label in labels]
    return rows + [(key, fmt(params[key])) for key in sorted(params) if key not in known]


def overview(run: Run, *extra: tuple[str, str]) -> Rows:
    """The run's status, times and server, then the study's own counts."""
    return [
        ("status", run.status),
        ("started", when(run.started_at)),
        ("ended", when(run.ended_at)),
        ("duration", duration(run.started_at, run.ended_at)),
        ("server", run.server_version),
        *extra,
    ]


def settings_rows(run: Run) -> Rows:
    """Every server setting recorded at the start of the run, by name."""
    return sorted((str(k), text(v)) for k, v in run.settings.items())


def header(
    run: Run,
    publication: Publication | None,
    notices: list[str],
    overview_rows: Rows,
    params: Rows,
    about: str | None = None,
) -> Header:
    return Header(
        run_id=run.id,
        publication=publication,
        status=run.status,
        notices=notices + concurrency_notice(run),
        note=run.note,
        overview=overview_rows,
        machine=machine_rows(run.machine) + executor_rows(run),
        params=params,
        server_settings=settings_rows(run),
        about=about,
    )


def executor_text(run: Run) -> str:
    """How the run's points were run: ``local``, or ``ray: 2 at once on 10.0.0.5 a1b2c3``,
    each start and resume in turn."""
    parts = []
    for e in run.executions:
        if e.executor == "local":
            parts.append("local, one point after another")
            continue
        nodes = ", ".join(f"{n} at once on {node}" for node, n in sorted(e.nodes.items()))
        parts.append(f"{e.executor}: {nodes}")
    return "; then ".join(dict.fromkeys(parts)) if parts else DASH


def executor_rows(run: Run) -> Rows:
    return [("executor", executor_text(run))] if run.executions else []


def concurrency_notice(run: Run) -> list[str]:
    """Points measured side by side on one node shared its CPU and disk: their timings are
    not those of points measured alone."""
    most = max((n for e in run.executions for n in e.nodes.values()), default=1)
    if most <= 1:
        return []
    return [
        f"Points of this run ran side by side, up to {most} at once on one node "
        f"({executor_text(run)}): they shared its CPU and disk, so their durations are not "
        "those of points measured one at a time."
    ]


def of(recorded: int, planned: int) -> str:
    """``3 of 4``, or the count alone when nothing was planned."""
    return f"{recorded} of {planned}" if planned else str(recorded)


# -- observations ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Obs(Generic[K]):
    """One recorded point: what it measured (`key`, as the study types it) and its metrics."""

    key: K
    repetition: int
    metrics: Mapping[str, Metric]

    def get(self, name: str) -> float | None:
        return metric(self.metrics, name)


def values(group: Iterable[Obs[Any]], name: str) -> list[float]:
    """The metric's recorded values over a group of repetitions."""
    return [v for v in (o.get(name) for o in group) if v is not None]


def stat(group: Iterable[Obs[Any]], name: str) -> Spread | None:
    return spread([o.get(name) for o in group])


def median(s: Spread | None) -> float | None:
    return None if s is None else s.median


# -- charts and files ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Chart:
    """A chart as a report shows it: inline SVG (ours, so marked safe) and its PNG beside it."""

    key: str
    chart_id: str
    title: str
    svg: Markup
    png: str
    caption: str


def write_png(fig: Figure, path: Path) -> None:
    try:
        charts.save_png(fig, path)
    except OSError as exc:
        raise VacuumlabError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def draw(fig: Figure, chart_id: str, png: Path) -> Markup:
    """The figure as inline SVG, its PNG written beside the page."""
    svg = Markup(charts.svg_markup(fig, chart_id))
    # The layout found for the SVG holds for the PNG: laying the figure out again (the
    # constrained layout measures every label) took as long as drawing it.
    fig.set_layout_engine("none")
    write_png(fig, png)
    return svg


def chart(key: str, fig: Figure, place: tuple[str, str], caption: str, out_dir: Path) -> Chart:
    """A chart of the page: `place` is its section title and PNG file name."""
    title, png = place
    chart_id = f"chart-{key}"
    return Chart(key, chart_id, title, draw(fig, chart_id, out_dir / png), png, caption)


def write(path: Path, content: str) -> None:
    try:
        path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise VacuumlabError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def study_run(
    store: Store, run_id: int, study: str, *, unit: str = "points"
) -> tuple[Run, list[Point]]:
    """The run and its points, or a one-line error when it is another study's or has none."""
    run = store.run(run_id)
    if run.study != study:
        raise VacuumlabError(
            f"run {run_id} is a {run.study!r} run, not a {study!r} run; this report is for "
            f"{study} runs only"
        )
    points = store.points(run_id)
    if not points:
        raise VacuumlabError(
            f"run {run_id} has no recorded {unit} yet (status {run.status}); nothing to report"
        )
    return run, points


#: Draws a run's charts into the output directory and returns the page's view model.
Build = Callable[[Store, Run, Sequence[Point], Path], R]


def renderer(
    study: str, build: Build[Any], *, unit: str = "points"
) -> Callable[[Store, int, Path], Path]:
    """A study's ``render``: :func:`render_run` with the study's name and view model."""

    def render(store: Store, run_id: int, out_dir: Path) -> Path:
        """Render run ``run_id`` to ``out_dir/report.html`` (one self-contained file) plus one
        PNG per chart; return the HTML's path. Reads only the store. Raises VacuumlabError if
        the run does not exist, is another study's, has no points, or cannot be written."""
        return render_run(store, run_id, out_dir, study=study, build=build, unit=unit)

    return render


def render_run(
    store: Store, run_id: int, out_dir: Path, *, study: str, build: Build[Any], unit: str = "points"
) -> Path:
    """Render a run to `out_dir/report.html` with the study's template (`<study>.html.j2`);
    return the page's path. A one-line VacuumlabError for a wrong run or an unwritable place."""
    run, points = study_run(store, run_id, study, unit=unit)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VacuumlabError(f"{out_dir}: cannot create: {exc.strerror or exc}") from exc
    report = build(store, run, points, out_dir)
    template = f"{study.replace('-', '_')}.html.j2"
    path = out_dir / REPORT_FILE
    write(path, environment().get_template(template).render(r=report))
    return path
