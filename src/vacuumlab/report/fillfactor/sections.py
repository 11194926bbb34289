"""The fillfactor report's sections: the memory note, the published table beside the measured
one, every combination, which differences are more than noise, the recommendation, and the
view model the template renders. Plain strings, escaped by the template."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vacuumlab.records.fillfactor import FillfactorConfig
from vacuumlab.records.fillfactor_spec import (
    PUBLICATION,
    PUBLISHED,
    PUBLISHED_SETUP,
    SIZE_FACTORS,
    SIZE_LABELS,
    Size,
)
from vacuumlab.report.common import DASH, Cell, count, number_format
from vacuumlab.report.fillfactor.charts import draw_charts
from vacuumlab.report.fillfactor.data import (
    Data,
    FfObs,
    Key,
    key_text,
    median_of,
    ordered,
    planned,
    read,
)
from vacuumlab.report.page import (
    Chart,
    Header,
    header,
    list_text,
    of,
    overview,
    param_rows,
    planned_repeat,
    status_notice,
    stored_config,
    values,
)
from vacuumlab.stats.fillfactor import Effect, Verdict, compare, difference, effects, verdict
from vacuumlab.stats.significance import Comparison, mean_interval, p_text
from vacuumlab.store import Point, Run, Store

PARAM_LABELS = (
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


# -- formatting ----------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    """Milliseconds to three significant digits: the published 5.01 and a sandbox's 0.0262."""
    return DASH if value is None else f"{value:.3g}"


def _tps(value: float | None) -> str:
    return DASH if value is None else f"{value:,.0f}"


def _pct(value: float | None, digits: int = 1) -> str:
    """A share (0..1) as a percentage."""
    return DASH if value is None else f"{value * 100:.{digits}f} %"


#: A relative change (0.05) as a signed percentage (+5.0 %).
_signed_pct = number_format("{:+.1f} %", 100)
#: A difference of two shares as signed percentage points.
_points = number_format("{:+.1f} points", 100)
_mb = number_format("{:,.1f} MB", 2**-20)


#: The metrics the significance table tests: (metric, label, how a mean is printed).
TESTED: tuple[tuple[str, str, Callable[[float | None], str]], ...] = (
    ("tps", "TPS", _tps),
    ("update_mean_ms", "UPDATE mean (ms)", _ms),
    ("hot_share", "HOT share", _pct),
)


# -- the view model ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Row:
    head: tuple[str, ...]
    cells: tuple[Cell, ...]


@dataclass(frozen=True, slots=True)
class Report:
    header: Header
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


# -- header --------------------------------------------------------------------------------


def _notices(run: Run, config: FillfactorConfig | None, data: Data) -> list[str]:
    notices = status_notice(run.status)
    reps = planned_repeat(config)
    missing = [key_text(k) for k in planned(config) if k not in data.groups]
    if missing:
        notices.append(f"Not measured: {'; '.join(missing)}.")
    short = [f"{key_text(k)}: {len(g)} of {reps}" for k, g in data.groups.items() if len(g) < reps]
    if short:
        notices.append(f"Missing repetitions: {'; '.join(short)}.")
    if data.skipped:
        notices.append(
            f"{data.skipped} point(s) with a missing or unknown size or fillfactor are left out."
        )
    return notices


def _header(run: Run, data: Data, points: int) -> Header:
    config = stored_config(FillfactorConfig, run.params)
    wanted = len(planned(config)) * planned_repeat(config)
    return header(
        run,
        PUBLICATION,
        _notices(run, config, data),
        overview(run, ("points recorded", of(points, wanted))),
        param_rows(run.params, PARAM_LABELS, list_text),
    )


# -- the memory note -----------------------------------------------------------------------


def _memory_bytes(data: Data) -> float | None:
    """The shared_buffers the points ran with (the study records it with each point)."""
    found = [v for g in data.groups.values() for v in values(g, "shared_buffers_bytes")]
    return statistics.median(found) if found else None


def _loaded_bytes(group: Sequence[FfObs]) -> float | None:
    table, index = median_of(group, "table_bytes_init"), median_of(group, "index_bytes_init")
    return None if table is None or index is None else table + index


def _size_line(data: Data, size: Size, memory: float | None) -> str:
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


def _ram_line(data: Data, ram: Any) -> str:
    largest = max(
        (v for g in data.groups.values() for v in values(g, "table_bytes_end")), default=None
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
        "reads, as in the post."
    )


def _requested(run: Run) -> str:
    """The shared_buffers the run asked for; None on a named server, which keeps its own."""
    config = stored_config(FillfactorConfig, run.params)
    return (config and config.shared_buffers) or "the server’s own"


def _memory_note(run: Run, data: Data) -> list[str]:
    memory = _memory_bytes(data)
    head = (
        f'The post\'s "memory" is mapped to shared_buffers, {_mb(memory)} in this run '
        f"(requested: {_requested(run)}); each "
        "data size is a multiple of it at fillfactor 100, and lower fillfactors load the same "
        "rows into a larger table."
    )
    sizes = [_size_line(data, size, memory) for size in data.sizes]
    seed = (
        "The post's sizes were relative to RAM (16 GB, shared_buffers 4 GB), so its 10× case "
        "read from an SSD; compare the direction of the effects, not their size."
    )
    return [head, *sizes, _ram_line(data, run.machine.get("memory_bytes")), seed]


# -- the published table -------------------------------------------------------------------


def _seed_cell(group: Sequence[FfObs]) -> Cell:
    if not group:
        return Cell(DASH)
    update, tps = median_of(group, "update_mean_ms"), median_of(group, "tps")
    return Cell(f"{_ms(update)} ({_tps(tps)})")


def _seed_columns(data: Data) -> list[int]:
    published = {ff for row in PUBLISHED.values() for ff in row}
    return sorted(published | set(data.fillfactors), reverse=True)


def _seed_rows(data: Data, columns: Sequence[int]) -> list[Row]:
    return [
        Row((SIZE_LABELS[size],), tuple(_seed_cell(data.get(size, ff)) for ff in columns))
        for size in data.sizes
    ]


def _published_rows(columns: Sequence[int]) -> list[Row]:
    rows = []
    for size, published in PUBLISHED.items():
        cells = tuple(
            Cell(f"{published[ff][0]:.2f} ({published[ff][1]:.0f})" if ff in published else DASH)
            for ff in columns
        )
        rows.append(Row((SIZE_LABELS[size],), cells))
    return rows


# -- performance and table tables ----------------------------------------------------------


def _ci_cell(group: Sequence[FfObs], name: str, fmt: Callable[[float | None], str]) -> Cell:
    found = values(group, name)
    interval = mean_interval(found)
    if interval is None:
        return Cell(fmt(statistics.fmean(found)) if found else DASH)
    return Cell(fmt(interval.mean), f"[{fmt(interval.low)}, {fmt(interval.high)}]")


def _head(key: Key, group: Sequence[FfObs]) -> tuple[str, ...]:
    scales = sorted({o.scale for o in group if o.scale is not None})
    return SIZE_LABELS[key[0]], ", ".join(map(str, scales)) or DASH, str(key[1]), str(len(group))


def _performance_row(key: Key, group: Sequence[FfObs]) -> Row:
    cells = (
        _ci_cell(group, "tps", _tps),
        _ci_cell(group, "update_mean_ms", _ms),
        Cell(_ms(median_of(group, "update_stddev_ms"))),
        Cell(_ms(median_of(group, "latency_mean_ms"))),
        Cell(count(median_of(group, "update_calls"))),
    )
    return Row(_head(key, group), cells)


def _table_row(key: Key, group: Sequence[FfObs]) -> Row:
    cells = (
        Cell(_pct(median_of(group, "hot_share"))),
        Cell(_pct(median_of(group, "newpage_share"))),
        Cell(_mb(median_of(group, "table_bytes_init"))),
        Cell(_mb(median_of(group, "table_bytes_end"))),
        Cell(_signed_pct(median_of(group, "table_growth"))),
        Cell(_signed_pct(median_of(group, "index_growth"))),
        Cell(count(median_of(group, "autovacuum_count"))),
        Cell(_pct(median_of(group, "hit_ratio"), 2)),
    )
    return Row(_head(key, group), cells)


# -- significance --------------------------------------------------------------------------


def _change(name: str, c: Comparison) -> str:
    if name == "hot_share":
        return _points(difference(c.mean_a, c.mean_b))
    return _signed_pct(c.relative)


def _significance_row(data: Data, size: Size, ff: int, tested: tuple[str, str, Any]) -> Row:
    name, label, fmt = tested
    samples = data.samples(size)
    c = compare(samples[ff], samples.get(data.reference, {}), name)
    head = (SIZE_LABELS[size], f"{ff} vs {data.reference}", label)
    cells = (
        Cell(fmt(c.mean_a)),
        Cell(fmt(c.mean_b)),
        Cell(_change(name, c)),
        Cell(p_text(c.p_value)),
        Cell(c.text),
    )
    return Row(head, cells)


def _significance_rows(data: Data) -> list[Row]:
    return [
        _significance_row(data, size, ff, tested)
        for size in data.sizes
        for ff in data.fillfactors
        if ff != data.reference and (size, ff) in data.groups
        for tested in TESTED
    ]


# -- the recommendation --------------------------------------------------------------------


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


def _slower(v: Verdict) -> str:
    losses = ", ".join(map(str, v.slower))
    return f"; fillfactor {losses} significantly slower" if v.slower else ""


def size_advice(label: str, reference_ff: int, found: Sequence[Effect]) -> str:
    """One clause for one size, from its effects against the reference fillfactor."""
    v = verdict(found)
    if v is None:
        return f"{label}: nothing measured to compare with fillfactor {reference_ff}"
    e, slower = v.shown, _slower(v)
    if v.kind == "faster":
        return (
            f"{label}: fillfactor {e.fillfactor} is faster than {reference_ff}, "
            f"{_speed(e)}, with {_price(e)}{slower}"
        )
    if v.kind == "no_hot":
        return (
            f"{label}: no fillfactor below {reference_ff} raised the HOT share; fillfactor "
            f"{e.fillfactor}: {_speed(e)}{slower}"
        )
    return (
        f"{label}: fillfactor {e.fillfactor} gives {_price(e)}; against {reference_ff}, "
        f"{_speed(e)}{slower}"
    )


def recommendation(data: Data) -> str:
    """The closing line: one clause per size, from the measured medians and the tests."""
    clauses = [
        size_advice(SIZE_LABELS[size], data.reference, effects(data.samples(size), data.reference))
        for size in data.sizes
    ]
    return f"On this workload — {'; '.join(clauses)}."


# -- the page ------------------------------------------------------------------------------


def build_report(store: Store, run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    """Draw the run's charts (writing their PNGs to `out_dir`) and return the view model the
    template renders."""
    data = read(points)
    columns = _seed_columns(data)
    keys = ordered(data)
    return Report(
        header=_header(run, data, len(points)),
        memory=_memory_note(run, data),
        seed_columns=[f"FF={ff}" for ff in columns],
        seed=_seed_rows(data, columns),
        published=_published_rows(columns),
        published_setup=PUBLISHED_SETUP,
        charts=draw_charts(data, out_dir),
        performance=[_performance_row(k, data.groups[k]) for k in keys],
        table=[_table_row(k, data.groups[k]) for k in keys],
        reference=data.reference,
        significance=_significance_rows(data),
        recommendation=recommendation(data),
    )
