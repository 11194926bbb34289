"""Running studies from the command line: where results go, and a live progress display."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from vacuumlab.pg.sandbox import default_home


def default_store() -> Path:
    """``$VACUUMLAB_HOME/results.sqlite``, or ``~/vacuumlab/results.sqlite``."""
    return default_home() / "results.sqlite"


class ProgressReporter:
    """A progress bar per step with live TPS (pgbench's own) and dead tuples (the sampler's)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[live]}"),
            console=console,
            transient=False,
        )
        self._task: TaskID | None = None

    def step_started(self, label: str, seconds: int) -> None:
        self._task = self.progress.add_task(label, total=seconds, live="")

    def tick(self, elapsed: float, tps: float | None, dead: int | None) -> None:
        if self._task is None:
            return
        live = f"tps {tps:,.0f}" if tps is not None else ""
        if dead is not None:
            live += f" · dead tuples {dead:,}"
        self.progress.update(self._task, completed=elapsed, live=live)

    def step_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        if self._task is not None:
            task = self.progress.tasks[-1]
            self.progress.update(self._task, completed=task.total, live=_brief(metrics))
        self._task = None

    def message(self, text: str) -> None:
        self.progress.console.print(f"· {text}", style="dim")

    @contextmanager
    def shown(self) -> Iterator[ProgressReporter]:
        with self.progress:
            yield self


def _brief(metrics: Mapping[str, Any]) -> str:
    tps, mean = metrics.get("tps"), metrics.get("latency_mean_ms")
    avs = metrics.get("autovacuum_count")
    if tps is None or mean is None:
        return "done"
    return f"tps {tps:,.0f} · latency {mean:.2f} ms · {avs} autovacuums"
