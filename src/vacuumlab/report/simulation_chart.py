"""The worker timeline of a simulation: one row per worker slot, a bar per vacuum (forced ones
in red), and beneath it how many workers were busy. No relation names are drawn, so nothing
from the database reaches the SVG."""

from __future__ import annotations

from markupsafe import Markup
from matplotlib.figure import Figure

from vacuumlab.records.simulation import Simulation
from vacuumlab.report import charts
from vacuumlab.report.simulation_data import hours as hourly

_BAR = "#1f77b4"
_FORCED = "#d62728"


def timeline_svg(sim: Simulation) -> Markup:
    """The chart as inline SVG, marked safe: it is generated, not taken from the database."""
    return Markup(charts.svg_markup(timeline_figure(sim), "workers"))


def timeline_figure(sim: Simulation) -> Figure:
    fig = Figure(figsize=charts.WIDE_FIGSIZE, layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    hours = 1 / 3600.0
    every = sim.spans
    for slot in range(sim.workers):
        spans = [s for s in every if s.worker == slot]
        for forced, color in ((False, _BAR), (True, _FORCED)):
            bars = [
                (s.start_s * hours, (min(s.end_s, sim.seconds) - s.start_s) * hours)
                for s in spans
                if s.forced is forced
            ]
            if bars:
                top.broken_barh(bars, (slot - 0.4, 0.8), color=color, linewidth=0)
    top.set_yticks(range(sim.workers), [f"slot {i}" for i in range(sim.workers)])
    top.set_ylim(-0.6, sim.workers - 0.4)
    top.set_title("Which worker vacuumed when (red: forced for wraparound)")
    timeline = hourly(sim)
    bottom.bar(
        [h.start_s * hours for h in timeline],
        [h.busy_workers for h in timeline],
        width=0.9 if len(timeline) > 1 else sim.hours * 0.9,
        align="edge",
        color=_BAR,
    )
    bottom.set_ylim(0, max(sim.workers, 1))
    bottom.set_ylabel("busy")
    bottom.set_xlabel("hours")
    bottom.set_xlim(0, sim.hours)
    return fig
