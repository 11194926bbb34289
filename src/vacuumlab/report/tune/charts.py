"""The tune report's figures: pure functions from plain data to a matplotlib `Figure`, in the
shared style of `vacuumlab.report.charts`. Labels taken from the store are drawn as plain text
(no math parsing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import EngFormatter, MaxNLocator

from vacuumlab.report.charts import (
    BAR_FIGSIZE,
    FIGSIZE,
    PANELS_HEIGHT,
    STYLE,
    WIDE_FIGSIZE,
    WIDTH,
    Samples,
    arrays,
    legend_below,
    no_data,
)

#: One colour per origin of a trial.
ORIGIN_COLORS = {
    "current": "#7f7f7f",
    "advice": "#2ca02c",
    "simulator": "#ff7f0e",
    "search": "#1f77b4",
}
BEST_COLOR = "#d62728"
CURRENT_COLOR = "#7f7f7f"
WINNER_COLOR = "#ff7f0e"
FRONT_COLOR = "#1f77b4"
MEASURED_COLOR = "#444444"
FLAGGED_COLOR = "#bbbbbb"
WARMUP_COLOR = "#bbbbbb"


@dataclass(frozen=True, slots=True)
class TrialValues:
    """One trial's measurements of one metric, in repetition order."""

    number: int
    origin: str
    values: list[float]
    flagged: bool


@dataclass(frozen=True, slots=True)
class Panel:
    """One objective's panel of the trial history."""

    label: str
    trials: list[TrialValues]
    best_so_far: list[float | None]  # by trial, in order


def trial_history(panels: Sequence[Panel]) -> Figure:
    """Each trial's first measurement (filled, by origin), its confirmations (hollow) and the
    best first measurement so far (a step line), one panel per objective."""
    height = max(PANELS_HEIGHT, 1.0 + 3.0 * len(panels))
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH, height), layout="constrained")
        axes = fig.subplots(max(len(panels), 1), 1, sharex=True, squeeze=False)[:, 0]
        for ax, panel in zip(axes, panels, strict=False):
            _history_panel(ax, panel)
        axes[-1].set_xlabel("trial, in the order measured")
        axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
        handles: list[Line2D | Patch] = [
            Line2D([], [], color=c, marker="o", linestyle="", label=o)
            for o, c in ORIGIN_COLORS.items()
        ]
        handles += [
            Line2D([], [], color="#444444", marker="o", markerfacecolor="white", linestyle="",
                   label="confirmation"),
            Line2D([], [], color=FLAGGED_COLOR, marker="x", linestyle="", label="replay off"),
            Line2D([], [], color=BEST_COLOR, drawstyle="steps-post", label="best so far"),
        ]  # fmt: skip
        legend_below(fig, handles)
        fig.suptitle("The objective, trial by trial", fontsize=11, fontweight="bold")
    return fig


def _history_panel(ax: Axes, panel: Panel) -> None:
    shown = False
    for t in panel.trials:
        if not t.values:
            continue
        shown = True
        color = FLAGGED_COLOR if t.flagged else ORIGIN_COLORS.get(t.origin, "#444444")
        marker = "x" if t.flagged else "o"
        ax.plot([t.number], [t.values[0]], color=color, marker=marker, linestyle="", zorder=3)
        if len(t.values) > 1:
            ax.plot([t.number] * (len(t.values) - 1), t.values[1:], color=color, marker="o",
                    markerfacecolor="white", linestyle="", markersize=5, zorder=3)  # fmt: skip
    line = [
        (t.number, b) for t, b in zip(panel.trials, panel.best_so_far, strict=True) if b is not None
    ]
    if line:
        ax.plot([n for n, _ in line], [b for _, b in line], color=BEST_COLOR,
                drawstyle="steps-post", linewidth=1.2, zorder=2)  # fmt: skip
    if not shown:
        no_data(ax, "no trial measured it")
    ax.set_ylabel(panel.label)
    ax.yaxis.set_major_formatter(EngFormatter(sep=""))


@dataclass(frozen=True, slots=True)
class Measured:
    """One measured trial on the measured front: its means."""

    number: int
    latency: float
    dead: float
    role: str | None  # "current", "best" or None
    flagged: bool = False


def pareto(
    front: Sequence[tuple[float, float]],
    current: tuple[float, float] | None,
    pick: tuple[float, float] | None,
    measured: Sequence[Measured] | None,
) -> Figure:
    """The simulator's front, (worker seconds, predicted dead-tuple peak), with the current
    settings' prediction and the pick; with ``measured``, a second panel of the measured
    trials' dead-tuple peak against their p99 latency."""
    size = FIGSIZE if measured is None else (WIDTH, 2 * PANELS_HEIGHT)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=size, layout="constrained")
        if measured is None:
            _front_panel(fig.subplots(), front, current, pick)
        else:
            top, bottom = fig.subplots(2, 1)
            _front_panel(top, front, current, pick)
            _measured_panel(bottom, measured)
        handles = [
            Line2D([], [], color=FRONT_COLOR, marker="o", markersize=4, label="simulator's front"),
            Line2D([], [], color=CURRENT_COLOR, marker="X", markersize=8, linestyle="",
                   label="current settings"),
            Line2D([], [], color=WINNER_COLOR, marker="*", markersize=11, linestyle="",
                   label="simulator's pick / best trial"),
        ]  # fmt: skip
        if measured is not None:
            handles += [
                Line2D([], [], color=MEASURED_COLOR, marker="o", markersize=5, linestyle="",
                       label="measured trial"),
                Line2D([], [], color=FLAGGED_COLOR, marker="x", linestyle="", label="replay off"),
            ]  # fmt: skip
        legend_below(fig, handles)
        fig.suptitle("Dead tuples against the work vacuum does", fontsize=11, fontweight="bold")
    return fig


def _front_panel(
    ax: Axes,
    front: Sequence[tuple[float, float]],
    current: tuple[float, float] | None,
    pick: tuple[float, float] | None,
) -> None:
    points = sorted(front)
    if points:
        ax.plot([x for x, _ in points], [y for _, y in points], color=FRONT_COLOR, marker="o",
                markersize=4, linewidth=1.0, zorder=2)  # fmt: skip
    if current is not None:
        ax.plot(*current, color=CURRENT_COLOR, marker="X", markersize=9, linestyle="", zorder=3)
    if pick is not None:
        ax.plot(*pick, color=WINNER_COLOR, marker="*", markersize=13, linestyle="", zorder=4)
    if not points and current is None and pick is None:
        no_data(ax, "no simulator stage recorded")
    ax.set_title("predicted by the simulator", fontsize=9, loc="left")
    ax.set_xlabel("worker seconds (predicted)")
    ax.set_ylabel("dead-tuple peak (predicted)")
    ax.yaxis.set_major_formatter(EngFormatter(sep=""))


def _measured_panel(ax: Axes, measured: Sequence[Measured]) -> None:
    for m in measured:
        style = {"current": (CURRENT_COLOR, "X", 9), "best": (WINNER_COLOR, "*", 13)}
        plain = (FLAGGED_COLOR, "x", 7) if m.flagged else (MEASURED_COLOR, "o", 5)
        color, marker, size = style.get(m.role or "", plain)
        ax.plot([m.latency], [m.dead], color=color, marker=marker, markersize=size,
                linestyle="", zorder=3)  # fmt: skip
        ax.annotate(str(m.number), (m.latency, m.dead), textcoords="offset points",
                    xytext=(4, 4), fontsize=7)  # fmt: skip
    if not measured:
        no_data(ax, "no trial measured both")
    ax.set_title("measured, one point per trial (its number beside it)", fontsize=9, loc="left")
    ax.set_xlabel("p99 latency (ms, mean of the measurements)")
    ax.set_ylabel("dead-tuple peak (mean)")
    ax.yaxis.set_major_formatter(EngFormatter(sep=""))


def importance(shares: Sequence[tuple[str, float]]) -> Figure:
    """Each setting's share of the objective's variance, largest on top; each bar's setting
    written above it (long names kept whole, whatever the page's width)."""
    height = max(BAR_FIGSIZE[1] * 0.6, 1.2 + 0.45 * len(shares))
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH, height), layout="constrained")
        ax = fig.subplots()
        rows = list(range(len(shares)))
        ax.barh(rows, [100 * s for _, s in shares], height=0.45, color=FRONT_COLOR)
        for row, (key, share) in zip(rows, shares, strict=True):
            ax.text(0.3, row - 0.27, key, ha="left", va="bottom", fontsize=8, parse_math=False)
            ax.text(100 * share + 0.8, row, f"{100 * share:.0f} %", ha="left", va="center",
                    fontsize=8)  # fmt: skip
        ax.set_yticks([])
        ax.set_ylim(len(shares) - 0.5, -0.9)
        ax.set_xlabel("share of the objective's variance among the measured trials (%)")
        ax.set_xlim(0, 100)
        fig.suptitle("Which settings mattered", fontsize=11, fontweight="bold")
    return fig


def against(
    title: str, unit: str, current: Samples, best: Samples, best_label: str, warmup: float | None
) -> Figure:
    """One per-second series of the current settings' first measurement against the best
    trial's."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=WIDE_FIGSIZE, layout="constrained")
        ax = fig.subplots()
        handles: list[Line2D | Patch] = []
        if warmup:
            hatch: dict[str, Any] = {"facecolor": "none", "edgecolor": WARMUP_COLOR,
                                     "hatch": "///"}  # fmt: skip
            ax.axvspan(0.0, warmup, **hatch, linewidth=0.0, zorder=0)
            handles.append(Patch(**hatch, label="warm-up"))
        for samples, label, color in ((current, "current settings", CURRENT_COLOR),
                                      (best, best_label, WINNER_COLOR)):  # fmt: skip
            if samples:
                t, v = arrays(samples)
                ax.plot(t, v, color=color, linewidth=1.1)
                handles.append(Line2D([], [], color=color, label=label))
        if not current and not best:
            no_data(ax, "no per-second samples recorded")
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel("seconds since the trial's load started")
        ax.set_ylabel(unit)
        ax.yaxis.set_major_formatter(EngFormatter(sep=""))
        legend_below(fig, handles)
        fig.suptitle(title, fontsize=11, fontweight="bold", parse_math=False)
    return fig
