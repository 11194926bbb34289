"""How the toast report writes its numbers, and its table rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vacuumlab.report.common import DASH, Cell, format_seconds
from vacuumlab.stats.aggregate import Spread

MB = 2**20


@dataclass(frozen=True, slots=True)
class TableRow:
    """A row: its header cells, its measured cells and, where figures were published for it,
    the published cells."""

    head: tuple[str, ...]
    cells: tuple[Cell, ...]
    published: tuple[str, ...] = ()


def seconds(value: float | None) -> str:
    """Seconds as the cost-driver report writes them, with three significant digits below
    one second: a FREEZE of an all-frozen table takes a millisecond."""
    if value is None:
        return DASH
    return f"{value:.3g}" if abs(value) < 1 else format_seconds(value)


def size(value: float | None) -> str:
    """kB below 1 MB, MB with one decimal below 10 MB, whole MB above; MB are 2^20 bytes,
    as pg_size_pretty's are."""
    if value is None:
        return DASH
    if value < MB:
        return f"{value / 1024:,.0f} kB"
    return f"{value / MB:,.1f} MB" if value < 10 * MB else f"{value / MB:,.0f} MB"


def mb_text(value: float) -> str:
    return f"{value:,.0f} MB"


def cell(s: Spread | None, fmt: Callable[[float | None], str]) -> Cell:
    """A median and, over several repetitions, its interquartile range."""
    if s is None:
        return Cell(DASH)
    ci = f"[{fmt(s.q1)}, {fmt(s.q3)}]" if s.n > 1 else None
    return Cell(fmt(s.median), ci)
