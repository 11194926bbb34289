"""The fillfactor report's charts: HOT updates, growth and speed by fillfactor, one line per
data size, drawn from the run's groups and saved beside the page."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from matplotlib.figure import Figure

from vacuumlab.records.fillfactor_spec import SIZE_LABELS, Size
from vacuumlab.report.fillfactor import figures
from vacuumlab.report.fillfactor.data import Data, FfObs, extent, median_of
from vacuumlab.report.page import Chart, chart, values
from vacuumlab.stats.fillfactor import relative
from vacuumlab.stats.significance import mean_interval

#: chart key -> (section title, PNG file).
CHARTS = {
    "hot": ("HOT updates by fillfactor", "hot.png"),
    "growth": ("Table growth by fillfactor", "growth.png"),
    "performance": ("TPS and UPDATE time by fillfactor", "performance.png"),
}

Bounds = tuple[float | None, float | None, float | None]
#: What a chart shows of one group of repetitions: a centre and its lower and upper bound.
Summarise = Callable[[Sequence[FfObs]], Bounds]


def _line(data: Data, size: Size, summarise: Summarise) -> figures.Line:
    ffs = tuple(ff for ff in data.fillfactors if data.get(size, ff))
    bounds = [summarise(data.get(size, ff)) for ff in ffs]
    centre, low, high = (tuple(b[i] for b in bounds) for i in range(3))
    return figures.Line(size, SIZE_LABELS[size], ffs, centre, low, high)


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _median_range(name: str, factor: float = 1.0) -> Summarise:
    """Median with the lowest and highest repetition, times ``factor``."""

    def bounds(group: Sequence[FfObs]) -> Bounds:
        low, high = extent(group, name)
        return _scaled(median_of(group, name), factor), _scaled(low, factor), _scaled(high, factor)

    return bounds


def _mean_ci(name: str) -> Summarise:
    """Mean with its 95 % confidence interval (the mean alone with one repetition)."""

    def bounds(group: Sequence[FfObs]) -> Bounds:
        found = values(group, name)
        interval = mean_interval(found)
        if interval is None:
            return (statistics.fmean(found) if found else None), None, None
        return interval.mean, interval.low, interval.high

    return bounds


def _extra_space(data: Data) -> Summarise:
    """Table size at the end against the reference fillfactor's at the same size (medians),
    in %."""

    def bounds(group: Sequence[FfObs]) -> Bounds:
        ref = median_of(data.get(group[0].size, data.reference), "table_bytes_end")
        return _scaled(relative(median_of(group, "table_bytes_end"), ref), 100), None, None

    return bounds


def _panel(data: Data, title: str, ylabel: str, summarise: Summarise) -> figures.Panel:
    return figures.Panel(title, ylabel, tuple(_line(data, s, summarise) for s in data.sizes))


def _figures(data: Data) -> dict[str, Figure]:
    spread, share = "median and range", "% of updates"
    return {
        "hot": figures.panels_chart([
            _panel(data, "HOT updates", f"{share}, {spread}", _median_range("hot_share", 100)),
            _panel(data, "updates that moved to a new page", f"{share}, {spread}",
                   _median_range("newpage_share", 100)),
        ]),
        "growth": figures.panels_chart([
            _panel(data, "table growth during the run", f"% of the loaded size, {spread}",
                   _median_range("table_growth", 100)),
            _panel(data, "index growth during the run", f"% of the loaded size, {spread}",
                   _median_range("index_growth", 100)),
            _panel(data, f"table size against fillfactor {data.reference}", "% larger at the end",
                   _extra_space(data)),
        ]),
        "performance": figures.panels_chart([
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


def draw_charts(data: Data, out_dir: Path) -> list[Chart]:
    return [
        chart(key, fig, CHARTS[key], _CAPTIONS[key], out_dir) for key, fig in _figures(data).items()
    ]
