"""A measuring window: several relations sampled at 1 Hz in a session of their own, summed up
as their peak of dead tuples, their growth and the autovacuums that ended in the window.

``n_dead_tup`` reaches shared statistics about once a second at most (pgstat_report_stat()
flushes no more often than PGSTAT_MIN_INTERVAL), so 1 Hz sees every step of it. A sample that
fails (a lock timeout while vacuum truncates a table, say) is skipped and counted.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg

from vacuumlab.collect.sampler import Periodic
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.connect import Session, Timeouts, connect
from vacuumlab.records.verification import WindowFigures

#: Read-only, and giving way at once to any lock: a skipped sample costs nothing.
TIMEOUTS = Timeouts(statement_ms=2000, lock_ms=100)


@dataclass(frozen=True, slots=True)
class RelationSample:
    """One relation at one moment."""

    relid: int
    at: datetime
    n_dead_tup: int | None
    autovacuum_count: int | None
    heap_bytes: int | None


class WindowSampler(Periodic[RelationSample]):
    """Samples ``relids`` every ``interval`` seconds in a thread, until :meth:`stop`, which
    takes one last sample so the window's end is measured too."""

    def __init__(self, dsn: str, relids: Iterable[int], interval: float = 1.0) -> None:
        super().__init__(
            dsn,
            "window_sample",
            {"relids": sorted(set(relids))},
            RelationSample,
            interval=interval,
            application_name="vacuumlab-verify-sampler",
            timeouts=TIMEOUTS,
            last_on_stop=True,
        )


def measure(
    dsn: str,
    relids: Iterable[int],
    seconds: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[int, WindowFigures]:
    """Sample ``relids`` for ``seconds``; each relation's figures over the window."""
    sampler = WindowSampler(dsn, relids).start()
    try:
        sleep(seconds)
    finally:
        samples = sampler.stop()
    by_relid: dict[int, list[RelationSample]] = {}
    for sample in samples:
        by_relid.setdefault(sample.relid, []).append(sample)
    return {relid: figures(rows) for relid, rows in by_relid.items()}


def figures(samples: Sequence[RelationSample]) -> WindowFigures:
    """One relation's samples, in time order, summed up."""
    dead = [s.n_dead_tup for s in samples if s.n_dead_tup is not None]
    sizes = [s.heap_bytes for s in samples if s.heap_bytes is not None]
    counts = [s.autovacuum_count for s in samples if s.autovacuum_count is not None]
    seconds = (samples[-1].at - samples[0].at).total_seconds() if samples else 0.0
    return WindowFigures(
        seconds=seconds,
        samples=len(samples),
        peak_dead=max(dead) if dead else None,
        mean_dead=statistics.fmean(dead) if dead else None,
        start_bytes=sizes[0] if sizes else None,
        end_bytes=sizes[-1] if sizes else None,
        vacuums=counts[-1] - counts[0] if counts else None,
    )


def until_vacuumed(
    dsn: str, relids: Iterable[int], timeout: float, *, interval: float = 1.0
) -> float:
    """Wait until every relation's ``autovacuum_count`` has risen (each has had an autovacuum
    since the call), or ``timeout`` seconds; returns the seconds waited."""
    wanted = sorted(set(relids))
    started = time.monotonic()
    with connect(dsn, timeouts=TIMEOUTS, application_name="vacuumlab-verify-sampler") as s:
        first: dict[int, int] | None = None
        while time.monotonic() - started < timeout:
            counts = _counts(s, wanted)
            if first is None:
                first = counts
            elif all(counts.get(r, 0) > first.get(r, 0) for r in wanted):
                break
            time.sleep(min(interval, max(0.0, timeout - (time.monotonic() - started))))
    return time.monotonic() - started


def _counts(session: Session, relids: list[int]) -> dict[int, int]:
    try:
        rows = session.fetch("window_sample", RelationSample, {"relids": relids})
    except (psycopg.Error, VacuumlabError):
        return {}
    return {r.relid: r.autovacuum_count or 0 for r in rows}
