"""The churn report's figures: pure functions from plain data to a matplotlib `Figure`, in
the shared style of `vacuumlab.report.charts`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib as mpl
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import EngFormatter, MaxNLocator

from vacuumlab.report.charts import (
    COMPARISON_FIGSIZE,
    STEP_FIGSIZE,
    STYLE,
    Samples,
    arrays,
    legend_below,
    no_data,
    published_axis,
    published_handle,
    with_ci,
)

P50_COLOR = "#1f77b4"
P99_COLOR = "#d62728"
TPS_COLOR = "#2ca02c"
DEAD_COLOR = "#7f7f7f"
VACUUM_COLOR = "#ff7f0e"
WARMUP_COLOR = "#bbbbbb"


def step_chart(
    title: str,
    *,
    latency_p50: Samples,
    latency_p99: Samples,
    tps: Samples,
    dead_tuples: Samples,
    autovacuums: Samples,
    warmup_s: float | None = None,
) -> Figure:
    """One step over time: latency p50/p99 with dead tuples (top), TPS (bottom).

    `autovacuums` holds one (start, duration) per autovacuum run; each is shaded as a span
    on both panels (a run of unknown or zero duration as a line). The warm-up, excluded from
    the step's metrics, is hatched grey.
    """
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=STEP_FIGSIZE, layout="constrained")
        lat_ax, tps_ax, dead_ax = _step_axes(fig)
        shaded = _warmup(lat_ax, tps_ax, warmup_s) + _autovacuums(lat_ax, tps_ax, autovacuums)
        dead = _dead_tuples(dead_ax, dead_tuples)
        latency = _latency(lat_ax, latency_p50, latency_p99)
        end = _end((latency_p50, latency_p99, tps, dead_tuples), autovacuums)
        _tps(tps_ax, tps, end)
        fig.suptitle(title, fontsize=11, fontweight="bold", parse_math=False)
        legend_below(fig, latency + shaded + dead)
    return fig


def _step_axes(fig: Figure) -> tuple[Axes, Axes, Axes]:
    """Latency (with dead tuples on a twin axis behind it) above TPS."""
    lat_ax, tps_ax = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2.2, 1.0]})
    dead_ax = lat_ax.twinx()
    dead_ax.grid(False)
    dead_ax.spines["top"].set_visible(False)
    # Latency lines above the dead-tuple curve of the twin axis.
    lat_ax.set_zorder(dead_ax.get_zorder() + 1)
    lat_ax.patch.set_visible(False)
    return lat_ax, tps_ax, dead_ax


def _end(series: Sequence[Samples], autovacuums: Samples) -> float:
    """The last second anything was recorded, or an autovacuum ran."""
    ends = [float(s[-1][0]) for s in series if s]
    ends += [start + (duration or 0.0) for start, duration in autovacuums]
    return max([0.0, *ends])


def _warmup(lat_ax: Axes, tps_ax: Axes, warmup_s: float | None) -> list[Any]:
    if not warmup_s:
        return []
    hatch: dict[str, Any] = {"facecolor": "none", "edgecolor": WARMUP_COLOR, "hatch": "///"}
    for ax in (lat_ax, tps_ax):
        ax.axvspan(0.0, warmup_s, **hatch, linewidth=0.0, zorder=0)
    return [Patch(**hatch, label="warm-up (excluded)")]


def _autovacuums(lat_ax: Axes, tps_ax: Axes, autovacuums: Samples) -> list[Any]:
    for start, duration in autovacuums:
        for ax in (lat_ax, tps_ax):
            if duration:
                ax.axvspan(
                    start, start + duration, color=VACUUM_COLOR, alpha=0.22, linewidth=0.0, zorder=0
                )
            else:
                ax.axvline(start, color=VACUUM_COLOR, alpha=0.6, linewidth=1.0, zorder=0)
    return [Patch(color=VACUUM_COLOR, alpha=0.3, label="autovacuum running")] if autovacuums else []


def _dead_tuples(dead_ax: Axes, dead_tuples: Samples) -> list[Any]:
    handles: list[Any] = []
    if dead_tuples:
        t, v = arrays(dead_tuples)
        dead_ax.fill_between(t, v, color=DEAD_COLOR, alpha=0.12, linewidth=0.0)
        dead_ax.plot(t, v, color=DEAD_COLOR, linewidth=1.0)
        dead_ax.set_ylim(bottom=0)
        handles.append(Line2D([], [], color=DEAD_COLOR, label="n_dead_tup (right axis)"))
    dead_ax.set_ylabel("dead tuples", color=DEAD_COLOR)
    dead_ax.yaxis.set_major_formatter(EngFormatter(sep=""))
    dead_ax.tick_params(axis="y", colors=DEAD_COLOR)
    return handles


def _latency(lat_ax: Axes, p50: Samples, p99: Samples) -> list[Any]:
    """p99 drawn first, under p50; the legend lists p50 first."""
    handles: list[Any] = []
    for samples, label, color, width in (
        (p99, "latency p99", P99_COLOR, 1.1),
        (p50, "latency p50", P50_COLOR, 1.3),
    ):
        if samples:
            t, v = arrays(samples)
            lat_ax.plot(t, v, color=color, linewidth=width, label=label)
            handles.insert(0, Line2D([], [], color=color, linewidth=width, label=label))
    if p50 or p99:
        lat_ax.set_ylim(bottom=0)
    else:
        no_data(lat_ax, "no per-second latency recorded")
    lat_ax.set_ylabel("latency (ms)")
    return handles


def _tps(tps_ax: Axes, tps: Samples, end: float) -> None:
    if tps:
        t, v = arrays(tps)
        tps_ax.plot(t, v, color=TPS_COLOR, linewidth=1.1)
        tps_ax.set_ylim(bottom=0)
    else:
        no_data(tps_ax, "no per-second TPS recorded")
    tps_ax.set_ylabel("TPS")
    tps_ax.set_xlabel("seconds since the step's load started")
    tps_ax.set_xlim(0.0, max(end, 1.0))


@dataclass(frozen=True, slots=True)
class StepResult:
    """The figures of one step (one repetition) that the comparison chart shows."""

    step: int
    repetition: int
    latency_mean_ms: float | None = None
    latency_mean_ci_low: float | None = None
    latency_mean_ci_high: float | None = None
    latency_stddev_ms: float | None = None
    tps: float | None = None
    tps_ci_low: float | None = None
    tps_ci_high: float | None = None
    dead_tuples_peak: float | None = None


def _rep_color(k: int) -> str:
    return to_hex(colormaps["tab10"](k % 10))


def _rep_label(rep: int, count: int) -> str:
    return "measured" if count == 1 else f"repetition {rep + 1}"


#: The comparison's panels, left to right and top to bottom: the metric, its 95 % interval
#: (where it has one), title and unit.
_PANELS = (
    (
        "latency_mean_ms",
        "latency_mean_ci_low",
        "latency_mean_ci_high",
        "mean latency, 95 % CI",
        "ms",
    ),
    ("latency_stddev_ms", None, None, "latency standard deviation", "ms"),
    ("tps", "tps_ci_low", "tps_ci_high", "throughput, 95 % CI", "TPS"),
    ("dead_tuples_peak", None, None, "dead-tuple peak", "dead tuples"),
)


def comparison_chart(
    results: Sequence[StepResult],
    *,
    published_latency_ms: Mapping[int, float],
    published_stddev_ms: Mapping[int, float],
    published_tps: Mapping[int, float],
) -> Figure:
    """Small multiples across steps: mean latency (95 % CI), stddev, TPS (95 % CI), peak dead
    tuples. Repetitions are drawn side by side, slightly offset; the post's published figures,
    where given, on a right axis of their own."""
    steps = sorted({r.step for r in results})
    reps = sorted({r.repetition for r in results})
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=COMPARISON_FIGSIZE, layout="constrained")
        axes = list(fig.subplots(2, 2, sharex=True).flat)
        for k, rep in enumerate(reps):
            _repetition(axes, [r for r in results if r.repetition == rep], k, len(reps))
        published = (published_latency_ms, published_stddev_ms, published_tps)
        posts = [
            published_axis(ax, values, steps, unit)
            for ax, values, unit in zip(axes, published, ("ms", "ms", "TPS"), strict=False)
        ]
        _label_panels(axes, steps)
        handles = [
            Line2D(
                [],
                [],
                color=_rep_color(k),
                marker="o",
                markersize=4,
                label=_rep_label(rep, len(reps)),
            )
            for k, rep in enumerate(reps)
        ]
        if any(post is not None for post in posts):
            handles.append(published_handle("published in the post (right axis)"))
        fig.legend(handles=handles, loc="outside upper center", ncols=len(handles), frameon=False)
    return fig


def _repetition(axes: Sequence[Axes], rows: Sequence[StepResult], k: int, count: int) -> None:
    """One repetition on every panel, offset sideways from the others."""
    rows = sorted(rows, key=lambda r: r.step)
    offset = (k - (count - 1) / 2) * 0.12
    xs = [r.step + offset for r in rows]
    label = _rep_label(rows[0].repetition, count)
    for ax, (value, low, high, _, _) in zip(axes, _PANELS, strict=True):
        with_ci(
            ax,
            xs,
            [getattr(r, value) for r in rows],
            [getattr(r, low) if low else None for r in rows],
            [getattr(r, high) if high else None for r in rows],
            color=_rep_color(k),
            label=label,
        )


def _label_panels(axes: Sequence[Axes], steps: Sequence[int]) -> None:
    for ax, (_, _, _, title, unit) in zip(axes, _PANELS, strict=True):
        ax.set_title(title)
        ax.set_ylabel(unit)
    axes[3].yaxis.set_major_formatter(EngFormatter(sep=""))
    for ax in axes[2:]:
        ax.set_xlabel("step")
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if steps:
            ax.set_xlim(steps[0] - 0.5, steps[-1] + 0.5)
        if not ax.has_data():
            no_data(ax, "not recorded")


def _rep_handle(k: int, label: str) -> Line2D:
    return Line2D([], [], color=_rep_color(k), marker="o", markersize=4, label=label)
