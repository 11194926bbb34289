"""Figures of the cost-driver report: pure functions from plain data to a matplotlib `Figure`.

They follow `vacuumlab.report.charts` and reuse its style and helpers: no pyplot, a figure of
their own each, constrained layout. `charts.svg_markup` and `charts.save_png` turn them into
the report's deterministic SVG and PNG.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from vacuumlab.records.cost_driver_spec import PUBLICATION
from vacuumlab.report.charts import (
    FIGSIZE,
    POST_COLOR,
    STYLE,
    WIDE_FIGSIZE,
    legend_below,
    no_data,
    published_axis,
    published_handle,
    with_ci,
)
from vacuumlab.report.common import format_seconds

#: The published distributions first, in this order; any other after them, by name.
KNOWN_DISTRIBUTIONS = ("compact", "spread")
_DISTRIBUTION_COLORS = {"compact": "#1f77b4", "spread": "#ff7f0e"}
_DISTRIBUTION_MAPS = {"compact": "Blues", "spread": "Oranges"}
_OTHER_MAPS = ("Greens", "Purples", "Reds", "Greys")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

#: (metric, label, colour) of the page writers, bottom to top of the stacked bars.
WRITERS = (
    ("writes_worker_pages", "autovacuum worker", "#d62728"),
    ("writes_checkpointer_pages", "checkpointer", "#1f77b4"),
    ("writes_bgwriter_pages", "background writer", "#2ca02c"),
    ("writes_other_pages", "other backends", "#7f7f7f"),
)


def distribution_order(names: Iterable[str]) -> list[str]:
    """compact, spread, then any other distribution by name."""
    unique = set(names)
    known = [d for d in KNOWN_DISTRIBUTIONS if d in unique]
    return known + sorted(unique - set(KNOWN_DISTRIBUTIONS))


def distribution_color(name: str) -> str:
    if name in _DISTRIBUTION_COLORS:
        return _DISTRIBUTION_COLORS[name]
    # Stable for a name, whatever else the run holds: tab10 from its third colour on.
    return to_hex(colormaps["tab10"](2 + sum(name.encode()) % 8))


def _marker(indexes: int) -> str:
    return _MARKERS[indexes % len(_MARKERS)]


def _shade(distribution: str, rank: int, count: int) -> str:
    """A darker shade of the distribution's colour for a larger dead share."""
    cmap = _DISTRIBUTION_MAPS.get(distribution)
    if cmap is None:
        cmap = _OTHER_MAPS[sum(distribution.encode()) % len(_OTHER_MAPS)]
    level = 0.45 + 0.5 * (rank / (count - 1) if count > 1 else 1.0)
    return to_hex(colormaps[cmap](level))


# -- a. duration against dirty pages -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DirtyPoint:
    """One autovacuum run: its table's dirty-page share and its duration."""

    distribution: str
    indexes: int
    dirty_pct: float
    duration_s: float


def dirty_chart(points: Sequence[DirtyPoint]) -> Figure:
    """Every run's duration against its dirty-page share: colour = distribution, marker =
    index count."""
    distributions = distribution_order(p.distribution for p in points)
    index_counts = sorted({p.indexes for p in points})
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=FIGSIZE, layout="constrained")
        ax = fig.subplots()
        for d in distributions:
            for k in index_counts:
                chosen = [p for p in points if p.distribution == d and p.indexes == k]
                if chosen:
                    ax.scatter(
                        [p.dirty_pct for p in chosen],
                        [p.duration_s for p in chosen],
                        color=distribution_color(d),
                        marker=_marker(k),
                        s=30,
                        alpha=0.85,
                        edgecolors="white",
                        linewidths=0.5,
                    )
        if points:
            ax.set_xlim(0, max(105.0, max(p.dirty_pct for p in points) * 1.05))
            ax.set_ylim(bottom=0)
        else:
            no_data(ax, "no autovacuum run with both a duration and a dirty-page share")
        ax.set_xlabel("dirty pages after the DELETE (% of the table's pages)")
        ax.set_ylabel("autovacuum duration (s)")
        ax.set_title("Duration against dirty pages, every run")
        handles: list[Any] = [Patch(color=distribution_color(d), label=d) for d in distributions]
        handles += [
            Line2D([], [], color="#555555", marker=_marker(k), linestyle="", label=f"{k} idx")
            for k in index_counts
        ]
        legend_below(fig, handles, 6)
    return fig


# -- b. duration against index count -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IndexLine:
    """Median duration (and quartiles) by index count, for one distribution × dead share."""

    distribution: str
    dead_pct: int
    indexes: tuple[int, ...]
    median: tuple[float | None, ...]
    q1: tuple[float | None, ...]
    q3: tuple[float | None, ...]


def index_chart(lines: Sequence[IndexLine], published: Mapping[int, float]) -> Figure:
    """One line per distribution × dead share: median with IQR error bars, by index count;
    the post's published series on a right axis of its own."""
    index_counts = sorted({k for line in lines for k in line.indexes})
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=FIGSIZE, layout="constrained")
        ax = fig.subplots()
        for i, line in enumerate(lines):
            same = [x for x in lines if x.distribution == line.distribution]
            offset = (i - (len(lines) - 1) / 2) * 0.035
            with_ci(
                ax,
                [k + offset for k in line.indexes],
                line.median,
                line.q1,
                line.q3,
                color=_shade(line.distribution, same.index(line), len(same)),
                label=f"{line.distribution}, {line.dead_pct} % dead",
            )
        handles: list[Any] = list(ax.get_legend_handles_labels()[0])
        seed_ax = published_axis(ax, published, index_counts, "s")
        if seed_ax is not None:
            seed_ax.set_ylim(bottom=0)  # from 0 like the left axis, so the slopes compare
            seed_ax.set_ylabel(f"{PUBLICATION.short()}, 10M rows (s)", color=POST_COLOR)
            handles.append(published_handle(f"{PUBLICATION.short()}, compact 50 % (right axis)"))
        if ax.has_data():
            ax.set_ylim(bottom=0)
            ax.set_xticks(index_counts)
        else:
            no_data(ax, "no autovacuum run with a duration")
        ax.set_xlabel("redundant B-tree indexes on the table")
        ax.set_ylabel("autovacuum duration (s), median and IQR")
        ax.set_title("Duration against index count")
        fig.legend(handles=handles, loc="outside right upper", frameon=False)
    return fig


# -- c. heatmap of medians -----------------------------------------------------------------


def heatmap_chart(
    row_labels: Sequence[str], columns: Sequence[int], values: Sequence[Sequence[float | None]]
) -> Figure:
    """Median durations, one row per distribution × dead share, one column per index count,
    each cell annotated with its value."""
    grid = np.array(
        [[math.nan if v is None else v for v in row] for row in values], dtype=np.float64
    ).reshape(len(row_labels), len(columns))
    height = 1.6 + 0.42 * max(len(row_labels), 1)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(10.0, height), layout="constrained")
        ax = fig.subplots()
        ax.grid(False)
        if np.isfinite(grid).any():
            _draw_cells(fig, ax, grid)
        else:
            no_data(ax, "no autovacuum run with a duration")
        ax.set_xticks(np.arange(len(columns)) + 0.5, labels=[str(c) for c in columns])
        ax.set_yticks(np.arange(len(row_labels)) + 0.5, labels=list(row_labels))
        ax.set_xlim(0, max(len(columns), 1))
        ax.set_ylim(max(len(row_labels), 1), 0)  # first row on top
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.set_xlabel("redundant B-tree indexes")
        ax.set_title("Median autovacuum duration (s) by combination")
    return fig


def _draw_cells(fig: Figure, ax: Axes, grid: np.ndarray[Any, np.dtype[np.float64]]) -> None:
    mesh = ax.pcolormesh(
        np.ma.masked_invalid(grid), cmap="viridis", edgecolors="white", linewidth=1.5
    )
    fig.colorbar(mesh, ax=ax, label="seconds", pad=0.01)
    low, high = float(np.nanmin(grid)), float(np.nanmax(grid))
    for (i, j), value in np.ndenumerate(grid):
        if math.isnan(value):
            ax.text(j + 0.5, i + 0.5, "—", ha="center", va="center", color="#666666")
            continue
        dark = high == low or (value - low) / (high - low) < 0.6  # viridis: dark, then light
        ax.text(
            j + 0.5,
            i + 0.5,
            format_seconds(value),
            ha="center",
            va="center",
            color="white" if dark else "black",
            fontsize=8,
        )


# -- d. who wrote the pages ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriterPanel:
    """Median pages written by each writer (metric name -> one value per index count)."""

    title: str
    indexes: tuple[int, ...]
    pages: Mapping[str, tuple[float | None, ...]]


def writers_chart(panels: Sequence[WriterPanel]) -> Figure:
    """Stacked bars of pages written by the autovacuum worker, the checkpointer, the
    background writer and other backends, by index count, one panel per distribution."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=WIDE_FIGSIZE, layout="constrained")
        axes = fig.subplots(1, max(len(panels), 1), sharey=True, squeeze=False)[0]
        for ax, panel in zip(axes, panels, strict=False):
            _stack(ax, panel)
        if not panels:
            no_data(axes[0], "no autovacuum run recorded")
        axes[0].set_ylabel("pages written (median)")
        legend_below(fig, [Patch(color=c, label=label) for _, label, c in WRITERS], 6)
    return fig


def _stack(ax: Axes, panel: WriterPanel) -> None:
    x = np.arange(len(panel.indexes), dtype=np.float64)
    bottom = np.zeros(len(panel.indexes))
    drawn = False
    for metric, label, color in WRITERS:
        raw = panel.pages.get(metric, ())
        if not any(v is not None for v in raw):
            continue
        values = np.array([0.0 if v is None else v for v in raw], dtype=np.float64)
        ax.bar(x, values, bottom=bottom, color=color, width=0.6, label=label)
        bottom += values
        drawn = True
    if not drawn:
        no_data(ax, "no write counters (pg_stat_io needs PostgreSQL 16)")
    ax.set_xticks(x, labels=[str(k) for k in panel.indexes])
    ax.set_xlim(-0.5, max(len(panel.indexes), 1) - 0.5)
    ax.set_xlabel("redundant B-tree indexes")
    ax.set_title(panel.title)


# -- e. predicted against measured ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pair:
    """A run's predicted and measured value of the same quantity, in seconds."""

    distribution: str
    predicted: float
    measured: float


def prediction_chart(durations: Sequence[Pair], delays: Sequence[Pair]) -> Figure:
    """Left: predicted against measured duration; right: predicted against measured time
    asleep in the cost-based delay. Both with the y = x line."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=WIDE_FIGSIZE, layout="constrained")
        left, right = fig.subplots(1, 2)
        _pairs(left, durations, "no run with both a predicted and a measured duration")
        left.set_title("duration")
        left.set_xlabel("predicted (s)")
        left.set_ylabel("measured (s)")
        _pairs(right, delays, "no delay time recorded (needs PostgreSQL 18's delay timing)")
        right.set_title("time asleep in the cost-based delay")
        right.set_xlabel("predicted_delay_s (s)")
        right.set_ylabel("delay_time_s, measured (s)")
        shown = distribution_order(p.distribution for p in [*durations, *delays])
        handles: list[Any] = [Patch(color=distribution_color(d), label=d) for d in shown]
        handles.append(Line2D([], [], color="#444444", linestyle="--", label="y = x"))
        legend_below(fig, handles, 6)
    return fig


def _pairs(ax: Axes, pairs: Sequence[Pair], empty: str) -> None:
    if not pairs:
        no_data(ax, empty)
        return
    for d in distribution_order(p.distribution for p in pairs):
        chosen = [p for p in pairs if p.distribution == d]
        ax.scatter(
            [p.predicted for p in chosen],
            [p.measured for p in chosen],
            color=distribution_color(d),
            s=26,
            alpha=0.85,
            edgecolors="white",
            linewidths=0.5,
        )
    top = max(max(p.predicted, p.measured) for p in pairs) * 1.08 or 1.0
    ax.plot([0, top], [0, top], color="#444444", linestyle="--", linewidth=0.9)
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
