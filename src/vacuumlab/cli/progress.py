"""The run's progress on the terminal: the lab's progress protocol drawn with rich.

A study whose points run for a known time (churn's steps) gets a bar per point with live
values beside it; a matrix of points gets one bar over all of them, with each point's
duration printed as it finishes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as Bars

_DURATIONS = ("duration_stats_s", "duration_log_s", "duration_wall_s")


class RunDisplay:
    """Implements :class:`vacuumlab.studies.base.Progress` on a console."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bars: Bars | None = None
        self._total = 0
        self._points: TaskID | None = None
        self._step: TaskID | None = None

    def started(self, total: int) -> None:
        # The first word stands: a tune says its whole count, then hands an executor one
        # round of trials at a time, and each round says its own.
        if not self._total:
            self._total = total

    def point_started(self, label: str, seconds: int | None) -> None:
        if seconds is not None:
            self._step = self._shown(timed=True).add_task(label, total=seconds, live="")
            return
        bars = self._shown(timed=False)
        if self._points is None:
            self._points = bars.add_task("points", total=self._total)
        bars.update(self._points, description=label)

    def tick(self, elapsed: float, live: Mapping[str, float | None]) -> None:
        if self.bars is None or self._step is None:
            return
        text = " · ".join(
            f"{name} {value:,.0f}" for name, value in live.items() if value is not None
        )
        self.bars.update(self._step, completed=elapsed, live=text)

    def point_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        if self.bars is None:
            return
        if self._step is not None:
            total = self.bars.tasks[-1].total
            self.bars.update(self._step, completed=total, live=_brief(metrics))
            self._step = None
            return
        duration = next((metrics[k] for k in _DURATIONS if metrics.get(k) is not None), None)
        if duration is not None:
            self.console.print(f"· {label}: {duration:.2f} s", style="dim")
        if self._points is not None:
            self.bars.advance(self._points)

    def running(self, per_node: Mapping[str, int]) -> None:
        """Points side by side on a cluster: how many run on each node, in the bar's text."""
        bars = self._shown(timed=False)
        if self._points is None:
            self._points = bars.add_task("points", total=self._total)
        text = ", ".join(f"{n} on {node}" for node, n in sorted(per_node.items()))
        bars.update(self._points, description=f"running {text}" if text else "waiting")

    def message(self, text: str) -> None:
        # A matrix's per-point set-up steps would flood the screen; the bar says where we are.
        if self._points is None:
            self.console.print(f"· {text}", style="dim")

    def _shown(self, *, timed: bool) -> Bars:
        if self.bars is None:
            self.bars = Bars(*_columns(timed), console=self.console)
            self.bars.start()
        return self.bars

    @contextmanager
    def shown(self) -> Iterator[RunDisplay]:
        """The display, live while the run lasts."""
        try:
            yield self
        finally:
            if self.bars is not None:
                self.bars.stop()


def _columns(timed: bool) -> list[ProgressColumn]:
    count = [] if timed else [TextColumn("{task.completed}/{task.total}")]
    live = [TextColumn("{task.fields[live]}")] if timed else []
    return [
        TextColumn("{task.description}"),
        BarColumn(),
        *count,
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        *live,
    ]


def _brief(metrics: Mapping[str, Any]) -> str:
    tps, mean = metrics.get("tps"), metrics.get("latency_mean_ms")
    avs = metrics.get("autovacuum_count")
    if tps is None or mean is None:
        return "done"
    return f"tps {tps:,.0f} · latency {mean:.2f} ms · {avs} autovacuums"
