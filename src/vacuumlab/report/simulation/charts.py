"""The chart of a simulation: the dead tuples of the busiest relations over the window, each
vacuum marked where it empties them, and beneath it how many workers were busy, hour by hour.

Vacuums of small tables take milliseconds, so a bar per vacuum would be invisible in an
hour-long window; what a reader wants is how high dead tuples climb and how often vacuum
brings them down. The lines are numbered as the rows of the page's table (busiest first): no
relation names are drawn, so nothing from the database reaches the SVG."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup
from matplotlib.figure import Figure

from vacuumlab.model.simulator import dead_after_vacuum
from vacuumlab.records.simulation import RelationForecast, Simulation, WorkerSpan
from vacuumlab.report import charts
from vacuumlab.report.simulation.data import busiest
from vacuumlab.report.simulation.data import hours as hourly

_BAR = "#1f77b4"
_FORCED = "#d62728"
#: Relations drawn: more lines than this are a tangle.
DRAWN = 5
#: Buckets across the window: a relation vacuumed more often than this is drawn as the range
#: its dead tuples span in each bucket, and each bucket with a vacuum gets one mark. It keeps a
#: day of a busy table (tens of thousands of vacuums) to a few thousand points in the SVG.
BUCKETS = 600


def timeline_svg(sim: Simulation) -> Markup:
    """The chart as inline SVG, marked safe: it is generated, not taken from the database."""
    return Markup(charts.svg_markup(timeline_figure(sim), "workers"))


def dead_series(
    r: RelationForecast, spans: Sequence[WorkerSpan], window_s: float
) -> tuple[list[tuple[float, float]], list[tuple[float, float, bool]]]:
    """The relation's n_dead_tup over the window as the simulator moves it, as (seconds,
    tuples) corners, and its vacuums as (end, tuples just before, forced).

    Dead tuples grow at the measured rate; a vacuum removes those present when it started, and
    at its end the counter holds what is left (``dead_after_vacuum()``, as ``model.simulator``
    has it from 14)."""
    rate = r.dead_per_second
    at, dead = 0.0, float(r.dead_at_start or 0)
    corners = [(at, dead)]
    vacuums = []
    for span in sorted(spans, key=lambda s: s.start_s):
        end = min(span.end_s, window_s)
        peak = dead + rate * (end - at)
        corners.append((end, peak))
        at, dead = end, dead_after_vacuum(rate, end - span.start_s)
        corners.append((at, dead))
        vacuums.append((end, peak, span.forced))
    corners.append((window_s, dead + rate * (window_s - at)))
    return corners, vacuums


def _bucketed(
    corners: list[tuple[float, float]], window_s: float
) -> tuple[list[float], list[float]]:
    """Corners as drawn: all of them when few, else the low and high of each bucket."""
    if len(corners) <= 2 * BUCKETS:
        return [t for t, _ in corners], [d for _, d in corners]
    width = window_s / BUCKETS
    low = [float("inf")] * BUCKETS
    high = [float("-inf")] * BUCKETS
    for t, d in corners:
        b = min(int(t / width), BUCKETS - 1)
        low[b], high[b] = min(low[b], d), max(high[b], d)
    xs, ys = [], []
    for b in range(BUCKETS):
        if low[b] <= high[b]:
            xs += [(b + 0.5) * width] * 2
            ys += [high[b], low[b]]
    return xs, ys


def _marks(
    vacuums: list[tuple[float, float, bool]], window_s: float
) -> list[tuple[float, float, bool]]:
    """One mark per bucket with a vacuum (the highest; forced if any was)."""
    if len(vacuums) <= BUCKETS:
        return vacuums
    width = window_s / BUCKETS
    kept: dict[int, tuple[float, float, bool]] = {}
    for end, peak, forced in vacuums:
        b = min(int(end / width), BUCKETS - 1)
        was = kept.get(b)
        if was is None or peak > was[1] or (forced and not was[2]):
            kept[b] = (end, max(peak, was[1] if was else peak), forced or bool(was and was[2]))
    return [kept[b] for b in sorted(kept)]


def timeline_figure(sim: Simulation) -> Figure:
    fig = Figure(figsize=charts.WIDE_FIGSIZE, layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    hours = 1 / 3600.0
    window = sim.seconds
    spans: dict[str, list[WorkerSpan]] = {}
    for span in sim.spans:
        spans.setdefault(span.relation, []).append(span)
    drawn = busiest(sim, DRAWN)
    for rank, r in enumerate(drawn, start=1):
        corners, vacuums = dead_series(r, spans.get(r.relation, []), window)
        xs, ys = _bucketed(corners, window)
        (line,) = top.plot([x * hours for x in xs], ys, linewidth=1.2, label=f"#{rank}")
        marks = _marks(vacuums, window)
        for forced, color, shape in ((False, line.get_color(), "v"), (True, _FORCED, "X")):
            chosen = [(end, peak) for end, peak, f in marks if f is forced]
            if chosen:
                top.scatter(
                    [end * hours for end, _ in chosen], [peak for _, peak in chosen],
                    marker=shape, s=18, color=color, zorder=3, linewidths=0,
                )  # fmt: skip
    if drawn:
        top.legend(title="row", loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    top.set_ylim(bottom=0)
    top.set_ylabel("dead tuples")
    top.set_title(
        f"Dead tuples of the {len(drawn)} busiest relations; "
        "▼ a vacuum ends (red ✕: forced for wraparound)"
    )
    timeline = hourly(sim)
    bottom.bar(
        [h.start_s * hours for h in timeline],
        [h.busy_workers for h in timeline],
        width=0.9 if len(timeline) > 1 else sim.hours * 0.9,
        align="edge",
        color=_BAR,
    )
    bottom.set_ylim(0, max(sim.workers, 1))
    bottom.set_ylabel("busy workers\n(hourly mean)")
    bottom.set_xlabel("hours")
    bottom.set_xlim(0, sim.hours)
    return fig
