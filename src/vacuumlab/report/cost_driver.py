"""The cost-driver report: one self-contained HTML file, and a PNG per chart, from the store alone.

`render_cost_driver_report` reads a cost-driver run (parameters, settings, points and their
metrics) from the results store and nothing else, so rendering the same run twice gives
byte-identical files. It asks the seed's question of the run: is an autovacuum's duration
driven by the dead tuples it removes or by the pages it dirties?

Only autovacuum points (mode "autovacuum") enter the main analysis; manual points, an
unthrottled VACUUM of the same table, are compared with them in a section of their own and
give the work-time part of the predicted duration.

No JavaScript, nothing loaded: charts are inline SVG, the CSS is in the page, every string from
the store is escaped by Jinja2's autoescaping, and only the generated SVG is marked safe.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from markupsafe import Markup
from matplotlib.figure import Figure

from vacuumlab.errors import VacuumlabError
from vacuumlab.report import charts
from vacuumlab.report import cost_driver_charts as cdc
from vacuumlab.report.common import (
    DASH,
    Cell,
    Chart,
    count,
    duration,
    environment,
    machine_rows,
    metric,
    percent,
    study_run,
    text,
    times,
    when,
    write_png,
)
from vacuumlab.stats.aggregate import Fit, Spread, linear_fit, ratio, spread
from vacuumlab.store import Metric, Point, Run, Store
from vacuumlab.studies.cost_driver_spec import (
    PUBLISHED_COMPACT_50_BY_INDEXES,
    PUBLISHED_ZERO_INDEX,
    STUDY,
)

REPORT_FILE = "report.html"
NOT_PUBLISHED = "not published"
AUTOVACUUM = "autovacuum"
MANUAL = "manual"

#: The server settings that make up the cost model, in the order the report lists them.
COST_SETTINGS = (
    "vacuum_cost_page_hit",
    "vacuum_cost_page_miss",
    "vacuum_cost_page_dirty",
    "autovacuum_vacuum_cost_limit",
    "autovacuum_vacuum_cost_delay",
    "vacuum_cost_limit",
    "vacuum_cost_delay",
    "autovacuum_naptime",
    "maintenance_work_mem",
    "shared_buffers",
)

#: Where a point's duration comes from, in order of preference, with what each one is.
DURATION_SOURCES = (
    (
        "duration_stats_s",
        "the server's own count (the total_autovacuum_time delta, or VACUUM's elapsed time)",
    ),
    ("duration_log_s", "the elapsed time of the autovacuum log line"),
    ("duration_wall_s", "the wall clock from enabling autovacuum to seeing it done"),
)

#: chart key -> (section title, PNG file).
CHARTS = {
    "dirty": ("Duration against dirty pages", "dirty.png"),
    "indexes": ("Duration against index count", "indexes.png"),
    "heatmap": ("Every combination at a glance", "heatmap.png"),
    "writers": ("Who wrote the pages", "writers.png"),
    "predicted": ("Predicted against measured", "predicted.png"),
}

_STATUS_NOTICE = {
    "running": "This run has not finished (it is still running, or it was killed without "
    "recording an end): the report shows only the combinations recorded so far.",
    "interrupted": "This run was interrupted: the report shows only the combinations "
    "recorded before the interruption.",
    "failed": "This run failed: the report shows only the combinations recorded before the "
    "failure.",
}

_PARAM_LABELS = (
    ("preset", "preset"),
    ("target", "target"),
    ("rows", "rows"),
    ("distributions", "distributions"),
    ("dead_pcts", "dead shares (%)"),
    ("indexes", "index counts"),
    ("repeat", "repetitions"),
    ("manual", "manual VACUUM comparison"),
)

#: (distribution, dead %, index count)
Combo = tuple[str, int, int]


# -- the view model: plain strings, escaped by the template --------------------------------


@dataclass(frozen=True, slots=True)
class TableRow:
    """A row: its leading header cells, its measured cells and, where the seed published a
    figure for it, the published cells."""

    head: tuple[str, ...]
    cells: tuple[Cell, ...]
    published: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Report:
    run_id: int
    status: str
    notices: list[str]
    note: str | None
    overview: list[tuple[str, str]]
    machine: list[tuple[str, str]]
    params: list[tuple[str, str]]
    cost_settings: list[tuple[str, str]]
    server_settings: list[tuple[str, str]]
    duration_note: str
    seed: list[TableRow]
    charts: list[Chart]
    slopes: list[TableRow]
    published_slope: TableRow
    by_index_columns: list[str]
    by_index: list[TableRow]
    blocks: list[TableRow]
    manual: list[TableRow]


# -- reading the store ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Obs:
    """One recorded point: its combination, mode, metrics and chosen duration."""

    combo: Combo
    mode: str
    repetition: int
    metrics: Mapping[str, Metric]
    duration: float | None
    source: str | None

    def get(self, name: str) -> float | None:
        return metric(self.metrics, name)


@dataclass(frozen=True, slots=True)
class _Data:
    """The run's observations, grouped by combination in report order."""

    auto: dict[Combo, list[_Obs]]
    manual: dict[Combo, list[_Obs]]
    skipped: int

    def all(self) -> list[_Obs]:
        return [o for group in (*self.auto.values(), *self.manual.values()) for o in group]


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _duration_of(metrics: Mapping[str, Metric]) -> tuple[float | None, str | None]:
    for name, _ in DURATION_SOURCES:
        value = metric(metrics, name)
        if value is not None:
            return value, name
    return None, None


def _observation(point: Point) -> _Obs | None:
    p = point.params
    distribution, dead, indexes = p.get("distribution"), p.get("dead_pct"), p.get("indexes")
    if not isinstance(distribution, str) or not _is_int(dead) or not _is_int(indexes):
        return None
    duration, source = _duration_of(point.metrics)
    mode = str(p.get("mode") or AUTOVACUUM)
    return _Obs(
        (distribution, dead, indexes), mode, point.repetition, point.metrics, duration, source
    )


def _combo_key(combo: Combo) -> tuple[int, str, int, int]:
    distribution, dead, indexes = combo
    known = cdc.KNOWN_DISTRIBUTIONS
    rank = known.index(distribution) if distribution in known else len(known)
    return rank, distribution, dead, indexes


def _group(observations: Iterable[_Obs]) -> dict[Combo, list[_Obs]]:
    groups: dict[Combo, list[_Obs]] = {}
    for o in sorted(observations, key=lambda o: (_combo_key(o.combo), o.repetition)):
        groups.setdefault(o.combo, []).append(o)
    return groups


def _read(points: Sequence[Point]) -> _Data:
    observations = [_observation(p) for p in points]
    found = [o for o in observations if o is not None]
    auto = [o for o in found if o.mode == AUTOVACUUM]
    manual = [o for o in found if o.mode == MANUAL]
    return _Data(_group(auto), _group(manual), len(points) - len(auto) - len(manual))


# -- statistics ----------------------------------------------------------------------------


def _durations(observations: Sequence[_Obs]) -> Spread | None:
    return spread([o.duration for o in observations])


def _stat(observations: Sequence[_Obs], name: str) -> Spread | None:
    return spread([o.get(name) for o in observations])


def _sum_of(o: _Obs, *names: str) -> float | None:
    values = [o.get(name) for name in names]
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _median(s: Spread | None) -> float | None:
    return None if s is None else s.median


def _dirty_pct(o: _Obs) -> float | None:
    pct = o.get("dirty_pct")
    if pct is not None:
        return pct
    dirty, heap = o.get("dirty_pages"), o.get("heap_pages")
    return None if dirty is None or not heap else dirty / heap * 100


def _lines(auto: Mapping[Combo, list[_Obs]]) -> dict[tuple[str, int], list[_Obs]]:
    """Observations by distribution × dead share, across index counts."""
    lines: dict[tuple[str, int], list[_Obs]] = {}
    for (distribution, dead, _), group in auto.items():
        lines.setdefault((distribution, dead), []).extend(group)
    return lines


def _index_fit(observations: Sequence[_Obs]) -> Fit | None:
    pairs = [(float(o.combo[2]), o.duration) for o in observations if o.duration is not None]
    return linear_fit([x for x, _ in pairs], [y for _, y in pairs])


# -- formatting ----------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    return DASH if value is None else cdc.format_seconds(value)


def _median_cell(s: Spread | None) -> Cell:
    if s is None:
        return Cell(DASH)
    return Cell(_seconds(s.median), f"[{_seconds(s.q1)}, {_seconds(s.q3)}]")


def _indexes_text(count: int) -> str:
    return "1 index" if count == 1 else f"{count} indexes"


def _combo_text(combo: Combo) -> str:
    distribution, dead, indexes = combo
    return f"{distribution} {dead} %, {_indexes_text(indexes)}"


def _combo_head(combo: Combo) -> tuple[str, ...]:
    return combo[0], f"{combo[1]} %", str(combo[2])


def _param_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(text(v) for v in value) if value else DASH
    if _is_int(value) and abs(value) >= 10_000:
        return f"{value:,}"
    return text(value)


# -- header: notices, run, parameters ------------------------------------------------------


def _ints(value: Any) -> list[int]:
    return [v for v in value if _is_int(v)] if isinstance(value, list) else []


def _planned(params: Mapping[str, Any]) -> list[Combo]:
    raw = params.get("distributions")
    distributions = [d for d in raw if isinstance(d, str)] if isinstance(raw, list) else []
    combos = itertools.product(
        distributions, _ints(params.get("dead_pcts")), _ints(params.get("indexes"))
    )
    return sorted(combos, key=_combo_key)


def _repeat(params: Mapping[str, Any]) -> int:
    value = params.get("repeat")
    return value if _is_int(value) and value > 0 else 1


def _missing_notices(run: Run, data: _Data) -> list[str]:
    planned = _planned(run.params)
    repeat = _repeat(run.params)
    groups = [("autovacuum", data.auto)]
    if run.params.get("manual") is True:
        groups.append(("manual VACUUM", data.manual))
    notices: list[str] = []
    for label, recorded in groups:
        missing = [_combo_text(c) for c in planned if c not in recorded]
        if missing:
            notices.append(f"Not measured ({label}): {'; '.join(missing)}.")
        short = [
            f"{_combo_text(c)}: {len(g)} of {repeat}"
            for c, g in recorded.items()
            if len(g) < repeat
        ]
        if short:
            notices.append(f"Missing repetitions ({label}): {'; '.join(short)}.")
    return notices


def _notices(run: Run, data: _Data) -> list[str]:
    notices = [_STATUS_NOTICE[run.status]] if run.status in _STATUS_NOTICE else []
    notices += _missing_notices(run, data)
    if not data.auto:
        notices.append("No autovacuum point is recorded: the analysis below is empty.")
    if data.skipped:
        notices.append(
            f"{data.skipped} point(s) with a missing or unknown distribution, dead share, "
            "index count or mode are left out."
        )
    return notices


def _overview(run: Run, data: _Data) -> list[tuple[str, str]]:
    planned = len(_planned(run.params)) * _repeat(run.params)
    auto = sum(len(g) for g in data.auto.values())
    manual = sum(len(g) for g in data.manual.values())
    rows = [
        ("status", run.status),
        ("started", when(run.started_at)),
        ("ended", when(run.ended_at)),
        ("duration", duration(run.started_at, run.ended_at)),
        ("server", run.server_version),
        ("autovacuum runs recorded", _of(auto, planned)),
    ]
    if manual or run.params.get("manual") is True:
        rows.append(("manual VACUUM runs recorded", _of(manual, planned)))
    return rows


def _of(recorded: int, planned: int) -> str:
    return f"{recorded} of {planned}" if planned else str(recorded)


def _param_rows(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    known = {key for key, _ in _PARAM_LABELS}
    rows = [(label, _param_text(params.get(key))) for key, label in _PARAM_LABELS]
    return rows + [(key, _param_text(params[key])) for key in sorted(params) if key not in known]


def _duration_note(data: _Data) -> str:
    observations = data.all()
    counts = Counter(o.source for o in observations)
    used = [
        f"{name} ({what}) for {counts[name]} of {len(observations)} points"
        for name, what in DURATION_SOURCES
        if counts[name]
    ]
    if not used:
        return "No point has a duration: every duration below is missing."
    lacking = counts[None]
    tail = f" {lacking} point(s) have no duration and are left out." if lacking else ""
    return f"Duration is {'; '.join(used)}.{tail}"


# -- section 2: pages, not tuples ----------------------------------------------------------


def _published_seed(dead: int) -> tuple[str, ...]:
    published = PUBLISHED_ZERO_INDEX.get(dead)
    if published is None:
        return NOT_PUBLISHED, NOT_PUBLISHED, NOT_PUBLISHED
    compact, spread_s = published
    return f"{compact:.1f}", f"{spread_s:.1f}", times(spread_s / compact)


def _seed_rows(auto: Mapping[Combo, list[_Obs]]) -> list[TableRow]:
    measured = {d for (dist, d, k) in auto if k == 0 and dist in cdc.KNOWN_DISTRIBUTIONS}
    rows = []
    for dead in sorted(measured | set(PUBLISHED_ZERO_INDEX)):
        compact = _durations(auto.get(("compact", dead, 0), []))
        spread_s = _durations(auto.get(("spread", dead, 0), []))
        cells = (
            _median_cell(compact),
            _median_cell(spread_s),
            Cell(times(ratio(spread_s, compact))),
        )
        rows.append(TableRow((f"{dead} %",), cells, _published_seed(dead)))
    return rows


# -- section 3b: slopes --------------------------------------------------------------------


def _fit_cells(fit: Fit | None) -> tuple[Cell, ...]:
    if fit is None:
        return tuple(Cell(DASH) for _ in range(5))
    relative = fit.slope / fit.intercept * 100 if fit.intercept > 0 else None
    r2 = DASH if fit.r2 is None else f"{fit.r2:.3f}"
    return (
        Cell(f"{fit.slope:.2f}"),
        Cell(_seconds(fit.intercept)),
        Cell(percent(relative)),
        Cell(r2),
        Cell(str(fit.n)),
    )


def _slope_rows(auto: Mapping[Combo, list[_Obs]]) -> list[TableRow]:
    return [
        TableRow((distribution, f"{dead} %"), _fit_cells(_index_fit(observations)))
        for (distribution, dead), observations in _lines(auto).items()
    ]


def _published_slope() -> TableRow:
    series = PUBLISHED_COMPACT_50_BY_INDEXES
    fit = linear_fit([float(k) for k in range(len(series))], list(series))
    return TableRow(("compact", "50 %"), _fit_cells(fit), ("seed 001, medians, ≈5 s per index",))


def _by_index(auto: Mapping[Combo, list[_Obs]]) -> tuple[list[str], list[TableRow]]:
    """Compact 50 % by index count: measured medians beside the seed's."""
    published = dict(enumerate(PUBLISHED_COMPACT_50_BY_INDEXES))
    measured = {
        k: _durations(g) for (d, dead, k), g in auto.items() if (d, dead) == ("compact", 50)
    }
    columns = sorted(set(published) | set(measured))
    here = tuple(_median_cell(measured.get(k)) for k in columns)
    seed = tuple(Cell(f"{published[k]:.1f}" if k in published else DASH) for k in columns)
    rows = [TableRow(("measured here",), here), TableRow(("seed 001 (10M rows)",), seed)]
    return [str(k) for k in columns], rows


# -- sections 4 and 5: blocks, manual against autovacuum -----------------------------------


def _block_row(combo: Combo, observations: Sequence[_Obs]) -> TableRow:
    heap = spread([_sum_of(o, "heap_blks_hit", "heap_blks_read") for o in observations])
    index = spread([_sum_of(o, "idx_blks_hit", "idx_blks_read") for o in observations])
    heap_m, index_m = _median(heap), _median(index)
    total = None if heap_m is None or index_m is None else heap_m + index_m
    share = None if total is None or total <= 0 or index_m is None else index_m / total * 100
    cells = (
        Cell(count(heap_m)),
        Cell(count(index_m)),
        Cell(percent(share)),
        Cell(count(_median(_stat(observations, "pages_scanned")))),
        Cell(count(_median(_stat(observations, "pages_removed")))),
        Cell(count(_median(_stat(observations, "index_pages_newly_deleted")))),
    )
    return TableRow(_combo_head(combo), cells)


def _block_rows(auto: Mapping[Combo, list[_Obs]]) -> list[TableRow]:
    return [_block_row(combo, group) for combo, group in auto.items()]


def _manual_row(combo: Combo, manual: Sequence[_Obs], auto: Sequence[_Obs]) -> TableRow:
    unthrottled, throttled = _durations(manual), _durations(auto)
    slowdown = ratio(throttled, unthrottled)
    asleep = ratio(_stat(auto, "delay_time_s"), throttled)
    implied = None if slowdown is None or slowdown <= 0 else (1 - 1 / slowdown) * 100
    cells = (
        _median_cell(unthrottled),
        _median_cell(throttled),
        Cell(times(slowdown)),
        Cell(percent(None if asleep is None else asleep * 100)),
        Cell(percent(implied)),
        Cell(f"{len(manual)} / {len(auto)}"),
    )
    return TableRow(_combo_head(combo), cells)


def _manual_rows(data: _Data) -> list[TableRow]:
    return [
        _manual_row(combo, group, data.auto.get(combo, [])) for combo, group in data.manual.items()
    ]


# -- charts --------------------------------------------------------------------------------


def _chart(key: str, fig: Figure, caption: str, out_dir: Path) -> Chart:
    title, png = CHARTS[key]
    chart_id = f"chart-{key}"
    svg = Markup(charts.svg_markup(fig, chart_id))
    write_png(fig, out_dir / png)
    return Chart(key, chart_id, title, svg, png, caption)


def _dirty_figure(auto: Mapping[Combo, list[_Obs]]) -> Figure:
    points = []
    for (distribution, _, indexes), group in auto.items():
        for o in group:
            pct = _dirty_pct(o)
            if pct is not None and o.duration is not None:
                points.append(cdc.DirtyPoint(distribution, indexes, pct, o.duration))
    return cdc.dirty_chart(points)


def _index_line(distribution: str, dead: int, observations: Sequence[_Obs]) -> cdc.IndexLine:
    counts = sorted({o.combo[2] for o in observations})
    stats = [_durations([o for o in observations if o.combo[2] == k]) for k in counts]
    return cdc.IndexLine(
        distribution,
        dead,
        tuple(counts),
        tuple(_median(s) for s in stats),
        tuple(None if s is None else s.q1 for s in stats),
        tuple(None if s is None else s.q3 for s in stats),
    )


def _index_figure(auto: Mapping[Combo, list[_Obs]]) -> Figure:
    lines = [_index_line(d, dead, obs) for (d, dead), obs in _lines(auto).items()]
    return cdc.index_chart(lines, dict(enumerate(PUBLISHED_COMPACT_50_BY_INDEXES)))


def _heatmap_figure(auto: Mapping[Combo, list[_Obs]]) -> Figure:
    lines = list(_lines(auto))
    columns = sorted({k for (_, _, k) in auto})
    values = [
        [_median(_durations(auto.get((d, dead, k), []))) for k in columns] for d, dead in lines
    ]
    return cdc.heatmap_chart([f"{d} {dead} %" for d, dead in lines], columns, values)


def _writer_panel(distribution: str, auto: Mapping[Combo, list[_Obs]]) -> cdc.WriterPanel:
    dead = max(p for (d, p, _) in auto if d == distribution)
    groups = {k: g for (d, p, k), g in auto.items() if (d, p) == (distribution, dead)}
    pages = {
        metric: tuple(_median(_stat(g, metric)) for g in groups.values())
        for metric, _, _ in cdc.WRITERS
    }
    return cdc.WriterPanel(f"{distribution}, {dead} % dead", tuple(groups), pages)


def _writers_figure(auto: Mapping[Combo, list[_Obs]]) -> Figure:
    distributions = cdc.distribution_order(d for (d, _, _) in auto)
    return cdc.writers_chart([_writer_panel(d, auto) for d in distributions])


def _work_times(data: _Data) -> dict[Combo, float]:
    """Median unthrottled (manual) duration by combination."""
    times = {c: _median(_durations(g)) for c, g in data.manual.items()}
    return {c: t for c, t in times.items() if t is not None}


def _prediction_pairs(data: _Data) -> tuple[list[cdc.Pair], list[cdc.Pair], int]:
    work = _work_times(data)
    durations: list[cdc.Pair] = []
    delays: list[cdc.Pair] = []
    with_work = 0
    for combo, group in data.auto.items():
        for o in group:
            predicted, slept = o.get("predicted_delay_s"), o.get("delay_time_s")
            if predicted is None:
                continue
            if slept is not None:
                delays.append(cdc.Pair(combo[0], predicted, slept))
            if o.duration is not None:
                with_work += combo in work
                durations.append(cdc.Pair(combo[0], predicted + work.get(combo, 0.0), o.duration))
    return durations, delays, with_work


# -- captions ------------------------------------------------------------------------------


def _prediction_caption(pairs: int, with_work: int) -> str:
    if with_work == 0:
        base = (
            "No manual VACUUM of the same combination is recorded, so the work time is taken as "
            "0 and the prediction is the predicted sleep alone: points should sit a little above "
            "the line, by the time vacuum spends working rather than sleeping."
        )
    else:
        base = (
            f"For {with_work} of {pairs} runs the median duration of the manual, unthrottled "
            "VACUUM of the same combination is added as the work time; for the others it is 0."
        )
    return (
        "Left: predicted duration = predicted_delay_s (the cost model's sleep: cost accrued "
        f"÷ cost limit × cost delay) + work time, against the measured duration. {base} Right: "
        "the time actually spent asleep in the cost-based delay (delay_time_s) against "
        "predicted_delay_s. Points on the dashed y = x line mean the cost model explains the "
        "duration: the delay, not the work, sets the pace."
    )


_CAPTIONS = {
    "dirty": "Each marker is one autovacuum run. Look at whether the markers line up along "
    "the dirty-page share whatever their distribution: a spread DELETE dirties nearly every "
    "page at any dead share, so its runs stay at the right and take about as long at 10 % as at "
    "50 %, while compact runs climb with their dead share. Markers of one colour and shape "
    "stacked vertically are the index-count effect.",
    "indexes": "Median over the repetitions, with the interquartile range as error bars. "
    "Look at the slopes: each index adds a roughly constant time, fitted in the table below. "
    "Purple: the seed's compact 50 % series (10 million rows) on its own right-hand axis, "
    "for the shape only.",
    "heatmap": "Median duration of every combination measured. Look down each column: the "
    "spread rows barely change with the dead share, the compact rows grow with it; along each "
    "row, durations grow with the index count. A dash marks a combination not measured.",
    "writers": "Median pages written, by whom, at the largest dead share of each distribution. "
    "Look at the red share: when the autovacuum worker writes its own dirty pages (a full "
    "ring of buffers), each write costs it time; with more indexes more of the writing falls "
    "to the worker. The stacks are medians of each writer, so they need not add up to the "
    "median total.",
}


# -- rendering -----------------------------------------------------------------------------


def _charts(data: _Data, out_dir: Path) -> list[Chart]:
    durations, delays, with_work = _prediction_pairs(data)
    figures = {
        "dirty": _dirty_figure(data.auto),
        "indexes": _index_figure(data.auto),
        "heatmap": _heatmap_figure(data.auto),
        "writers": _writers_figure(data.auto),
        "predicted": cdc.prediction_chart(durations, delays),
    }
    captions = _CAPTIONS | {"predicted": _prediction_caption(len(durations), with_work)}
    return [_chart(key, fig, captions[key], out_dir) for key, fig in figures.items()]


def build_report(run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    """Draw the run's charts (writing their PNGs to `out_dir`) and return the view model the
    template renders."""
    data = _read(points)
    columns, by_index = _by_index(data.auto)
    return Report(
        run_id=run.id,
        status=run.status,
        notices=_notices(run, data),
        note=run.note,
        overview=_overview(run, data),
        machine=machine_rows(run.machine),
        params=_param_rows(run.params),
        cost_settings=[(name, run.settings.get(name, "not recorded")) for name in COST_SETTINGS],
        server_settings=sorted((str(k), text(v)) for k, v in run.settings.items()),
        duration_note=_duration_note(data),
        seed=_seed_rows(data.auto),
        charts=_charts(data, out_dir),
        slopes=_slope_rows(data.auto),
        published_slope=_published_slope(),
        by_index_columns=columns,
        by_index=by_index,
        blocks=_block_rows(data.auto),
        manual=_manual_rows(data),
    )


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise VacuumlabError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def render_cost_driver_report(store: Store, run_id: int, out_dir: Path) -> Path:
    """Render cost-driver run `run_id` to `out_dir/report.html` (one self-contained file) plus
    one PNG per chart; return the HTML's path.

    Reads only the store. Raises VacuumlabError if the run does not exist, is not a
    cost-driver run, has no points, or the files cannot be written.
    """
    run, points = study_run(store, run_id, STUDY)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VacuumlabError(f"{out_dir}: cannot create: {exc.strerror or exc}") from exc
    report = build_report(run, points, out_dir)
    html = environment().get_template("cost_driver.html.j2").render(r=report)
    path = out_dir / REPORT_FILE
    _write(path, html)
    return path
