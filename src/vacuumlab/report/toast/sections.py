"""The toast report's sections: sizes, timings and the work behind them beside the published
figures, the two FREEZE timings, heap and TOAST as autovacuum sees them, and the view model the
template renders. Plain strings, escaped by the template."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vacuumlab.records.toast import ToastConfig
from vacuumlab.records.toast_spec import (
    ARMS,
    DEFAULT_TOAST_TUPLE_TARGET,
    PLAIN_MAX_WIDTH,
    PUBLICATION,
    PUBLISHED,
    PUBLISHED_ROWS,
    rel_metric,
    vacuum_metric,
)
from vacuumlab.report.common import DASH, Cell, count, format_seconds, percent, text, times
from vacuumlab.report.page import (
    Chart,
    Header,
    header,
    median,
    overview,
    param_rows,
    planned_repeat,
    stat,
    status_notice,
    stored_config,
)
from vacuumlab.report.toast.charts import draw_charts
from vacuumlab.report.toast.data import (
    STEP_METRICS,
    Data,
    Rep,
    Variant,
    frozen_share,
    label,
    pages,
    read,
    rows_per_page,
    total,
)
from vacuumlab.report.toast.formats import TableRow, cell, mb_text, seconds, size
from vacuumlab.report.toast.parallel import ArmView, arms, parallel_note
from vacuumlab.report.toast.timeline import read_timelines
from vacuumlab.stats.aggregate import Spread
from vacuumlab.store import Point, Run, Store

#: Settings shown beside the run: what the study's numbers depend on.
SETTINGS = (
    "shared_buffers",
    "maintenance_work_mem",
    "max_wal_size",
    "wal_level",
    "full_page_writes",
    "wal_compression",
    "vacuum_freeze_min_age",
    "vacuum_cost_delay",
    "block_size",
)
PARAM_LABELS = (
    ("preset", "preset"),
    ("target", "target"),
    ("rows", "rows"),
    ("width", "value width (bytes)"),
    ("storages", "storages"),
    ("toast_tuple_targets", "toast_tuple_target (extended)"),
    ("repeat", "repetitions"),
    ("parallel", "parallel experiment"),
)


@dataclass(frozen=True, slots=True)
class Report:
    header: Header
    settings: list[tuple[str, str]]
    sizes: list[TableRow]
    size_note: str
    timings: list[TableRow]
    ratios: list[TableRow]
    timing_note: list[str]
    work: list[TableRow]
    freeze: list[TableRow]
    freeze_note: list[str]
    autovacuum: list[TableRow]
    arms: list[ArmView]
    parallel_note: list[str]
    charts: dict[str, Chart]


# -- header ----------------------------------------------------------------------------------


def _missing(config: ToastConfig | None, data: Data) -> list[str]:
    reps = planned_repeat(config)
    variants = [] if config is None else config.variants()
    planned = [label(v) for v in variants if v not in data.storage]
    if config is not None and config.parallel:
        planned += [f"parallel {a}" for a in ARMS if a not in data.parallel]
    groups = [(label(v), g) for v, g in data.storage.items()] + [
        (f"parallel {a}", g) for a, g in data.parallel.items()
    ]
    short = [f"{name}: {len(g)} of {reps}" for name, g in groups if len(g) < reps]
    notices = [f"Not measured: {'; '.join(planned)}."] if planned else []
    return notices + ([f"Missing repetitions: {'; '.join(short)}."] if short else [])


def _plain_notice(config: ToastConfig | None) -> list[str]:
    if config is None or config.width <= PLAIN_MAX_WIDTH or "plain" in config.storages:
        return []
    width = config.width
    return [
        f"Plain storage is left out: a {width:,}-byte value cannot be stored in the heap tuple, "
        f"which must fit one 8 kB page (at most {PLAIN_MAX_WIDTH:,} bytes of value)."
    ]


def _notices(run: Run, data: Data, unreadable: Sequence[str]) -> list[str]:
    config = stored_config(ToastConfig, run.params)
    notices = status_notice(run.status) + _missing(config, data) + _plain_notice(config)
    if data.skipped:
        notices.append(f"{data.skipped} point(s) of an unknown kind are left out.")
    notices += [f"The timeline of the {arm} arm could not be read." for arm in unreadable]
    return notices


def _header(run: Run, data: Data, unreadable: Sequence[str]) -> Header:
    tables = sum(len(g) for g in data.storage.values())
    arms_measured = sum(len(g) for g in data.parallel.values())
    counts = ("tables measured", str(tables)), ("parallel arms measured", str(arms_measured))
    return header(
        run,
        PUBLICATION,
        _notices(run, data, unreadable),
        overview(run, *counts),
        param_rows(run.params, PARAM_LABELS),
    )


def _settings(run: Run, data: Data) -> list[tuple[str, str]]:
    rows = [(name, text(run.settings.get(name, "not recorded"))) for name in SETTINGS]
    first = next((g[0] for g in data.storage.values() if g), None)
    for name in ("data_checksums", "default_toast_compression"):
        value = None if first is None else first.metrics.get(name)
        rows.append((name, text(value) if value is not None else "not recorded"))
    return rows


# -- sizes, timings, work --------------------------------------------------------------------


def _published(
    variant: Variant, keys: Sequence[str], fmt: Callable[[float], str]
) -> tuple[str, ...]:
    storage, target = variant
    if storage not in ("extended", "main") or target != DEFAULT_TOAST_TUPLE_TARGET:
        return tuple(DASH for _ in keys)
    return tuple(fmt(getattr(PUBLISHED[k], storage)) for k in keys)


def _size_row(variant: Variant, group: Sequence[Rep]) -> TableRow:
    names = [rel_metric(p, "bytes", s) for s in ("loaded", "updated") for p in ("heap", "toast")]
    cells = [cell(stat(group, n), size) for n in names]
    per_page = rows_per_page(group)
    cells.append(Cell(DASH if per_page is None else f"{per_page:,.1f}"))
    cells.append(cell(stat(group, "compressed_values"), count))
    keys = ("heap_mb_loaded", "toast_mb_loaded", "heap_mb_updated", "toast_mb_updated")
    return TableRow((label(variant),), tuple(cells), _published(variant, keys, mb_text))


def _timing_row(variant: Variant, group: Sequence[Rep]) -> TableRow:
    cells = tuple(cell(stat(group, name), seconds) for name in STEP_METRICS)
    keys = ("update_s", "vacuum_s", "freeze_s")
    return TableRow((label(variant),), cells, _published(variant, keys, format_seconds))


def _ratio_rows(storage: Mapping[Variant, list[Rep]]) -> list[TableRow]:
    """main ÷ extended, measured and published, when both were measured."""
    ext = storage.get(("extended", DEFAULT_TOAST_TUPLE_TARGET))
    main = storage.get(("main", DEFAULT_TOAST_TUPLE_TARGET))
    if not ext or not main:
        return []
    cells = []
    for name in STEP_METRICS:
        a, b = median(stat(main, name)), median(stat(ext, name))
        cells.append(Cell(times(None if a is None or not b else a / b)))
    seed = tuple(
        times(PUBLISHED[k].main / PUBLISHED[k].extended)
        for k in ("update_s", "vacuum_s", "freeze_s")
    )
    return [TableRow(("main ÷ extended",), tuple(cells), seed)]


def _timing_note(storage: Mapping[Variant, list[Rep]]) -> list[str]:
    """Main against plain: the same row in line, the same WAL, and yet not the same UPDATE."""
    main = storage.get(("main", DEFAULT_TOAST_TUPLE_TARGET))
    plain = storage.get(("plain", DEFAULT_TOAST_TUPLE_TARGET))
    if not main or not plain:
        return []
    times_ = [median(stat(g, "update_s")) for g in (main, plain)]
    wal = [median(stat(g, "update_wal_bytes")) for g in (main, plain)]
    if None in times_ or None in wal:
        return []
    return [
        f"Main and plain both keep the value in the heap, and their UPDATEs wrote "
        f"{size(wal[0])} and {size(wal[1])} of WAL; yet main's took {seconds(times_[0])} s "
        f"and plain's {seconds(times_[1])} s. A new row version over 2032 bytes goes through "
        "the toaster, which tries again to compress a main value, in vain when it is "
        "incompressible (heaptoast.c, heap_toast_insert_or_update, its third round); a plain "
        "value it leaves alone."
    ]


def _both(group: Sequence[Rep], field: str) -> Spread | None:
    """The plain VACUUM's figure, heap and TOAST together."""
    return total(group, *(vacuum_metric("vacuum", p, field) for p in ("heap", "toast")))


def _work_row(variant: Variant, group: Sequence[Rep]) -> TableRow:
    cells = (
        cell(stat(group, "update_wal_bytes"), size),
        cell(stat(group, "update_wal_fpi"), count),
        cell(stat(group, "update_buffers_dirtied"), count),
        cell(stat(group, vacuum_metric("vacuum", "heap", "pages_scanned")), count),
        cell(stat(group, vacuum_metric("vacuum", "toast", "pages_scanned")), count),
        cell(
            total(
                group, *(vacuum_metric("vacuum", p, "buffer_dirtied") for p in ("heap", "toast"))
            ),
            count,
        ),
        cell(
            total(group, *(vacuum_metric("vacuum", p, "wal_bytes") for p in ("heap", "toast"))),
            size,
        ),
    )
    return TableRow((label(variant),), cells)


# -- freeze ----------------------------------------------------------------------------------


def _freeze_row(variant: Variant, group: Sequence[Rep]) -> TableRow:
    cells = (
        cell(stat(group, "freeze_updated_s"), seconds),
        cell(pages(group, "freeze_updated", "pages_scanned"), count),
        cell(pages(group, "freeze_updated", "frozen_pages"), count),
        cell(stat(group, "freeze_vacuumed_s"), seconds),
        cell(pages(group, "freeze_vacuumed", "pages_scanned"), count),
        Cell(percent(frozen_share(group, "heap"))),
        Cell(percent(frozen_share(group, "toast"))),
    )
    return TableRow((label(variant),), cells)


def _freeze_note(storage: Mapping[Variant, list[Rep]], checksums: str | None) -> list[str]:
    """What the two FREEZE timings show, in the run's own numbers."""
    pairs = [
        (median(stat(g, "freeze_vacuumed_s")), median(stat(g, "freeze_updated_s")))
        for g in storage.values()
    ]
    b = [x for x, _ in pairs if x is not None]
    a = [y for _, y in pairs if y is not None]
    if not a or not b:
        return ["No table has both FREEZE timings."]
    scanned = [median(pages(g, "freeze_vacuumed", "pages_scanned")) for g in storage.values()]
    known = [s for s in scanned if s is not None]
    first = (
        f"FREEZE (b), after the plain VACUUM, took {seconds(min(b))}–{seconds(max(b))} s across "
        f"the tables, against {seconds(min(a))}–{seconds(max(a))} s for FREEZE (a), the same "
        f"state frozen straight after the UPDATE"
    )
    if known:
        first += f"; (b) scanned at most {count(max(known))} pages"
    why = (
        "(b) is nearly free because the plain VACUUM had already frozen the pages and marked them "
        "all-frozen in the visibility map (the share per relation is in the table), and an "
        "aggressive VACUUM skips all-frozen pages (vacuumlazy.c; runs shorter than 32 pages, "
        "SKIP_PAGES_THRESHOLD, are read anyway). Since PostgreSQL 16 vacuum freezes a page whose "
        "tuples are all visible when that costs no extra full-page image, because pruning or "
        "setting hint bits already logged one (page-level freezing; on 17 and later in "
        "pruneheap.c, heap_page_prune_and_freeze)"
    )
    why += (
        f"; with data_checksums {checksums}, setting hint bits after a checkpoint logs one."
        if checksums in ("on", "off")
        else "."
    )
    seed = (
        "The post's VACUUM FREEZE ran after its VACUUM too, yet took longer than it: its server "
        "(2021) froze only tuples older than vacuum_freeze_min_age, so the FREEZE still had "
        "every live tuple to freeze: 1302 MB either way, in the TOAST relation for extended, "
        "in the heap for main, hence its two nearly equal figures. (a) is the nearest "
        "measurement here: it freezes the same live data (pages frozen, in the table), and "
        "also removes the UPDATE's dead row versions, which fill the heap of an in-line table."
    )
    return [first + ".", why, seed]


# -- what autovacuum sees --------------------------------------------------------------------


_STAGE_LABELS = {
    "loaded": "loaded",
    "updated": "after UPDATE",
    "vacuumed": "after VACUUM",
    "frozen": "after FREEZE",
}


def _visible(group: Sequence[Rep], part: str, stage: str) -> str:
    visible = median(stat(group, rel_metric(part, "relallvisible", stage)))
    pages = median(stat(group, rel_metric(part, "relpages", stage)))
    if visible is None or pages is None:
        return DASH
    return f"{visible:,.0f} / {pages:,.0f}"


def _autovacuum_row(variant: Variant, stage: str, group: Sequence[Rep]) -> TableRow:
    cells: list[Cell] = []
    for part in ("heap", "toast"):
        cells += [
            cell(stat(group, rel_metric(part, "n_live_tup", stage)), count),
            cell(stat(group, rel_metric(part, "n_dead_tup", stage)), count),
            Cell(_visible(group, part, stage)),
            cell(stat(group, rel_metric(part, "frozenxid_age", stage)), count),
        ]
    return TableRow((label(variant), _STAGE_LABELS[stage]), tuple(cells))


def _autovacuum_rows(storage: Mapping[Variant, list[Rep]]) -> list[TableRow]:
    return [_autovacuum_row(v, stage, g) for v, g in storage.items() for stage in _STAGE_LABELS]


def _size_note(run: Run, storage: Mapping[Variant, list[Rep]]) -> str:
    config = stored_config(ToastConfig, run.params)
    seed = (
        f"The post's 1302 MB for {PUBLISHED_ROWS:,} rows, in line and out of line alike, means "
        "three rows per 8 kB page: values of about 2.0 to 2.6 kB (the paper preset uses 2,600 "
        "bytes)."
    )
    main = storage.get(("main", DEFAULT_TOAST_TUPLE_TARGET))
    per_page = None if main is None else rows_per_page(main)
    if config is None or per_page is None:
        return seed
    return f"At {config.width:,} bytes a main-storage heap page holds {per_page:,.1f} rows. " + seed


def build_report(store: Store, run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    """Draw the run's charts (writing their PNGs to `out_dir`) and return the view model."""
    data = read(points)
    timelines, broken = read_timelines(data)
    first = next((g[0] for g in data.storage.values() if g), None)
    checksums = None if first is None else first.metrics.get("data_checksums")
    return Report(
        header=_header(run, data, broken),
        settings=_settings(run, data),
        sizes=[_size_row(v, g) for v, g in data.storage.items()],
        size_note=_size_note(run, data.storage),
        timings=[_timing_row(v, g) for v, g in data.storage.items()],
        ratios=_ratio_rows(data.storage),
        timing_note=_timing_note(data.storage),
        work=[_work_row(v, g) for v, g in data.storage.items()],
        freeze=[_freeze_row(v, g) for v, g in data.storage.items()],
        freeze_note=_freeze_note(data.storage, checksums if isinstance(checksums, str) else None),
        autovacuum=_autovacuum_rows(data.storage),
        arms=arms(data, timelines),
        parallel_note=parallel_note(data, timelines),
        charts=draw_charts(data, timelines, out_dir),
    )
