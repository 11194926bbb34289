"""What a study run tells whoever watches it: one protocol for every study.

The command line draws progress bars from it (``cli/progress.py``); tests record it; a run
without a watcher gets :class:`Silent`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Progress(Protocol):
    def started(self, total: int) -> None:
        """The run is about to measure ``total`` points."""

    def point_started(self, label: str, seconds: int | None) -> None:
        """A point starts; ``seconds`` when its load runs for a known time."""

    def tick(self, elapsed: float, live: Mapping[str, float | None]) -> None:
        """Live values during a timed point (e.g. ``tps``, ``dead tuples``)."""

    def point_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        """A point is measured and stored."""

    def message(self, text: str) -> None:
        """A step of set-up worth saying (loading, restarting)."""


class Silent:
    """A watcher that says nothing."""

    def started(self, total: int) -> None:
        pass

    def point_started(self, label: str, seconds: int | None) -> None:
        pass

    def tick(self, elapsed: float, live: Mapping[str, float | None]) -> None:
        pass

    def point_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        pass

    def message(self, text: str) -> None:
        pass
