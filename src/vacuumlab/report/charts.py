"""What every report's charts share: the style, colours and sizes, the helpers that draw
error bars, published figures and legends, and the SVG and PNG output.

No pyplot: every figure is a `matplotlib.figure.Figure` of its own, so there is no global
figure registry to leak into and nothing to close, and the functions are safe in any
process (no display, no interactive backend). `svg_markup` and `save_png` turn a figure into
the two outputs the report needs; both are deterministic for the same figure.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.typing import RcKeyType

#: (t, value) samples, t in seconds; a None value is a gap.
Samples = Sequence[tuple[float, float | None]]

#: Fixed hash salt and no date: the same data gives byte-identical SVG.
_SVG_RC: dict[RcKeyType, Any] = {"svg.hashsalt": "vacuumlab", "svg.fonttype": "path"}
STYLE: dict[RcKeyType, Any] = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.spines.top": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
}

#: The published figures, wherever a chart shows them.
POST_COLOR = "#9467bd"

#: Every report's figure sizes, in inches: one width, so the pages line up.
WIDTH = 10.0
STEP_FIGSIZE = (WIDTH, 5.6)
COMPARISON_FIGSIZE = (WIDTH, 6.4)
FIGSIZE = (WIDTH, 5.2)
WIDE_FIGSIZE = (WIDTH, 4.6)
BAR_FIGSIZE = (WIDTH, 4.8)
PANELS_HEIGHT = 4.2
PNG_DPI = 110


def arrays(samples: Samples) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Times and values; a None value becomes NaN, which matplotlib draws as a gap."""
    t = np.fromiter((s[0] for s in samples), dtype=np.float64, count=len(samples))
    v = np.fromiter(
        (math.nan if s[1] is None else s[1] for s in samples), dtype=np.float64, count=len(samples)
    )
    return t, v


def no_data(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#666666")


def legend_below(fig: Figure, handles: Sequence[Any], most: int | None = None) -> None:
    """The legend in one row below the panels (at most `most` to a row): above them, it would
    collide with the title."""
    if handles:
        ncols = len(handles) if most is None else min(len(handles), most)
        fig.legend(handles=handles, loc="outside lower center", ncols=ncols, frameon=False)


def with_ci(
    ax: Axes,
    xs: Sequence[float],
    values: Sequence[float | None],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    *,
    color: str,
    label: str,
) -> bool:
    """Markers joined by a thin line, with asymmetric error bars where a CI is known."""
    x: list[float] = []
    y: list[float] = []
    below: list[float] = []
    above: list[float] = []
    for xi, v, low, high in zip(xs, values, lows, highs, strict=True):
        if v is None:
            continue
        x.append(xi)
        y.append(v)
        below.append(max(v - low, 0.0) if low is not None else 0.0)
        above.append(max(high - v, 0.0) if high is not None else 0.0)
    if not x:
        return False
    if not any(below) and not any(above):
        ax.plot(x, y, color=color, marker="o", markersize=4, linewidth=1.0, label=label)
        return True
    ax.errorbar(
        x,
        y,
        yerr=[below, above],
        color=color,
        marker="o",
        markersize=4,
        linewidth=1.0,
        capsize=3,
        label=label,
    )
    return True


def published_axis(
    ax: Axes, values: Mapping[int, float], steps: Sequence[int], unit: str
) -> Axes | None:
    """The post's figures on a right axis of their own: only their direction is comparable."""
    shown = [(s, values[s]) for s in steps if s in values]
    if not shown:
        return None
    right = ax.twinx()
    right.grid(False)
    right.spines["top"].set_visible(False)
    right.plot(
        [s for s, _ in shown],
        [v for _, v in shown],
        color=POST_COLOR,
        marker="s",
        markersize=4,
        markerfacecolor="white",
        linestyle="--",
        linewidth=0.9,
    )
    right.set_ylabel(f"post ({unit})", color=POST_COLOR)
    right.tick_params(axis="y", colors=POST_COLOR)
    return right


def published_handle(label: str) -> Line2D:
    """The legend entry of the published figures that `published_axis` draws."""
    return Line2D(
        [], [], color=POST_COLOR, marker="s", markerfacecolor="white", linestyle="--",
        markersize=4, label=label,
    )  # fmt: skip


_COMMENT = re.compile(r"<!--.*?-->\n?", re.DOTALL)
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(href="#|url\(#)([^")]+)')


def svg_markup(fig: Figure, prefix: str) -> str:
    """The figure as an `<svg>` element to inline in HTML: no XML prolog, DOCTYPE or comments
    (matplotlib echoes every text in one), no date, a fixed hash salt, and every id (and
    reference to it) prefixed so that several charts can share one document without clashing
    ids. The root gets `id=prefix` and is labelled by the element `prefix-caption`."""
    buf = io.StringIO()
    with mpl.rc_context(_SVG_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = _COMMENT.sub("", text[text.index("<svg") :])
    text = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', text)
    text = _REF.sub(lambda m: f"{m.group(1)}{prefix}-{m.group(2)}", text)
    root = f'<svg id="{prefix}" role="img" aria-labelledby="{prefix}-caption" '
    return text.replace("<svg ", root, 1)


def save_png(fig: Figure, path: Path) -> None:
    """Write the figure as a PNG, without a date or version in its metadata."""
    fig.savefig(path, format="png", dpi=PNG_DPI, metadata={"Software": None})
