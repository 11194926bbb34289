"""Charts of the fillfactor report: pure functions from plain data to a matplotlib `Figure`.

Every chart is the same shape: panels with the fillfactor on the x axis (100 on the left, as in
the published table, so reading rightwards lowers the fillfactor) and one line per data size.
They reuse `vacuumlab.report.charts` (style, `with_ci`, `no_data`); `charts.svg_markup` and
`charts.save_png` turn them into the report's deterministic SVG and PNG.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from vacuumlab.report.charts import PANELS_HEIGHT, STYLE, WIDTH, legend_below, no_data, with_ci

#: One colour per size, from small to large data: blue, orange, red; others grey.
SIZE_COLORS = {"fits": "#1f77b4", "2x": "#ff7f0e", "10x": "#d62728"}
OTHER_COLOR = "#7f7f7f"
#: Lines of different sizes sit this far apart on the x axis, so their whiskers do not hide
#: each other.
OFFSET = 0.45


@dataclass(frozen=True, slots=True)
class Line:
    """One size's values by fillfactor, each with an optional lower and upper bound."""

    size: str
    label: str
    fillfactors: tuple[int, ...]
    value: tuple[float | None, ...]
    low: tuple[float | None, ...]
    high: tuple[float | None, ...]


@dataclass(frozen=True, slots=True)
class Panel:
    title: str
    ylabel: str
    lines: tuple[Line, ...]
    from_zero: bool = True


def size_color(size: str) -> str:
    return SIZE_COLORS.get(size, OTHER_COLOR)


def panels_chart(panels: Sequence[Panel], *, width: float = WIDTH) -> Figure:
    """The panels side by side, sharing the sizes' legend below them."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(width, PANELS_HEIGHT), layout="constrained")
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for ax, panel in zip(axes, panels, strict=True):
            _panel(ax, panel)
        _legend(fig, [line for panel in panels for line in panel.lines])
    return fig


def _panel(ax: Axes, panel: Panel) -> None:
    count = len(panel.lines)
    for i, line in enumerate(panel.lines):
        shift = (i - (count - 1) / 2) * OFFSET
        xs = [ff + shift for ff in line.fillfactors]
        with_ci(
            ax, xs, line.value, line.low, line.high, color=size_color(line.size), label=line.label
        )
    ticks = sorted({ff for line in panel.lines for ff in line.fillfactors}, reverse=True)
    if ax.has_data():
        ax.set_xticks(ticks)
        ax.set_xlim(max(ticks) + 3, min(ticks) - 3)  # inverted: 100 on the left
        if panel.from_zero:
            _from_zero(ax, panel.lines)
    else:
        no_data(ax, "not recorded")
    ax.set_xlabel("fillfactor")
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title)


def _from_zero(ax: Axes, lines: Sequence[Line]) -> None:
    """A y axis from 0 (or the lowest value, when negative) with room above the highest
    marker and whisker; 0 to 1 when every value is 0."""
    values = [v for line in lines for v in (*line.value, *line.high) if v is not None]
    low, high = min(0.0, *values), max(0.0, *values)
    top = high + 0.08 * (high - low) if high > low else 1.0
    ax.set_ylim(low, top)


def _legend(fig: Figure, lines: Sequence[Line]) -> None:
    seen: dict[str, str] = {}
    for line in lines:
        seen.setdefault(line.size, line.label)
    handles = [
        Line2D([], [], color=size_color(size), marker="o", markersize=4, label=label)
        for size, label in seen.items()
    ]
    legend_below(fig, handles)
