"""The watch report's chart: dead tuples per relation with the spans each was seen being
vacuumed shaded in its colour, and the workers busy against those available, on one time axis;
the refreshes that could not read the server are shaded grey in both."""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from vacuumlab.report import charts
from vacuumlab.report.watch.timeline import Span, Timeline

DOWN_COLOR = "#bbbbbb"
BUSY_COLOR = "#222222"
#: Peaks further apart than this draw the dead tuples on a log scale.
SPREAD = 20
#: A vacuum seen by one refresh only still shows as a visible span.
MIN_SPAN_S = 0.5


def timelines(line: Timeline, tables: Sequence[str]) -> Figure:
    fig = Figure(figsize=(charts.WIDTH, 2 * charts.PANELS_HEIGHT), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    colors = [f"C{i % 10}" for i in range(len(tables))]
    for label, color in zip(tables, colors, strict=True):
        t, v = charts.arrays(line.dead[label])
        top.plot(t, v, color=color, linewidth=1.2, label=label)
        for span in line.vacuums.get(label, ()):
            top.axvspan(span.start, max(span.end, span.start + MIN_SPAN_S), color=color, alpha=0.18)
    top.set_ylabel("dead tuples")
    peaks = [line.peak(label) for label in tables if line.peak(label) > 0]
    if peaks and max(peaks) > SPREAD * min(peaks):
        # One large table would flatten every other line: a log scale keeps them readable,
        # linear near zero so that an emptied table still reaches the axis.
        top.set_yscale("symlog", linthresh=10)
    top.set_title("Dead tuples per relation; shaded: seen being vacuumed", loc="left")
    if not tables:
        charts.no_data(top, "no relation had dead tuples")
    t, busy = charts.arrays(line.busy)
    _, available = charts.arrays(line.available)
    bottom.step(t, busy, where="post", color=BUSY_COLOR, label="busy")
    bottom.step(t, available, where="post", color="#555555", linestyle="--", label="available")
    bottom.set_ylabel("workers")
    bottom.set_xlabel("seconds since the first refresh")
    bottom.set_ylim(bottom=0)
    for ax in (top, bottom):
        _shade_down(ax, line.down)
    handles = list(top.get_legend_handles_labels()[0])
    handles += list(bottom.get_legend_handles_labels()[0])
    if line.down:
        handles.append(Patch(color=DOWN_COLOR, label="server not read"))
    charts.legend_below(fig, handles, most=5)
    return fig


def _shade_down(ax: Axes, spans: Sequence[Span]) -> None:
    for span in spans:
        ax.axvspan(span.start, max(span.end, span.start + MIN_SPAN_S), color=DOWN_COLOR, alpha=0.5)
