"""Figures of the TOAST report: pure functions from plain data to a matplotlib `Figure`.

They follow `vacuumlab.report.charts`: no pyplot, a figure of their own each, constrained
layout, its style; `charts.svg_markup` and `charts.save_png` make the report's deterministic
SVG and PNG. No string from the database reaches a chart: labels are the report's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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

from vacuumlab.records.toast_spec import PUBLICATION
from vacuumlab.report.charts import BAR_FIGSIZE, POST_COLOR, STYLE, legend_below, no_data

HEAP_COLOR = "#1f77b4"
TOAST_COLOR = "#ff7f0e"
_STORAGE_COLORS = {"extended": "#1f77b4", "main": "#d62728", "external": "#2ca02c"}
_STORAGE_COLORS["plain"] = "#9467bd"
#: Timeline categories, drawn in this order: (category, label, colour).
CATEGORIES = (
    ("working", "vacuuming", "#9ecae1"),
    ("truncating", "truncating (AccessExclusiveLock held)", "#3182bd"),
    ("truncate-wait", "retrying the truncation lock (VacuumTruncate)", "#fd8d3c"),
    ("lock", "waiting for a lock", "#d62728"),
)


def variant_color(storage: str, rank: int = 0) -> str:
    """The storage's colour; other toast_tuple_targets of it in lighter shades."""
    base = _STORAGE_COLORS.get(storage)
    if base is None:
        return to_hex(colormaps["tab10"](4 + sum(storage.encode()) % 6))
    if rank == 0:
        return base
    return to_hex(colormaps["Blues"](max(0.75 - 0.2 * rank, 0.3)))


# -- sizes ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SizeBar:
    """One table's heap and TOAST size (MB) after loading and after the UPDATE."""

    label: str
    heap_loaded: float | None
    toast_loaded: float | None
    heap_updated: float | None
    toast_updated: float | None


def sizes_chart(measured: Sequence[SizeBar], published: Sequence[SizeBar]) -> Figure:
    """Stacked heap + TOAST bars, loaded and after the UPDATE, for each table; the post's on
    a panel of its own (another row count: compare shapes, not heights)."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=BAR_FIGSIZE, layout="constrained")
        here, seed = fig.subplots(1, 2, width_ratios=[max(len(measured), 1), 2])
        _size_panel(here, measured, "measured here")
        _size_panel(seed, published, f"{PUBLICATION.short()}, 500,000 rows")
        here.set_ylabel("MB")
        legend_below(
            fig,
            [
                Patch(color=HEAP_COLOR, label="heap"),
                Patch(color=TOAST_COLOR, label="TOAST"),
                Patch(facecolor="white", edgecolor="#555555", hatch="///", label="after UPDATE"),
            ],
            5,
        )
    return fig


def _size_panel(ax: Axes, bars: Sequence[SizeBar], title: str) -> None:
    ax.set_title(title)
    if not bars:
        no_data(ax, "no table measured")
        return
    x = np.arange(len(bars), dtype=np.float64)
    for offset, heap, toast, hatch in (
        (-0.2, [b.heap_loaded for b in bars], [b.toast_loaded for b in bars], None),
        (0.2, [b.heap_updated for b in bars], [b.toast_updated for b in bars], "///"),
    ):
        low = np.array([v or 0.0 for v in heap])
        top = np.array([v or 0.0 for v in toast])
        ax.bar(x + offset, low, 0.38, color=HEAP_COLOR, hatch=hatch, edgecolor="white")
        ax.bar(x + offset, top, 0.38, bottom=low, color=TOAST_COLOR, hatch=hatch, edgecolor="white")
    ax.set_xticks(x, labels=[b.label for b in bars], rotation=20, ha="right")
    ax.set_ylim(bottom=0)


# -- timings -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimingBars:
    """One table's median seconds per step, in STEP order."""

    label: str
    storage: str
    rank: int
    seconds: tuple[float | None, ...]


STEPS = ("UPDATE", "VACUUM", "FREEZE (a)\nafter UPDATE", "FREEZE (b)\nafter VACUUM")
SEED_STEPS = ("UPDATE", "VACUUM", "VACUUM FREEZE")


def timings_chart(
    measured: Sequence[TimingBars], published: Mapping[str, tuple[float, float, float]]
) -> Figure:
    """Seconds per step and table on a log scale (they span three orders of magnitude); the
    post's extended and main figures on a panel of their own."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=BAR_FIGSIZE, layout="constrained")
        here, seed = fig.subplots(1, 2, width_ratios=[3, 2])
        _grouped(here, STEPS, measured)
        here.set_title("measured here")
        here.set_ylabel("seconds (log scale)")
        seed_bars = [
            TimingBars(label, label, 0, values) for label, values in sorted(published.items())
        ]
        _grouped(seed, SEED_STEPS, seed_bars)
        seed.set_title(f"{PUBLICATION.short()}, 500,000 rows")
        handles: list[Any] = [
            Patch(color=variant_color(b.storage, b.rank), label=b.label) for b in measured
        ]
        legend_below(fig, handles, 5)
    return fig


def _grouped(ax: Axes, steps: Sequence[str], bars: Sequence[TimingBars]) -> None:
    shown = [v for b in bars for v in b.seconds if v is not None and v > 0]
    if not shown:
        no_data(ax, "no timing recorded")
        return
    width = 0.8 / max(len(bars), 1)
    x = np.arange(len(steps), dtype=np.float64)
    for k, bar in enumerate(bars):
        values = [v if v is not None and v > 0 else np.nan for v in bar.seconds]
        ax.bar(
            x + (k - (len(bars) - 1) / 2) * width,
            values,
            width,
            color=variant_color(bar.storage, bar.rank),
        )
    ax.set_yscale("log")
    ax.set_ylim(min(shown) / 2, max(shown) * 2)
    ax.set_xticks(x, labels=list(steps))


# -- work ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkBars:
    """One table's UPDATE WAL (MB) and the pages its VACUUM scanned, heap and TOAST."""

    label: str
    update_wal_mb: float | None
    heap_pages: float | None
    toast_pages: float | None


def work_chart(bars: Sequence[WorkBars]) -> Figure:
    """Left: the WAL the UPDATE wrote. Right: pages the VACUUM scanned, heap and TOAST."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=BAR_FIGSIZE, layout="constrained")
        wal, pages = fig.subplots(1, 2)
        if not bars:
            no_data(wal, "no table measured")
            no_data(pages, "no table measured")
            return fig
        x = np.arange(len(bars), dtype=np.float64)
        labels = [b.label for b in bars]
        wal.bar(x, [b.update_wal_mb or 0.0 for b in bars], 0.6, color="#555555")
        wal.set_title("WAL written by the UPDATE")
        wal.set_ylabel("MB")
        heap = np.array([b.heap_pages or 0.0 for b in bars])
        pages.bar(x, heap, 0.6, color=HEAP_COLOR, label="heap")
        pages.bar(x, [b.toast_pages or 0.0 for b in bars], 0.6, bottom=heap, color=TOAST_COLOR)
        pages.set_title("pages the VACUUM scanned")
        pages.set_ylabel("8 kB pages")
        for ax in (wal, pages):
            ax.set_xticks(x, labels=labels, rotation=20, ha="right")
        legend_below(
            fig, [Patch(color=HEAP_COLOR, label="heap"), Patch(color=TOAST_COLOR, label="TOAST")], 5
        )
    return fig


# -- the lock timeline ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bar:
    """A span of one session in one category, in seconds since the arm started."""

    session: str
    start: float
    end: float
    category: str


@dataclass(frozen=True, slots=True)
class Mark:
    """A notice worth marking: a truncation, or a truncation given up or suspended."""

    session: str
    t: float
    kind: str  # truncated, suspended, skipped


@dataclass(frozen=True, slots=True)
class ArmTimeline:
    """One arm: its sessions (bottom to top), their whole statements, spans and marks."""

    title: str
    sessions: tuple[str, ...]
    extents: Mapping[str, tuple[float, float]]
    bars: tuple[Bar, ...]
    marks: tuple[Mark, ...]


_MARKS = {"truncated": ("v", "#08519c"), "suspended": ("x", "#fd8d3c"), "skipped": ("X", "#d62728")}


def timeline_chart(arms: Sequence[ArmTimeline]) -> Figure:
    """One panel per arm, sharing the time axis: each session a row, coloured by what it was
    doing when sampled; lock waits in red."""
    height = 1.4 + 1.25 * max(len(arms), 1)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(10.0, height), layout="constrained")
        axes = fig.subplots(max(len(arms), 1), 1, sharex=True, squeeze=False)[:, 0]
        for ax, arm in zip(axes, arms, strict=False):
            _arm_panel(ax, arm)
        if not arms:
            no_data(axes[0], "the parallel experiment was not run")
        axes[-1].set_xlabel("seconds since the first VACUUM started")
        axes[-1].set_xlim(left=0)
        handles: list[Any] = [Patch(color=c, label=label) for _, label, c in CATEGORIES]
        handles.append(
            Line2D(
                [], [], color=_MARKS["truncated"][1], marker="v", linestyle="", label="truncated"
            )
        )
        legend_below(fig, handles, 5)
    return fig


def _arm_panel(ax: Axes, arm: ArmTimeline) -> None:
    ax.grid(axis="y", visible=False)
    rows = {session: k for k, session in enumerate(arm.sessions)}
    for session, (start, end) in arm.extents.items():
        if session in rows:
            ax.broken_barh(
                [(start, max(end - start, 0.0))],
                (rows[session] - 0.3, 0.6),
                facecolors="none",
                edgecolors="#777777",
                linewidth=0.8,
            )
    for category, _, color in CATEGORIES:
        for bar in arm.bars:
            if bar.category == category and bar.session in rows:
                width = max(bar.end - bar.start, 0.0)
                ax.broken_barh(
                    [(bar.start, width)],
                    (rows[bar.session] - 0.3, 0.6),
                    facecolors=color,
                    linewidth=0,
                )
    for mark in arm.marks:
        if mark.session in rows:
            marker, color = _MARKS.get(mark.kind, ("o", POST_COLOR))
            ax.plot(
                [mark.t],
                [rows[mark.session] + 0.42],
                marker=marker,
                color=color,
                markersize=6,
                linestyle="",
            )
    ax.set_yticks(range(len(arm.sessions)), labels=list(arm.sessions))
    ax.set_ylim(-0.6, len(arm.sessions) - 0.4)
    ax.set_title(arm.title, loc="left")
