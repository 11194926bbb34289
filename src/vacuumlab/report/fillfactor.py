"""The fillfactor report: one self-contained HTML file, and a PNG per chart, from the store alone.

`render_fillfactor_report` reads a fillfactor run (parameters, machine, points and their
metrics) from the results store and nothing else, so rendering the same run twice gives
byte-identical files. It puts the seed's table beside the measured one, says which differences
between fillfactors are more than noise (Welch's t-test over the repetitions), explains how
"memory" was mapped on this machine, and ends with a recommendation computed from the data.

Point estimates are medians over the repetitions; the significance test and the confidence
intervals are about means, because that is what Welch's test compares.

No JavaScript, nothing loaded: charts are inline SVG, the CSS is in the page, every string from
the store is escaped by Jinja2's autoescaping, and only the generated SVG is marked safe.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from markupsafe import Markup
from matplotlib.figure import Figure

from vacuumlab.errors import VacuumlabError
from vacuumlab.report import charts
from vacuumlab.report import fillfactor_charts as ffc
from vacuumlab.report.common import (
    DASH,
    Cell,
    Chart,
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
from vacuumlab.stats.significance import Comparison, mean_interval, p_text, welch
from vacuumlab.store import Metric, Point, Run, Store
from vacuumlab.studies.fillfactor_spec import (
    PUBLISHED,
    PUBLISHED_SETUP,
    SIZE_FACTORS,
    SIZE_LABELS,
    SIZES,
    STUDY,
    Size,
    reference,
)

REPORT_FILE = "report.html"
#: chart key -> (section title, PNG file).
CHARTS = {
    "hot": ("HOT updates by fillfactor", "hot.png"),
    "growth": ("Table growth by fillfactor", "growth.png"),
    "performance": ("TPS and UPDATE time by fillfactor", "performance.png"),
}
#: A HOT gain this close to the largest one counts as "nearly all of it" (recommendation).
NEARLY_ALL = 0.9

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
    ("sizes", "data sizes"),
    ("fillfactors", "fillfactors"),
    ("seconds", "seconds per point (warm-up included)"),
    ("warmup", "warm-up (s)"),
    ("repeat", "repetitions"),
    ("clients", "pgbench clients"),
    ("jobs", "pgbench threads"),
    ("shared_buffers", "shared_buffers (requested)"),
)

Key = tuple[Size, int]  # size, fillfactor


# -- formatting ----------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    """Milliseconds to three significant digits: the seed's 5.01 and a sandbox's 0.0262."""
    return DASH if value is None else f"{value:.3g}"


def _tps(value: float | None) -> str:
    return DASH if value is None else f"{value:,.0f}"


def _pct(value: float | None, digits: int = 1) -> str:
    """A share (0..1) as a percentage."""
    return DASH if value is None else f"{value * 100:.{digits}f} %"


def _signed_pct(value: float | None) -> str:
    """A relative change (0.05) as a signed percentage (+5.0 %)."""
    return DASH if value is None else f"{value * 100:+.1f} %"


def _points(value: float | None) -> str:
    """A difference of two shares as signed percentage points."""
    return DASH if value is None else f"{value * 100:+.1f} points"


def _mb(value: float | None) -> str:
    return DASH if value is None else f"{value / 2**20:,.1f} MB"


#: The metrics the significance table tests: (metric, label, how a mean is printed).
TESTED: tuple[tuple[str, str, Callable[[float | None], str]], ...] = (
    ("tps", "TPS", _tps),
    ("update_mean_ms", "UPDATE mean (ms)", _ms),
    ("hot_share", "HOT share", _pct),
)


# -- the view model: plain strings, escaped by the template --------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    head: tuple[str, ...]
    cells: tuple[Cell, ...]


@dataclass(frozen=True, slots=True)
class Report:
    run_id: int
    status: str
    notices: list[str]
    note: str | None
    overview: list[tuple[str, str]]
    machine: list[tuple[str, str]]
    params: list[tuple[str, str]]
    memory: list[str]
    seed_columns: list[str]
    seed: list[Row]
    published: list[Row]
    published_setup: str
    charts: list[Chart]
    performance: list[Row]
    table: list[Row]
    reference: int
    significance: list[Row]
    recommendation: str


# -- reading the store ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Obs:
    size: Size
    fillfactor: int
    scale: int | None
    metrics: Mapping[str, Metric]

    def get(self, name: str) -> float | None:
        return metric(self.metrics, name)


@dataclass(frozen=True, slots=True)
class _Data:
    groups: dict[Key, list[_Obs]]
    sizes: list[Size]
    fillfactors: list[int]  # descending, as the seed's columns
    reference: int
    skipped: int

    def get(self, size: Size, fillfactor: int) -> list[_Obs]:
        return self.groups.get((size, fillfactor), [])


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _observation(point: Point) -> _Obs | None:
    size, ff, scale = (point.params.get(k) for k in ("size", "fillfactor", "scale"))
    if size not in SIZES or not _is_int(ff):
        return None
    return _Obs(size, ff, scale if _is_int(scale) else None, point.metrics)


def _read(points: Sequence[Point]) -> _Data:
    found = [o for o in map(_observation, points) if o is not None]
    groups: dict[Key, list[_Obs]] = {}
    for o in found:
        groups.setdefault((o.size, o.fillfactor), []).append(o)
    sizes = [s for s in SIZES if any(o.size == s for o in found)]
    fillfactors = sorted({o.fillfactor for o in found}, reverse=True)
    ref = reference(fillfactors) if fillfactors else 100
    return _Data(groups, sizes, fillfactors, ref, len(points) - len(found))


# -- statistics ----------------------------------------------------------------------------


def _values(group: Sequence[_Obs], name: str) -> list[float]:
    return [v for v in (o.get(name) for o in group) if v is not None]


def _median(group: Sequence[_Obs], name: str) -> float | None:
    values = _values(group, name)
    return statistics.median(values) if values else None


def _relative(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b - 1


def _difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _extent(group: Sequence[_Obs], name: str) -> tuple[float | None, float | None]:
    values = _values(group, name)
    return (min(values), max(values)) if values else (None, None)


# -- header: notices, overview, parameters -------------------------------------------------


def _planned(params: Mapping[str, Any]) -> list[Key]:
    sizes = params.get("sizes")
    ffs = params.get("fillfactors")
    if not isinstance(sizes, list) or not isinstance(ffs, list):
        return []
    return [(s, f) for s in SIZES if s in sizes for f in sorted(ffs, reverse=True) if _is_int(f)]


def _repeat(params: Mapping[str, Any]) -> int:
    value = params.get("repeat")
    return value if _is_int(value) and value > 0 else 1


def _key_text(key: Key) -> str:
    return f"{SIZE_LABELS[key[0]]}, fillfactor {key[1]}"


def _notices(run: Run, data: _Data) -> list[str]:
    notices = [_STATUS_NOTICE[run.status]] if run.status in _STATUS_NOTICE else []
    planned, repeat = _planned(run.params), _repeat(run.params)
    missing = [_key_text(k) for k in planned if k not in data.groups]
    if missing:
        notices.append(f"Not measured: {'; '.join(missing)}.")
    short = [
        f"{_key_text(k)}: {len(g)} of {repeat}" for k, g in data.groups.items() if len(g) < repeat
    ]
    if short:
        notices.append(f"Missing repetitions: {'; '.join(short)}.")
    if data.skipped:
        notices.append(
            f"{data.skipped} point(s) with a missing or unknown size or fillfactor are left out."
        )
    return notices


def _overview(run: Run, points: int) -> list[tuple[str, str]]:
    planned = len(_planned(run.params)) * _repeat(run.params)
    return [
        ("status", run.status),
        ("started", when(run.started_at)),
        ("ended", when(run.ended_at)),
        ("duration", duration(run.started_at, run.ended_at)),
        ("server", run.server_version),
        ("points recorded", f"{points} of {planned}" if planned else str(points)),
    ]


def _param_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(text(v) for v in value) if value else DASH
    return text(value)


def _param_rows(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    known = {key for key, _ in _PARAM_LABELS}
    rows = [(label, _param_text(params.get(key))) for key, label in _PARAM_LABELS]
    return rows + [(key, _param_text(params[key])) for key in sorted(params) if key not in known]


# -- the memory note -----------------------------------------------------------------------


def _memory_bytes(data: _Data) -> float | None:
    """The shared_buffers the points ran with (the study records it with each point)."""
    values = [v for g in data.groups.values() for v in _values(g, "shared_buffers_bytes")]
    return statistics.median(values) if values else None


def _loaded_bytes(group: Sequence[_Obs]) -> float | None:
    table, index = _median(group, "table_bytes_init"), _median(group, "index_bytes_init")
    return None if table is None or index is None else table + index


def _size_line(data: _Data, size: Size, memory: float | None) -> str:
    group = data.get(size, data.reference)
    scales = sorted(
        {o.scale for g in data.groups.values() for o in g if o.size == size and o.scale}
    )
    loaded = _loaded_bytes(group)
    ratio = f"{loaded / memory:.2f}×" if loaded and memory else "an unmeasured multiple of"
    return (
        f"{SIZE_LABELS[size]}: pgbench scale {', '.join(map(str, scales)) or DASH}, aimed at "
        f"{SIZE_FACTORS[size]:g}× shared_buffers; after loading at fillfactor {data.reference}, "
        f"pgbench_accounts and its primary key took {_mb(loaded)}, {ratio} shared_buffers."
    )


def _ram_line(data: _Data, memory: float | None, ram: Any) -> str:
    largest = max(
        (v for g in data.groups.values() for v in _values(g, "table_bytes_end")), default=None
    )
    if not isinstance(ram, int | float) or isinstance(ram, bool) or largest is None:
        return "The machine's memory was not recorded: whether the OS page cache held the data "
        "is unknown."
    if largest < ram / 2:
        return (
            f"The machine has {ram / 2**30:.1f} GiB of RAM and the largest table reached "
            f"{_mb(largest)}: the OS page cache holds all of it. A block missing from "
            'shared_buffers is copied from the page cache, not read from disk, so "2×" and '
            '"10×" here mean 2 and 10 times shared_buffers, not RAM, and the buffer hit ratio '
            "below counts a page-cache copy as a read."
        )
    return (
        f"The machine has {ram / 2**30:.1f} GiB of RAM and the largest table reached "
        f"{_mb(largest)}: part of it no longer fits in the OS page cache, so some reads are disk "
        "reads, as in the seed."
    )


def _memory_note(run: Run, data: _Data) -> list[str]:
    memory = _memory_bytes(data)
    head = (
        f'The seed\'s "memory" is mapped to shared_buffers, {_mb(memory)} in this run '
        f"(requested: {text(run.params.get('shared_buffers') or 'the server’s own')}); each "
        "data size is a multiple of it at fillfactor 100, and lower fillfactors load the same "
        "rows into a larger table."
    )
    sizes = [_size_line(data, size, memory) for size in data.sizes]
    seed = (
        "The seed's sizes were relative to RAM (16 GB, shared_buffers 4 GB), so its 10× case "
        "read from an SSD; compare the direction of the effects, not their size."
    )
    return [head, *sizes, _ram_line(data, memory, run.machine.get("memory_bytes")), seed]


# -- the seed's table ----------------------------------------------------------------------


def _seed_cell(group: Sequence[_Obs]) -> Cell:
    if not group:
        return Cell(DASH)
    update, tps = _median(group, "update_mean_ms"), _median(group, "tps")
    return Cell(f"{_ms(update)} ({_tps(tps)})")


def _seed_columns(data: _Data) -> list[int]:
    published = {ff for row in PUBLISHED.values() for ff in row}
    return sorted(published | set(data.fillfactors), reverse=True)


def _seed_rows(data: _Data, columns: Sequence[int]) -> list[Row]:
    return [
        Row((SIZE_LABELS[size],), tuple(_seed_cell(data.get(size, ff)) for ff in columns))
        for size in data.sizes
    ]


def _published_rows(columns: Sequence[int]) -> list[Row]:
    rows = []
    for size, values in PUBLISHED.items():
        cells = tuple(
            Cell(f"{values[ff][0]:.2f} ({values[ff][1]:.0f})" if ff in values else DASH)
            for ff in columns
        )
        rows.append(Row((SIZE_LABELS[size],), cells))
    return rows


# -- performance and table tables ----------------------------------------------------------


def _ci_cell(group: Sequence[_Obs], name: str, fmt: Callable[[float | None], str]) -> Cell:
    interval = mean_interval(_values(group, name))
    if interval is None:
        values = _values(group, name)
        return Cell(fmt(statistics.fmean(values)) if values else DASH)
    return Cell(fmt(interval.mean), f"[{fmt(interval.low)}, {fmt(interval.high)}]")


def _head(key: Key, group: Sequence[_Obs]) -> tuple[str, ...]:
    scales = sorted({o.scale for o in group if o.scale is not None})
    return SIZE_LABELS[key[0]], ", ".join(map(str, scales)) or DASH, str(key[1]), str(len(group))


def _performance_row(key: Key, group: Sequence[_Obs]) -> Row:
    cells = (
        _ci_cell(group, "tps", _tps),
        _ci_cell(group, "update_mean_ms", _ms),
        Cell(_ms(_median(group, "update_stddev_ms"))),
        Cell(_ms(_median(group, "latency_mean_ms"))),
        Cell(count(_median(group, "update_calls"))),
    )
    return Row(_head(key, group), cells)


def _table_row(key: Key, group: Sequence[_Obs]) -> Row:
    cells = (
        Cell(_pct(_median(group, "hot_share"))),
        Cell(_pct(_median(group, "newpage_share"))),
        Cell(_mb(_median(group, "table_bytes_init"))),
        Cell(_mb(_median(group, "table_bytes_end"))),
        Cell(_signed_pct(_median(group, "table_growth"))),
        Cell(_signed_pct(_median(group, "index_growth"))),
        Cell(count(_median(group, "autovacuum_count"))),
        Cell(_pct(_median(group, "hit_ratio"), 2)),
    )
    return Row(_head(key, group), cells)


def _ordered(data: _Data) -> list[Key]:
    return [(s, f) for s in data.sizes for f in data.fillfactors if (s, f) in data.groups]


# -- significance --------------------------------------------------------------------------


def _comparison(data: _Data, size: Size, ff: int, name: str) -> Comparison:
    return welch(_values(data.get(size, ff), name), _values(data.get(size, data.reference), name))


def _significance_rows(data: _Data) -> list[Row]:
    rows = []
    for size in data.sizes:
        for ff in data.fillfactors:
            if ff == data.reference or (size, ff) not in data.groups:
                continue
            for name, label, fmt in TESTED:
                c = _comparison(data, size, ff, name)
                head = (SIZE_LABELS[size], f"{ff} vs {data.reference}", label)
                cells = (
                    Cell(fmt(c.mean_a)),
                    Cell(fmt(c.mean_b)),
                    Cell(_change(name, c)),
                    Cell(p_text(c.p_value)),
                    Cell(c.text),
                )
                rows.append(Row(head, cells))
    return rows


def _change(name: str, c: Comparison) -> str:
    if name == "hot_share":
        return _points(_difference(c.mean_a, c.mean_b))
    return _signed_pct(c.relative)


# -- the recommendation --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Effect:
    """A fillfactor against the reference at one size: median changes and the tests."""

    fillfactor: int
    hot: float | None  # difference of HOT shares
    table: float | None  # relative difference of the table size at the end
    tps: float | None  # relative difference of TPS
    update: float | None  # relative difference of the UPDATE mean
    tps_test: Comparison
    update_test: Comparison
    hot_test: Comparison

    def better(self) -> bool:
        """Significantly more TPS or a significantly faster UPDATE."""
        return _up(self.tps_test, self.tps) or _up(
            self.update_test, None if self.update is None else -self.update
        )

    def worse(self) -> bool:
        return _up(self.tps_test, None if self.tps is None else -self.tps) or _up(
            self.update_test, self.update
        )


def _up(test: Comparison, change: float | None) -> bool:
    return test.verdict == "significant" and change is not None and change > 0


def effects(data: _Data, size: Size) -> list[Effect]:
    """Every measured fillfactor but the reference, against the reference, at ``size``."""
    ref = data.get(size, data.reference)
    found = []
    for ff in data.fillfactors:
        group = data.get(size, ff)
        if ff == data.reference or not group or not ref:
            continue
        found.append(
            Effect(
                ff,
                _difference(_median(group, "hot_share"), _median(ref, "hot_share")),
                _relative(_median(group, "table_bytes_end"), _median(ref, "table_bytes_end")),
                _relative(_median(group, "tps"), _median(ref, "tps")),
                _relative(_median(group, "update_mean_ms"), _median(ref, "update_mean_ms")),
                _comparison(data, size, ff, "tps"),
                _comparison(data, size, ff, "update_mean_ms"),
                _comparison(data, size, ff, "hot_share"),
            )
        )
    return found


def cheapest_hot(found: Sequence[Effect]) -> Effect | None:
    """The highest fillfactor that gets nearly all of the largest HOT gain measured: the least
    table space paid for the HOT updates. None when no fillfactor raised the HOT share."""
    gains = [e for e in found if e.hot is not None and e.hot > 0]
    if not gains:
        return None
    best = max(e.hot or 0.0 for e in gains)
    return max(
        (e for e in gains if (e.hot or 0.0) >= NEARLY_ALL * best), key=lambda e: e.fillfactor
    )


def _price(e: Effect) -> str:
    return (
        f"{_points(e.hot)} of HOT updates ({e.hot_test.text}) for {_signed_pct(e.table)} table size"
    )


def _speed(e: Effect) -> str:
    tps, update = e.tps_test.text, e.update_test.text
    changes = f"TPS {_signed_pct(e.tps)}", f"UPDATE time {_signed_pct(e.update)}"
    if tps == update:
        return f"{changes[0]} and {changes[1]}, both {tps}"
    return f"{changes[0]} ({tps}), {changes[1]} ({update})"


def _slower(found: Sequence[Effect], shown: Effect) -> str:
    losses = [str(e.fillfactor) for e in found if e.worse() and e is not shown]
    return f"; fillfactor {', '.join(losses)} significantly slower" if losses else ""


def size_advice(label: str, reference_ff: int, found: Sequence[Effect]) -> str:
    """One clause for one size, from its effects against the reference fillfactor."""
    if not found:
        return f"{label}: nothing measured to compare with fillfactor {reference_ff}"
    gains = [e for e in found if e.better() and not e.worse()]
    if gains:
        best = max(gains, key=lambda e: e.tps if e.tps is not None else float("-inf"))
        return (
            f"{label}: fillfactor {best.fillfactor} is faster than {reference_ff}, "
            f"{_speed(best)}, with {_price(best)}{_slower(found, best)}"
        )
    hot = cheapest_hot(found)
    if hot is None:
        shown = max(found, key=lambda e: e.fillfactor)
        return (
            f"{label}: no fillfactor below {reference_ff} raised the HOT share; fillfactor "
            f"{shown.fillfactor}: {_speed(shown)}{_slower(found, shown)}"
        )
    return (
        f"{label}: fillfactor {hot.fillfactor} gives {_price(hot)}; against {reference_ff}, "
        f"{_speed(hot)}{_slower(found, hot)}"
    )


def recommendation(data: _Data) -> str:
    """The closing line: one clause per size, from the measured medians and the tests."""
    clauses = [
        size_advice(SIZE_LABELS[size], data.reference, effects(data, size)) for size in data.sizes
    ]
    return f"On this workload — {'; '.join(clauses)}."


# -- charts --------------------------------------------------------------------------------


Bounds = tuple[float | None, float | None, float | None]
#: What a chart shows of one group of repetitions: a centre and its lower and upper bound.
Summarise = Callable[[Sequence[_Obs]], Bounds]


def _line(data: _Data, size: Size, summarise: Summarise) -> ffc.Line:
    ffs = tuple(ff for ff in data.fillfactors if data.get(size, ff))
    bounds = [summarise(data.get(size, ff)) for ff in ffs]
    centre, low, high = (tuple(b[i] for b in bounds) for i in range(3))
    return ffc.Line(size, SIZE_LABELS[size], ffs, centre, low, high)


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _median_range(name: str, factor: float = 1.0) -> Summarise:
    """Median with the lowest and highest repetition, times ``factor``."""

    def bounds(group: Sequence[_Obs]) -> Bounds:
        low, high = _extent(group, name)
        return _scaled(_median(group, name), factor), _scaled(low, factor), _scaled(high, factor)

    return bounds


def _mean_ci(name: str) -> Summarise:
    """Mean with its 95 % confidence interval (the mean alone with one repetition)."""

    def bounds(group: Sequence[_Obs]) -> Bounds:
        values = _values(group, name)
        interval = mean_interval(values)
        if interval is None:
            return (statistics.fmean(values) if values else None), None, None
        return interval.mean, interval.low, interval.high

    return bounds


def _extra_space(data: _Data) -> Summarise:
    """Table size at the end against the reference fillfactor's at the same size (medians),
    in %."""

    def bounds(group: Sequence[_Obs]) -> Bounds:
        ref = _median(data.get(group[0].size, data.reference), "table_bytes_end")
        return _scaled(_relative(_median(group, "table_bytes_end"), ref), 100), None, None

    return bounds


def _panel(data: _Data, title: str, ylabel: str, summarise: Summarise) -> ffc.Panel:
    return ffc.Panel(title, ylabel, tuple(_line(data, s, summarise) for s in data.sizes))


def _figures(data: _Data) -> dict[str, Figure]:
    spread, share = "median and range", "% of updates"
    return {
        "hot": ffc.panels_chart([
            _panel(data, "HOT updates", f"{share}, {spread}", _median_range("hot_share", 100)),
            _panel(data, "updates that moved to a new page", f"{share}, {spread}",
                   _median_range("newpage_share", 100)),
        ]),
        "growth": ffc.panels_chart([
            _panel(data, "table growth during the run", f"% of the loaded size, {spread}",
                   _median_range("table_growth", 100)),
            _panel(data, "index growth during the run", f"% of the loaded size, {spread}",
                   _median_range("index_growth", 100)),
            _panel(data, f"table size against fillfactor {data.reference}", "% larger at the end",
                   _extra_space(data)),
        ]),
        "performance": ffc.panels_chart([
            _panel(data, "throughput", "TPS, mean and 95 % CI", _mean_ci("tps")),
            _panel(data, "UPDATE pgbench_accounts", "ms, mean and 95 % CI",
                   _mean_ci("update_mean_ms")),
        ]),
    }  # fmt: skip


_CAPTIONS = {
    "hot": "Share of pgbench_accounts' updates that were HOT (heap-only: the new row version on "
    "the same page, no index entry) and of those that had to move the row to another page, over "
    "the measured run. Markers are medians over the repetitions, whiskers the lowest and highest "
    "repetition. Look at how much of the HOT gain is already there at the highest fillfactor "
    "below 100: the free space a lower fillfactor leaves is what lets an update stay on its page.",
    "growth": "Left and middle: how much the table and its primary key grew during the run "
    "(at the end against just after loading). Right: the table at the end against the same "
    "size at the reference fillfactor: the space a lower fillfactor costs. Lower fillfactors "
    "start larger and grow less, because updates reuse the space left free on each page.",
    "performance": "pgbench's TPS (the whole TPC-B transaction) and the mean time of its "
    "UPDATE of pgbench_accounts (pg_stat_statements), over the measured run. Markers are means "
    "over the repetitions, whiskers their 95 % confidence interval (none with one repetition). "
    "With two repetitions the interval is wide by construction (the t quantile for one degree "
    "of freedom is 12.7), and it may reach below zero. Whiskers that overlap widely mean the "
    "difference is noise; the significance table tests it.",
}


def _chart(key: str, fig: Figure, out_dir: Path) -> Chart:
    title, png = CHARTS[key]
    chart_id = f"chart-{key}"
    svg = Markup(charts.svg_markup(fig, chart_id))
    write_png(fig, out_dir / png)
    return Chart(key, chart_id, title, svg, png, _CAPTIONS[key])


# -- rendering -----------------------------------------------------------------------------


def build_report(run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    """Draw the run's charts (writing their PNGs to `out_dir`) and return the view model the
    template renders."""
    data = _read(points)
    columns = _seed_columns(data)
    ordered = _ordered(data)
    return Report(
        run_id=run.id,
        status=run.status,
        notices=_notices(run, data),
        note=run.note,
        overview=_overview(run, len(points)),
        machine=machine_rows(run.machine),
        params=_param_rows(run.params),
        memory=_memory_note(run, data),
        seed_columns=[f"FF={ff}" for ff in columns],
        seed=_seed_rows(data, columns),
        published=_published_rows(columns),
        published_setup=PUBLISHED_SETUP,
        charts=[_chart(key, fig, out_dir) for key, fig in _figures(data).items()],
        performance=[_performance_row(k, data.groups[k]) for k in ordered],
        table=[_table_row(k, data.groups[k]) for k in ordered],
        reference=data.reference,
        significance=_significance_rows(data),
        recommendation=recommendation(data),
    )


def _write(path: Path, content: str) -> None:
    try:
        path.write_text(content, encoding="utf-8")
    except OSError as exc:
        raise VacuumlabError(f"{path}: cannot write: {exc.strerror or exc}") from exc


def render_fillfactor_report(store: Store, run_id: int, out_dir: Path) -> Path:
    """Render fillfactor run `run_id` to `out_dir/report.html` (one self-contained file) plus
    one PNG per chart; return the HTML's path.

    Reads only the store. Raises VacuumlabError if the run does not exist, is not a
    fillfactor run, has no points, or the files cannot be written.
    """
    run, points = study_run(store, run_id, STUDY)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VacuumlabError(f"{out_dir}: cannot create: {exc.strerror or exc}") from exc
    report = build_report(run, points, out_dir)
    html = environment().get_template("fillfactor.html.j2").render(r=report)
    path = out_dir / REPORT_FILE
    _write(path, html)
    return path
