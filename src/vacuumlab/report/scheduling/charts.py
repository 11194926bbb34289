"""The scheduling report's chart: one arm's autovacuums, measured above and predicted below,
one row per table, on the load's clock."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from vacuumlab.report import charts

MEASURED_COLOR = "#1f77b4"
PREDICTED_COLOR = "#ff7f0e"
#: A vacuum shorter than this still shows as a visible bar.
MIN_WIDTH_S = 0.3

Spans = Mapping[str, Sequence[tuple[float, float | None]]]


def gantt(
    title: str,
    tables: Sequence[str],
    measured: Spans,
    predicted: Spans,
    window: tuple[float, float],
) -> Figure:
    """Two panels sharing the time axis: what PostgreSQL did (whole load) and what the
    simulator predicted (from the second snapshot on); the window is shaded in both."""
    height = max(3.0, 1.2 + 0.14 * len(tables))
    fig = Figure(figsize=(charts.WIDTH, 2 * height), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    _panel(top, "measured", tables, measured, window, MEASURED_COLOR)
    _panel(bottom, "predicted by the simulator", tables, predicted, window, PREDICTED_COLOR)
    bottom.set_xlabel("seconds since the load started")
    fig.suptitle(title)
    return fig


def _panel(
    ax: Axes,
    label: str,
    tables: Sequence[str],
    spans: Spans,
    window: tuple[float, float],
    color: str,
) -> None:
    ax.axvspan(window[0], window[1], color="#eeeeee", zorder=0)
    for row, table in enumerate(tables):
        bars = [(start, max(d or 0.0, MIN_WIDTH_S)) for start, d in spans.get(table, ())]
        if bars:
            ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=color)
    ax.set_yticks(range(len(tables)), labels=list(tables), fontsize=6)
    ax.set_ylim(len(tables) - 0.5, -0.5)
    ax.set_title(label, fontsize=9, loc="left")
    ax.grid(axis="x", alpha=0.3)
    if not tables:
        charts.no_data(ax, "no table was vacuumed")
