"""The cost-driver report's sections: the PostgreSQL version and what in it bears on the
figures, pages against tuples beside the published figures, time per index, heap and index
blocks, manual against autovacuum, and the view model the template renders. Plain strings,
escaped by the template."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vacuumlab.model.versions import CHANGES, major_of
from vacuumlab.records.cost_driver import CostDriverConfig
from vacuumlab.records.cost_driver_spec import (
    PUBLICATION,
    PUBLISHED_COMPACT_50_BY_INDEXES,
    PUBLISHED_ZERO_INDEX,
    STUDY,
)
from vacuumlab.report.common import DASH, Cell, count, format_seconds, percent, times
from vacuumlab.report.cost_driver.charts import draw_charts
from vacuumlab.report.cost_driver.data import (
    DURATION_SOURCES,
    CdObs,
    Combo,
    Data,
    durations,
    index_fit,
    lines,
    planned,
    read,
    sum_of,
)
from vacuumlab.report.cost_driver.figures import KNOWN_DISTRIBUTIONS
from vacuumlab.report.page import (
    Chart,
    Header,
    header,
    median,
    of,
    overview,
    param_rows,
    planned_repeat,
    stat,
    status_notice,
    stored_config,
)
from vacuumlab.stats.aggregate import Fit, Spread, linear_fit, ratio, spread
from vacuumlab.store import Point, Run, Store

NOT_PUBLISHED = "not published"

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

PARAM_LABELS = (
    ("preset", "preset"),
    ("target", "target"),
    ("rows", "rows"),
    ("distributions", "distributions"),
    ("dead_pcts", "dead shares (%)"),
    ("indexes", "index counts"),
    ("repeat", "repetitions"),
    ("manual", "manual VACUUM comparison"),
)


@dataclass(frozen=True, slots=True)
class TableRow:
    """A row: its leading header cells, its measured cells and, where a figure was
    published for it, the published cells."""

    head: tuple[str, ...]
    cells: tuple[Cell, ...]
    published: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class VersionNote:
    """The PostgreSQL major the run ran on, what that version does that bears on the figures
    ("since 17: …"), and the index passes the autovacuums made, where the points record them."""

    major: int
    intro: str
    changes: list[str]
    index_passes: str | None


@dataclass(frozen=True, slots=True)
class Report:
    header: Header
    cost_settings: list[tuple[str, str]]
    duration_note: str
    version: VersionNote | None
    seed: list[TableRow]
    charts: list[Chart]
    slopes: list[TableRow]
    published_slope: TableRow
    by_index_columns: list[str]
    by_index: list[TableRow]
    blocks: list[TableRow]
    manual: list[TableRow]


# -- formatting ----------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    return DASH if value is None else format_seconds(value)


def _median_cell(s: Spread | None) -> Cell:
    if s is None:
        return Cell(DASH)
    return Cell(_seconds(s.median), f"[{_seconds(s.q1)}, {_seconds(s.q3)}]")


def _indexes_text(n: int) -> str:
    return "1 index" if n == 1 else f"{n} indexes"


def _combo_text(combo: Combo) -> str:
    distribution, dead, indexes = combo
    return f"{distribution} {dead} %, {_indexes_text(indexes)}"


def _combo_head(combo: Combo) -> tuple[str, ...]:
    return combo[0], f"{combo[1]} %", str(combo[2])


# -- header: notices, run, parameters ------------------------------------------------------


def _missing_notices(config: CostDriverConfig | None, data: Data) -> list[str]:
    combos, reps = planned(config), planned_repeat(config)
    groups = [("autovacuum", data.auto)]
    if config is not None and config.manual:
        groups.append(("manual VACUUM", data.manual))
    notices: list[str] = []
    for label, recorded in groups:
        missing = [_combo_text(c) for c in combos if c not in recorded]
        if missing:
            notices.append(f"Not measured ({label}): {'; '.join(missing)}.")
        short = [
            f"{_combo_text(c)}: {len(g)} of {reps}" for c, g in recorded.items() if len(g) < reps
        ]
        if short:
            notices.append(f"Missing repetitions ({label}): {'; '.join(short)}.")
    return notices


def _notices(run: Run, config: CostDriverConfig | None, data: Data) -> list[str]:
    notices = status_notice(run.status, "combinations") + _missing_notices(config, data)
    if not data.auto:
        notices.append("No autovacuum point is recorded: the analysis below is empty.")
    if data.skipped:
        notices.append(
            f"{data.skipped} point(s) with a missing or unknown distribution, dead share, "
            "index count or mode are left out."
        )
    return notices


def _header(run: Run, data: Data) -> Header:
    config = stored_config(CostDriverConfig, run.params)
    wanted = len(planned(config)) * planned_repeat(config)
    auto = sum(len(g) for g in data.auto.values())
    manual = sum(len(g) for g in data.manual.values())
    rows = [("autovacuum runs recorded", of(auto, wanted))]
    if manual or (config is not None and config.manual):
        rows.append(("manual VACUUM runs recorded", of(manual, wanted)))
    return header(
        run,
        PUBLICATION,
        _notices(run, config, data),
        overview(run, *rows),
        param_rows(run.params, PARAM_LABELS),
    )


def _duration_note(data: Data) -> str:
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


def _version_note(run: Run, data: Data) -> VersionNote | None:
    """What in the run's PostgreSQL bears on the figures; None when the recorded version
    names no major."""
    major = major_of(run.server_version)
    if major is None:
        return None
    changes = [
        f"since {c.since}: {c.what}" for c in CHANGES if c.since <= major and STUDY in c.studies
    ]
    intro = (
        f"Measured on PostgreSQL {major}. What this version does that bears on these figures:"
        if changes
        else f"Measured on PostgreSQL {major}, older than every change in vacuum that "
        "vacuumlab tracks for this study."
    )
    return VersionNote(major, intro, changes, _index_passes(data))


#: What a count of index passes says, by the count (2: two or more).
_PASSES = (
    (1, "made one"),
    (0, "made none (the index passes were skipped)"),
    (2, "made more than one (the dead tuple ids did not fit in the work memory at once)"),
)


def _index_passes(data: Data) -> str | None:
    """How many index passes the autovacuums of a table with indexes made (``index_scans``,
    from vacuum's log line), or None when no point records it."""
    found = [
        int(scans)
        for (_, _, indexes), group in data.auto.items()
        if indexes > 0
        for o in group
        if (scans := o.get("index_scans")) is not None
    ]
    if not found:
        return None
    kinds = Counter(min(n, 2) for n in found)
    parts = [f"{kinds[n]} {what}" for n, what in _PASSES if kinds[n]]
    return (
        f"Index passes (index_scans in vacuum's log line): of the {len(found)} autovacuums "
        f"of a table with indexes, {', '.join(parts)}."
    )


# -- pages, not tuples ---------------------------------------------------------------------


def _published_seed(dead: int) -> tuple[str, ...]:
    published = PUBLISHED_ZERO_INDEX.get(dead)
    if published is None:
        return NOT_PUBLISHED, NOT_PUBLISHED, NOT_PUBLISHED
    compact, spread_s = published
    return f"{compact:.1f}", f"{spread_s:.1f}", times(spread_s / compact)


def _seed_rows(auto: Mapping[Combo, list[CdObs]]) -> list[TableRow]:
    measured = {d for (dist, d, k) in auto if k == 0 and dist in KNOWN_DISTRIBUTIONS}
    rows = []
    for dead in sorted(measured | set(PUBLISHED_ZERO_INDEX)):
        compact = durations(auto.get(("compact", dead, 0), []))
        spread_s = durations(auto.get(("spread", dead, 0), []))
        cells = (
            _median_cell(compact),
            _median_cell(spread_s),
            Cell(times(ratio(spread_s, compact))),
        )
        rows.append(TableRow((f"{dead} %",), cells, _published_seed(dead)))
    return rows


# -- time per index ------------------------------------------------------------------------


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


def _slope_rows(auto: Mapping[Combo, list[CdObs]]) -> list[TableRow]:
    return [
        TableRow((distribution, f"{dead} %"), _fit_cells(index_fit(observations)))
        for (distribution, dead), observations in lines(auto).items()
    ]


def _published_slope() -> TableRow:
    series = PUBLISHED_COMPACT_50_BY_INDEXES
    fit = linear_fit([float(k) for k in range(len(series))], list(series))
    return TableRow(
        ("compact", "50 %"), _fit_cells(fit), (f"{PUBLICATION.short()}, medians, ≈5 s per index",)
    )


def _by_index(auto: Mapping[Combo, list[CdObs]]) -> tuple[list[str], list[TableRow]]:
    """Compact 50 % by index count: measured medians beside the published ones."""
    published = dict(enumerate(PUBLISHED_COMPACT_50_BY_INDEXES))
    measured = {k: durations(g) for (d, dead, k), g in auto.items() if (d, dead) == ("compact", 50)}
    columns = sorted(set(published) | set(measured))
    here = tuple(_median_cell(measured.get(k)) for k in columns)
    seed = tuple(Cell(f"{published[k]:.1f}" if k in published else DASH) for k in columns)
    rows = [
        TableRow(("measured here",), here),
        TableRow((f"{PUBLICATION.short()} (10M rows)",), seed),
    ]
    return [str(k) for k in columns], rows


# -- blocks, manual against autovacuum -----------------------------------------------------


def _block_row(combo: Combo, observations: Sequence[CdObs]) -> TableRow:
    heap = spread([sum_of(o, "heap_blks_hit", "heap_blks_read") for o in observations])
    index = spread([sum_of(o, "idx_blks_hit", "idx_blks_read") for o in observations])
    heap_m, index_m = median(heap), median(index)
    total = None if heap_m is None or index_m is None else heap_m + index_m
    share = None if total is None or total <= 0 or index_m is None else index_m / total * 100
    cells = (
        Cell(count(heap_m)),
        Cell(count(index_m)),
        Cell(percent(share)),
        Cell(count(median(stat(observations, "pages_scanned")))),
        Cell(count(median(stat(observations, "pages_removed")))),
        Cell(count(median(stat(observations, "index_pages_newly_deleted")))),
    )
    return TableRow(_combo_head(combo), cells)


def _manual_row(combo: Combo, manual: Sequence[CdObs], auto: Sequence[CdObs]) -> TableRow:
    unthrottled, throttled = durations(manual), durations(auto)
    slowdown = ratio(throttled, unthrottled)
    asleep = ratio(stat(auto, "delay_time_s"), throttled)
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


def _manual_rows(data: Data) -> list[TableRow]:
    return [
        _manual_row(combo, group, data.auto.get(combo, [])) for combo, group in data.manual.items()
    ]


# -- the page ------------------------------------------------------------------------------


def build_report(store: Store, run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    """Draw the run's charts (writing their PNGs to `out_dir`) and return the view model the
    template renders."""
    data = read(points)
    columns, by_index = _by_index(data.auto)
    return Report(
        header=_header(run, data),
        cost_settings=[(name, run.settings.get(name, "not recorded")) for name in COST_SETTINGS],
        duration_note=_duration_note(data),
        version=_version_note(run, data),
        seed=_seed_rows(data.auto),
        charts=draw_charts(data, out_dir),
        slopes=_slope_rows(data.auto),
        published_slope=_published_slope(),
        by_index_columns=columns,
        by_index=by_index,
        blocks=[_block_row(combo, group) for combo, group in data.auto.items()],
        manual=_manual_rows(data),
    )
