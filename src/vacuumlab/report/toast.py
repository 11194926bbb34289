"""The TOAST report: one self-contained HTML file, and a PNG per chart, from the store alone.

`render_toast_report` reads a toast run (parameters, settings, points and their metrics,
the parallel experiment's timelines) from the results store and nothing else, so rendering
the same run twice gives byte-identical files. It answers the seed's questions with the run's
numbers: what wide values cost an UPDATE of a narrow column, VACUUM and VACUUM FREEZE when
they are kept in the heap rather than out of line; how autovacuum sees a table and its TOAST
relation; and what happens when both are vacuumed at once.

No JavaScript, nothing loaded: charts are inline SVG, the CSS is in the page, every string
from the store is escaped by Jinja2's autoescaping, and only the generated SVG is marked safe.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from markupsafe import Markup
from matplotlib.figure import Figure

from vacuumlab.errors import VacuumlabError
from vacuumlab.report import charts
from vacuumlab.report import toast_charts as tc
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
from vacuumlab.report.common import format_seconds
from vacuumlab.stats.aggregate import Spread, spread
from vacuumlab.store import Metric, Point, Run, Store
from vacuumlab.studies.toast_spec import (
    ARMS,
    DEFAULT_TOAST_TUPLE_TARGET,
    PAGE_BYTES,
    PLAIN_MAX_WIDTH,
    PUBLISHED,
    PUBLISHED_ROWS,
    STORAGES,
    STUDY,
    rel_metric,
    vacuum_metric,
    variant_label,
)

REPORT_FILE = "report.html"
MB = 2**20
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
CHARTS = {
    "sizes": ("Sizes: heap and TOAST", "sizes.png"),
    "timings": ("Timings beside the seed's", "timings.png"),
    "work": ("The work behind the timings", "work.png"),
    "timeline": ("Lock timeline of the parallel experiment", "timeline.png"),
}
_STATUS_NOTICE = {
    "running": "This run has not finished (it is still running, or it was killed without "
    "recording an end): the report shows only the points recorded so far.",
    "interrupted": "This run was interrupted: the report shows only the points recorded "
    "before the interruption.",
    "failed": "This run failed: the report shows only the points recorded before the failure.",
}
_PARAM_LABELS = (
    ("preset", "preset"),
    ("target", "target"),
    ("rows", "rows"),
    ("width", "value width (bytes)"),
    ("storages", "storages"),
    ("toast_tuple_targets", "toast_tuple_target (extended)"),
    ("repeat", "repetitions"),
    ("parallel", "parallel experiment"),
)
_ARM_TITLES = {
    "sequential": "sequential: one VACUUM of the table, heap then TOAST",
    "overlapping": "overlapping: the TOAST relation by name, and the whole table (the seed's)",
    "separate": "separate: the TOAST relation by name, and the table with PROCESS_TOAST false",
}
_ROLE_NAMES = {"toast": "TOAST session", "table": "table session"}
Variant = tuple[str, int]


# -- the view model: plain strings, escaped by the template ----------------------------------


@dataclass(frozen=True, slots=True)
class TableRow:
    """A row: its header cells, its measured cells and, where the seed published figures for
    it, the published cells."""

    head: tuple[str, ...]
    cells: tuple[Cell, ...]
    published: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ArmView:
    """One arm of the parallel experiment: what happened, in a sentence, and its figures."""

    arm: str
    title: str
    statements: tuple[tuple[str, str], ...]  # (session, the VACUUM it ran)
    sentences: tuple[str, ...]
    row: TableRow


@dataclass(frozen=True, slots=True)
class Report:
    run_id: int
    status: str
    notices: list[str]
    note: str | None
    overview: list[tuple[str, str]]
    machine: list[tuple[str, str]]
    params: list[tuple[str, str]]
    settings: list[tuple[str, str]]
    server_settings: list[tuple[str, str]]
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


# -- reading the store -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Obs:
    """One recorded point and its metrics."""

    repetition: int
    metrics: Mapping[str, Metric]

    def get(self, name: str) -> float | None:
        return metric(self.metrics, name)


@dataclass(frozen=True, slots=True)
class Data:
    """The run's storage points by table (report order) and parallel points by arm."""

    storage: dict[Variant, list[Obs]]
    parallel: dict[str, list[Obs]]
    skipped: int


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _variant_key(variant: Variant) -> tuple[int, str, int, int]:
    storage, target = variant
    known: tuple[str, ...] = STORAGES
    rank = known.index(storage) if storage in known else len(known)
    return rank, storage, target != DEFAULT_TOAST_TUPLE_TARGET, target


def _read(points: Sequence[Point]) -> Data:
    storage: dict[Variant, list[Obs]] = {}
    parallel: dict[str, list[Obs]] = {}
    skipped = 0
    for point in sorted(points, key=lambda p: p.repetition):
        p, obs = point.params, Obs(point.repetition, point.metrics)
        target = p.get("toast_tuple_target")
        if (
            p.get("experiment") == "storage"
            and isinstance(p.get("storage"), str)
            and _is_int(target)
        ):
            storage.setdefault((str(p["storage"]), target), []).append(obs)
        elif p.get("experiment") == "parallel" and p.get("arm") in ARMS:
            parallel.setdefault(str(p["arm"]), []).append(obs)
        else:
            skipped += 1
    ordered = {v: storage[v] for v in sorted(storage, key=_variant_key)}
    arms = {str(a): parallel[a] for a in ARMS if a in parallel}
    return Data(ordered, arms, skipped)


# -- statistics and formatting ---------------------------------------------------------------


def _stat(group: Sequence[Obs], name: str) -> Spread | None:
    return spread([o.get(name) for o in group])


def _sum(group: Sequence[Obs], *names: str) -> Spread | None:
    def total(o: Obs) -> float | None:
        values = [o.get(n) for n in names]
        return None if any(v is None for v in values) else sum(v or 0.0 for v in values)

    return spread([total(o) for o in group])


def _median(s: Spread | None) -> float | None:
    return None if s is None else s.median


def seconds(value: float | None) -> str:
    """Seconds as the cost-driver report writes them, with three significant digits below
    one second: a FREEZE of an all-frozen table takes a millisecond."""
    if value is None:
        return DASH
    return f"{value:.3g}" if abs(value) < 1 else format_seconds(value)


def size(value: float | None) -> str:
    """kB below 1 MB, MB with one decimal below 10 MB, whole MB above; MB are 2^20 bytes,
    as pg_size_pretty's are."""
    if value is None:
        return DASH
    if value < MB:
        return f"{value / 1024:,.0f} kB"
    return f"{value / MB:,.1f} MB" if value < 10 * MB else f"{value / MB:,.0f} MB"


def _cell(s: Spread | None, fmt: Callable[[float | None], str]) -> Cell:
    if s is None:
        return Cell(DASH)
    ci = f"[{fmt(s.q1)}, {fmt(s.q3)}]" if s.n > 1 else None
    return Cell(fmt(s.median), ci)


def _share(part: Spread | None, whole: Spread | None) -> float | None:
    if part is None or whole is None or whole.median <= 0:
        return None
    return part.median / whole.median * 100


def _param_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(text(v) for v in value) if value else DASH
    if _is_int(value) and abs(value) >= 10_000:
        return f"{value:,}"
    return text(value)


# -- header ----------------------------------------------------------------------------------


def _label(variant: Variant) -> str:
    return variant_label(*variant)


def _planned_variants(params: Mapping[str, Any]) -> list[Variant]:
    storages = [s for s in params.get("storages") or [] if isinstance(s, str)]
    targets = [t for t in params.get("toast_tuple_targets") or [] if _is_int(t)]
    return [
        (s, t)
        for s in storages
        for t in (targets if s == "extended" else [DEFAULT_TOAST_TUPLE_TARGET])
    ]


def _repeat(params: Mapping[str, Any]) -> int:
    value = params.get("repeat")
    return value if _is_int(value) and value > 0 else 1


def _missing(run: Run, data: Data) -> list[str]:
    repeat = _repeat(run.params)
    planned = [_label(v) for v in _planned_variants(run.params) if v not in data.storage]
    if run.params.get("parallel") is True:
        planned += [f"parallel {a}" for a in ARMS if a not in data.parallel]
    groups = [(_label(v), g) for v, g in data.storage.items()] + [
        (f"parallel {a}", g) for a, g in data.parallel.items()
    ]
    short = [f"{label}: {len(g)} of {repeat}" for label, g in groups if len(g) < repeat]
    notices = [f"Not measured: {'; '.join(planned)}."] if planned else []
    return notices + ([f"Missing repetitions: {'; '.join(short)}."] if short else [])


def _plain_notice(params: Mapping[str, Any]) -> list[str]:
    width, storages = params.get("width"), params.get("storages") or []
    if not _is_int(width) or width <= PLAIN_MAX_WIDTH or "plain" in storages:
        return []
    return [
        f"Plain storage is left out: a {width:,}-byte value cannot be stored in the heap tuple, "
        f"which must fit one 8 kB page (at most {PLAIN_MAX_WIDTH:,} bytes of value)."
    ]


def _notices(run: Run, data: Data, unreadable: Sequence[str]) -> list[str]:
    notices = [_STATUS_NOTICE[run.status]] if run.status in _STATUS_NOTICE else []
    notices += _missing(run, data) + _plain_notice(run.params)
    if data.skipped:
        notices.append(f"{data.skipped} point(s) of an unknown kind are left out.")
    notices += [f"The timeline of the {arm} arm could not be read." for arm in unreadable]
    return notices


def _overview(run: Run, data: Data) -> list[tuple[str, str]]:
    tables = sum(len(g) for g in data.storage.values())
    arms = sum(len(g) for g in data.parallel.values())
    return [
        ("status", run.status),
        ("started", when(run.started_at)),
        ("ended", when(run.ended_at)),
        ("duration", duration(run.started_at, run.ended_at)),
        ("server", run.server_version),
        ("tables measured", str(tables)),
        ("parallel arms measured", str(arms)),
    ]


def _param_rows(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    known = {key for key, _ in _PARAM_LABELS}
    rows = [(label, _param_text(params.get(key))) for key, label in _PARAM_LABELS]
    return rows + [(key, _param_text(params[key])) for key in sorted(params) if key not in known]


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


def _mb_text(value: float) -> str:
    return f"{value:,.0f} MB"


def _rows_per_page(group: Sequence[Obs]) -> float | None:
    """Rows per heap page after loading: pg_class.relpages is still 0 then (VACUUM and
    ANALYZE set it), so the pages are the heap's size over 8 kB."""
    rows = _median(_stat(group, "heap_n_live_tup_loaded"))
    heap = _median(_stat(group, "heap_bytes_loaded"))
    return None if rows is None or not heap else rows / (heap / PAGE_BYTES)


def _size_row(variant: Variant, group: Sequence[Obs]) -> TableRow:
    names = [rel_metric(p, "bytes", s) for s in ("loaded", "updated") for p in ("heap", "toast")]
    cells = [_cell(_stat(group, n), size) for n in names]
    per_page = _rows_per_page(group)
    cells.append(Cell(DASH if per_page is None else f"{per_page:,.1f}"))
    cells.append(_cell(_stat(group, "compressed_values"), count))
    keys = ("heap_mb_loaded", "toast_mb_loaded", "heap_mb_updated", "toast_mb_updated")
    return TableRow((_label(variant),), tuple(cells), _published(variant, keys, _mb_text))


_STEP_METRICS = ("update_s", "vacuum_s", "freeze_updated_s", "freeze_vacuumed_s")


def _timing_row(variant: Variant, group: Sequence[Obs]) -> TableRow:
    cells = tuple(_cell(_stat(group, name), seconds) for name in _STEP_METRICS)
    keys = ("update_s", "vacuum_s", "freeze_s")
    return TableRow((_label(variant),), cells, _published(variant, keys, format_seconds))


def _ratio_rows(storage: Mapping[Variant, list[Obs]]) -> list[TableRow]:
    """main ÷ extended, measured and published, when both were measured."""
    ext = storage.get(("extended", DEFAULT_TOAST_TUPLE_TARGET))
    main = storage.get(("main", DEFAULT_TOAST_TUPLE_TARGET))
    if not ext or not main:
        return []
    cells = []
    for name in _STEP_METRICS:
        a, b = _median(_stat(main, name)), _median(_stat(ext, name))
        cells.append(Cell(times(None if a is None or not b else a / b)))
    seed = tuple(
        times(PUBLISHED[k].main / PUBLISHED[k].extended)
        for k in ("update_s", "vacuum_s", "freeze_s")
    )
    return [TableRow(("main ÷ extended",), tuple(cells), seed)]


def _timing_note(storage: Mapping[Variant, list[Obs]]) -> list[str]:
    """Main against plain: the same row in line, the same WAL, and yet not the same UPDATE."""
    main = storage.get(("main", DEFAULT_TOAST_TUPLE_TARGET))
    plain = storage.get(("plain", DEFAULT_TOAST_TUPLE_TARGET))
    if not main or not plain:
        return []
    times_ = [_median(_stat(g, "update_s")) for g in (main, plain)]
    wal = [_median(_stat(g, "update_wal_bytes")) for g in (main, plain)]
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


def _work_row(variant: Variant, group: Sequence[Obs]) -> TableRow:
    cells = (
        _cell(_stat(group, "update_wal_bytes"), size),
        _cell(_stat(group, "update_wal_fpi"), count),
        _cell(_stat(group, "update_buffers_dirtied"), count),
        _cell(_stat(group, vacuum_metric("vacuum", "heap", "pages_scanned")), count),
        _cell(_stat(group, vacuum_metric("vacuum", "toast", "pages_scanned")), count),
        _cell(
            _sum(group, *(vacuum_metric("vacuum", p, "buffer_dirtied") for p in ("heap", "toast"))),
            count,
        ),
        _cell(
            _sum(group, *(vacuum_metric("vacuum", p, "wal_bytes") for p in ("heap", "toast"))), size
        ),
    )
    return TableRow((_label(variant),), cells)


# -- freeze ----------------------------------------------------------------------------------


def _pages(group: Sequence[Obs], step: str, field: str) -> Spread | None:
    return _sum(group, vacuum_metric(step, "heap", field), vacuum_metric(step, "toast", field))


def _frozen_share(group: Sequence[Obs], part: str) -> float | None:
    return _share(
        _stat(group, rel_metric(part, "relallfrozen", "vacuumed")),
        _stat(group, rel_metric(part, "relpages", "vacuumed")),
    )


def _freeze_row(variant: Variant, group: Sequence[Obs]) -> TableRow:
    cells = (
        _cell(_stat(group, "freeze_updated_s"), seconds),
        _cell(_pages(group, "freeze_updated", "pages_scanned"), count),
        _cell(_pages(group, "freeze_updated", "frozen_pages"), count),
        _cell(_stat(group, "freeze_vacuumed_s"), seconds),
        _cell(_pages(group, "freeze_vacuumed", "pages_scanned"), count),
        Cell(percent(_frozen_share(group, "heap"))),
        Cell(percent(_frozen_share(group, "toast"))),
    )
    return TableRow((_label(variant),), cells)


def _freeze_note(storage: Mapping[Variant, list[Obs]], checksums: str | None) -> list[str]:
    """What the two FREEZE timings show, in the run's own numbers."""
    pairs = [
        (_median(_stat(g, "freeze_vacuumed_s")), _median(_stat(g, "freeze_updated_s")))
        for g in storage.values()
    ]
    b = [x for x, _ in pairs if x is not None]
    a = [y for _, y in pairs if y is not None]
    if not a or not b:
        return ["No table has both FREEZE timings."]
    scanned = [_median(_pages(g, "freeze_vacuumed", "pages_scanned")) for g in storage.values()]
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
        "The seed's VACUUM FREEZE ran after its VACUUM too, yet took longer than it: its server "
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


def _visible(group: Sequence[Obs], part: str, stage: str) -> str:
    visible = _median(_stat(group, rel_metric(part, "relallvisible", stage)))
    pages = _median(_stat(group, rel_metric(part, "relpages", stage)))
    if visible is None or pages is None:
        return DASH
    return f"{visible:,.0f} / {pages:,.0f}"


def _autovacuum_row(variant: Variant, stage: str, group: Sequence[Obs]) -> TableRow:
    cells: list[Cell] = []
    for part in ("heap", "toast"):
        cells += [
            _cell(_stat(group, rel_metric(part, "n_live_tup", stage)), count),
            _cell(_stat(group, rel_metric(part, "n_dead_tup", stage)), count),
            Cell(_visible(group, part, stage)),
            _cell(_stat(group, rel_metric(part, "frozenxid_age", stage)), count),
        ]
    return TableRow((_label(variant), _STAGE_LABELS[stage]), tuple(cells))


def _autovacuum_rows(storage: Mapping[Variant, list[Obs]]) -> list[TableRow]:
    return [_autovacuum_row(v, stage, g) for v, g in storage.items() for stage in _STAGE_LABELS]


# -- the parallel experiment -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Span:
    session: str
    start: float
    end: float
    category: str
    lock_mode: str | None
    relation: str | None
    blocked_by: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Timeline:
    """A parallel point's timeline_json, checked."""

    extents: dict[str, tuple[float, float]]
    statements: dict[str, str]
    spans: tuple[Span, ...]
    notices: tuple[tuple[str, float, str], ...]


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("not a number")
    return float(value)


def _optional_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _parse_span(raw: Any) -> Span:
    blocked = raw.get("blocked_by") or []
    return Span(
        session=str(raw["session"]),
        start=_number(raw["start"]),
        end=_number(raw["end"]),
        category=str(raw["category"]),
        lock_mode=_optional_text(raw.get("lock_mode")),
        relation=_optional_text(raw.get("relation")),
        blocked_by=tuple(str(b) for b in blocked),
    )


def parse_timeline(raw: Metric) -> Timeline | None:
    """The timeline, or None when the metric is missing or is not what the study writes."""
    if not isinstance(raw, str):
        return None
    try:
        data = json.loads(raw)
        extents = {
            str(s["role"]): (_number(s["start"]), _number(s["end"])) for s in data["sessions"]
        }
        statements = {str(s["role"]): str(s["statement"]) for s in data["sessions"]}
        spans = tuple(_parse_span(s) for s in data["spans"])
        notices = tuple(
            (str(n["session"]), _number(n["t"]), str(n["text"])) for n in data["notices"]
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return Timeline(extents, statements, spans, notices)


def _timelines(data: Data) -> tuple[dict[str, Timeline], list[str]]:
    """The first repetition's timeline of each arm, and the arms whose timeline is broken."""
    found: dict[str, Timeline] = {}
    broken: list[str] = []
    for arm, group in data.parallel.items():
        timeline = parse_timeline(group[0].metrics.get("timeline_json"))
        if timeline is None:
            broken.append(arm)
        else:
            found[arm] = timeline
    return found, broken


def _waits(timeline: Timeline) -> list[Span]:
    return [s for s in timeline.spans if s.category == "lock"]


def _lock_sentence(timeline: Timeline) -> str | None:
    """Who waited for whom: the longest lock wait of each waiting session."""
    waits = _waits(timeline)
    if not waits:
        return None
    parts = []
    for session in dict.fromkeys(s.session for s in waits):
        mine = [s for s in waits if s.session == session]
        longest = max(mine, key=lambda s: s.end - s.start)
        total = sum(s.end - s.start for s in mine)
        holders = ", ".join(_ROLE_NAMES.get(b, b) for b in longest.blocked_by) or "another session"
        relation = {"toast": "the TOAST relation", "heap": "the table"}.get(
            longest.relation or "", longest.relation or "a relation"
        )
        parts.append(
            f"the {_ROLE_NAMES.get(session, session)} waited {seconds(total)} s (sampled, from "
            f"{seconds(longest.start)} s to {seconds(longest.end)} s) for a "
            f"{longest.lock_mode or 'lock'} on {relation}, held by the {holders}"
        )
    return "In the first repetition " + "; ".join(parts) + "."


def _truncation_sentence(timeline: Timeline) -> str:
    truncated = [(r, t, x) for r, t, x in timeline.notices if ": truncated " in x]
    skipped = [(r, t, x) for r, t, x in timeline.notices if "stopping truncate" in x]
    if skipped:
        who = ", ".join(sorted({_ROLE_NAMES.get(r, r) for r, _, _ in skipped}))
        return (
            f"Truncation was skipped: the {who} gave up "
            "(\u201cstopping truncate due to conflicting lock request\u201d)."
        )
    if not truncated:
        return "No relation was truncated."
    done = "; ".join(f"{_ROLE_NAMES.get(r, r)}: {x.split(': ', 1)[-1]}" for r, _, x in truncated)
    return f"Truncation was not skipped ({done})."


def _arm_sentences(timeline: Timeline | None) -> tuple[str, ...]:
    if timeline is None:
        return ("No timeline is recorded for this arm.",)
    lock = _lock_sentence(timeline)
    if lock is None:
        lock = (
            "Neither session was sampled waiting for a lock held by the other."
            if len(timeline.extents) > 1
            else "One session: nobody to wait for."
        )
    return (lock, _truncation_sentence(timeline))


def _arm_row(arm: str, group: Sequence[Obs]) -> TableRow:
    waited = sum(1 for o in group if (o.get("lock_waits") or 0) > 0)
    cells = (
        _cell(_stat(group, "wall_s"), seconds),
        _cell(_stat(group, "toast_session_s"), seconds),
        _cell(_stat(group, "table_session_s"), seconds),
        _cell(_stat(group, "lock_wait_table_s"), seconds),
        Cell(f"{waited} of {len(group)}"),
        _cell(_stat(group, vacuum_metric("toast", "toast", "pages_removed")), count),
        _cell(_stat(group, vacuum_metric("table", "toast", "pages_removed")), count),
        _cell(_stat(group, vacuum_metric("table", "heap", "pages_removed")), count),
        _cell(_stat(group, "truncate_skipped"), count),
    )
    return TableRow((arm,), cells)


def _statements(timeline: Timeline | None) -> tuple[tuple[str, str], ...]:
    if timeline is None:
        return ()
    return tuple(
        (_ROLE_NAMES.get(role, role), timeline.statements[role])
        for role in ("toast", "table")
        if role in timeline.statements
    )


def _arms(data: Data, timelines: Mapping[str, Timeline]) -> list[ArmView]:
    views = []
    for arm, group in data.parallel.items():
        timeline = timelines.get(arm)
        views.append(
            ArmView(
                arm,
                _ARM_TITLES[arm],
                _statements(timeline),
                _arm_sentences(timeline),
                _arm_row(arm, group),
            )
        )
    return views


def _parallel_note(data: Data, timelines: Mapping[str, Timeline]) -> list[str]:
    notes: list[str] = []
    walls = {a: _median(_stat(g, "wall_s")) for a, g in data.parallel.items()}
    seq, sep = walls.get("sequential"), walls.get("separate")
    if seq is not None and sep is not None:
        separate = data.parallel["separate"]
        shorter = [_median(_stat(separate, f"{r}_session_s")) for r in ("table", "toast")]
        notes.append(
            "Side by side, with PROCESS_TOAST false, the two VACUUMs finished in "
            f"{seconds(sep)} s, against {seconds(seq)} s for one VACUUM doing the heap and then "
            "the TOAST relation. Side by side saves at most the shorter of the two: here the "
            f"table session took {seconds(shorter[0])} s and the TOAST session "
            f"{seconds(shorter[1])} s."
        )
    overlapping = timelines.get("overlapping")
    if overlapping is not None and _waits(overlapping):
        notes.append(
            "A table's VACUUM takes a ShareUpdateExclusiveLock on its TOAST relation when it "
            "gets there (vacuum.c, vacuum_rel), and that lock conflicts with itself: so the table "
            "session, done with the heap, queues behind the TOAST session until it commits. "
            "That is the seed's wait."
        )
        if not any("stopping truncate" in x for _, _, x in overlapping.notices):
            notes.append(
                "Unlike the seed, the TOAST session still truncated its relation while the table "
                "session was queued: on the server of this run a conditional lock request "
                "from a backend that already holds a lock the queued waiter needs is granted at "
                "once, ahead of that waiter (proc.c, JoinWaitQueue). The seed's older server "
                "refused it, retried for 5 s (VACUUM_TRUNCATE_LOCK_TIMEOUT) and gave up."
            )
    return notes


def _timeline_figure(timelines: Mapping[str, Timeline]) -> Figure:
    arms = []
    for arm, timeline in timelines.items():
        sessions = tuple(r for r in ("table", "toast") if r in timeline.extents)
        bars = tuple(
            tc.Bar(_ROLE_NAMES.get(s.session, s.session), s.start, s.end, s.category)
            for s in timeline.spans
        )
        arms.append(
            tc.ArmTimeline(
                title=_ARM_TITLES[arm],
                sessions=tuple(_ROLE_NAMES[r] for r in sessions),
                extents={_ROLE_NAMES.get(r, r): e for r, e in timeline.extents.items()},
                bars=bars,
                marks=tuple(_marks(timeline)),
            )
        )
    return tc.timeline_chart(arms)


def _marks(timeline: Timeline) -> list[tc.Mark]:
    kinds = (
        ("stopping truncate", "skipped"),
        ("suspending truncate", "suspended"),
        (": truncated ", "truncated"),
    )
    marks = []
    for role, t, notice in timeline.notices:
        kind = next((k for needle, k in kinds if needle in notice), None)
        if kind is not None:
            marks.append(tc.Mark(_ROLE_NAMES.get(role, role), t, kind))
    return marks


# -- charts ----------------------------------------------------------------------------------


def _chart(key: str, fig: Figure, caption: str, out_dir: Path) -> Chart:
    title, png = CHARTS[key]
    chart_id = f"chart-{key}"
    svg = Markup(charts.svg_markup(fig, chart_id))
    write_png(fig, out_dir / png)
    return Chart(key, chart_id, title, svg, png, caption)


def _mb(value: float | None) -> float | None:
    return None if value is None else value / MB


def _size_bars(storage: Mapping[Variant, list[Obs]]) -> list[tc.SizeBar]:
    def median_mb(group: Sequence[Obs], part: str, stage: str) -> float | None:
        return _mb(_median(_stat(group, rel_metric(part, "bytes", stage))))

    return [
        tc.SizeBar(
            _label(v),
            median_mb(g, "heap", "loaded"),
            median_mb(g, "toast", "loaded"),
            median_mb(g, "heap", "updated"),
            median_mb(g, "toast", "updated"),
        )
        for v, g in storage.items()
    ]


def _published_bars() -> list[tc.SizeBar]:
    keys = ("heap_mb_loaded", "toast_mb_loaded", "heap_mb_updated", "toast_mb_updated")
    return [
        tc.SizeBar(storage, *(float(getattr(PUBLISHED[k], storage)) for k in keys))
        for storage in ("extended", "main")
    ]


def _timing_bars(storage: Mapping[Variant, list[Obs]]) -> list[tc.TimingBars]:
    bars = []
    for (name, target), group in storage.items():
        same = sorted(t for s, t in storage if s == name)
        rank = 0 if target == DEFAULT_TOAST_TUPLE_TARGET else 1 + same.index(target)
        values = tuple(_median(_stat(group, m)) for m in _STEP_METRICS)
        bars.append(tc.TimingBars(_label((name, target)), name, rank, values))
    return bars


def _published_timings() -> dict[str, tuple[float, float, float]]:
    keys = ("update_s", "vacuum_s", "freeze_s")
    return {
        storage: (
            getattr(PUBLISHED[keys[0]], storage),
            getattr(PUBLISHED[keys[1]], storage),
            getattr(PUBLISHED[keys[2]], storage),
        )
        for storage in ("extended", "main")
    }


def _work_bars(storage: Mapping[Variant, list[Obs]]) -> list[tc.WorkBars]:
    return [
        tc.WorkBars(
            _label(v),
            _mb(_median(_stat(g, "update_wal_bytes"))),
            _median(_stat(g, vacuum_metric("vacuum", "heap", "pages_scanned"))),
            _median(_stat(g, vacuum_metric("vacuum", "toast", "pages_scanned"))),
        )
        for v, g in storage.items()
    ]


_CAPTIONS = {
    "sizes": "Each table loaded (left bar) and after the UPDATE of its narrow column (right "
    "bar, hatched): heap in blue, TOAST in orange, medians of the repetitions. Look at where "
    "the bytes are: out of line, the heap is a thin list of pointers and the UPDATE doubles "
    "only that; in line, the heap is the whole table and the UPDATE doubles all of it. The "
    "seed's figures, for 500,000 rows, are on the right.",
    "timings": "Median seconds of each step, on a log scale; the seed's published seconds on "
    "the right. Compare the ratios between storages, not the seconds: the row count, the "
    "machine and the cache differ.",
    "work": "What the timings are made of: the WAL the UPDATE wrote (every new row version, "
    "and a full-page image for the first change of each page after the checkpoint) and the "
    "pages the VACUUM read, heap and TOAST.",
    "timeline": "Each row is one session, from its VACUUM's start to its end (outline), "
    "coloured by what pg_stat_activity, pg_stat_progress_vacuum and pg_locks showed when "
    "sampled: vacuuming, truncating, retrying the truncation lock, waiting for a lock (red). "
    "Triangles mark truncations. First repetition of each arm.",
}


def _charts(data: Data, timelines: Mapping[str, Timeline], out_dir: Path) -> dict[str, Chart]:
    figures = {
        "sizes": tc.sizes_chart(_size_bars(data.storage), _published_bars()),
        "timings": tc.timings_chart(_timing_bars(data.storage), _published_timings()),
        "work": tc.work_chart(_work_bars(data.storage)),
        "timeline": _timeline_figure(timelines),
    }
    return {key: _chart(key, fig, _CAPTIONS[key], out_dir) for key, fig in figures.items()}


# -- rendering -------------------------------------------------------------------------------


def _size_note(run: Run, storage: Mapping[Variant, list[Obs]]) -> str:
    width = run.params.get("width")
    seed = (
        f"The seed's 1302 MB for {PUBLISHED_ROWS:,} rows, in line and out of line alike, means "
        "three rows per 8 kB page: values of about 2.0 to 2.6 kB (the paper preset uses 2,600 "
        "bytes)."
    )
    main = storage.get(("main", DEFAULT_TOAST_TUPLE_TARGET))
    per_page = None if main is None else _rows_per_page(main)
    if not _is_int(width) or per_page is None:
        return seed
    return f"At {width:,} bytes a main-storage heap page holds {per_page:,.1f} rows. " + seed


def build_report(run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    """Draw the run's charts (writing their PNGs to `out_dir`) and return the view model."""
    data = _read(points)
    timelines, broken = _timelines(data)
    first = next((g[0] for g in data.storage.values() if g), None)
    checksums = None if first is None else first.metrics.get("data_checksums")
    return Report(
        run_id=run.id,
        status=run.status,
        notices=_notices(run, data, broken),
        note=run.note,
        overview=_overview(run, data),
        machine=machine_rows(run.machine),
        params=_param_rows(run.params),
        settings=_settings(run, data),
        server_settings=sorted((str(k), text(v)) for k, v in run.settings.items()),
        sizes=[_size_row(v, g) for v, g in data.storage.items()],
        size_note=_size_note(run, data.storage),
        timings=[_timing_row(v, g) for v, g in data.storage.items()],
        ratios=_ratio_rows(data.storage),
        timing_note=_timing_note(data.storage),
        work=[_work_row(v, g) for v, g in data.storage.items()],
        freeze=[_freeze_row(v, g) for v, g in data.storage.items()],
        freeze_note=_freeze_note(data.storage, checksums if isinstance(checksums, str) else None),
        autovacuum=_autovacuum_rows(data.storage),
        arms=_arms(data, timelines),
        parallel_note=_parallel_note(data, timelines),
        charts=_charts(data, timelines, out_dir),
    )


def _write(path: Path, content: str) -> None:
    try:
        path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise VacuumlabError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def render_toast_report(store: Store, run_id: int, out_dir: Path) -> Path:
    """Render toast run `run_id` to `out_dir/report.html` (one self-contained file) plus one
    PNG per chart; return the HTML's path.

    Reads only the store. Raises VacuumlabError if the run does not exist, is not a toast
    run, has no points, or the files cannot be written.
    """
    run, points = study_run(store, run_id, STUDY)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VacuumlabError(f"{out_dir}: cannot create: {exc.strerror or exc}") from exc
    report = build_report(run, points, out_dir)
    html = environment().get_template("toast.html.j2").render(r=report)
    path = out_dir / REPORT_FILE
    _write(path, html)
    return path
