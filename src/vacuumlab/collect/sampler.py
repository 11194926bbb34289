"""A 1 Hz sampler of one table, in its own session, and what its samples say about autovacuum.

The sampler runs in a thread with a connection of its own (``application_name`` =
``vacuumlab-sampler``, every statement tagged), so its queries can be told apart from the
workload's in ``pg_stat_activity`` and ``pg_stat_statements``. A sample that fails (a lock
timeout while vacuum truncates the table, say) is skipped and counted, never fatal.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Self, TypeVar

import psycopg

from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.connect import Session, Timeouts, connect

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sample:
    """The table's state at one moment."""

    at: datetime
    n_dead_tup: int | None
    n_live_tup: int | None
    autovacuum_count: int | None
    last_autovacuum: datetime | None
    total_autovacuum_time_ms: float | None  # PostgreSQL 18+
    heap_bytes: int
    index_bytes: int
    toast_bytes: int
    vacuum_running: int
    autovacuum_read_bytes: int | None  # PostgreSQL 16+, cumulative over the server
    autovacuum_write_bytes: int | None


class Periodic(Generic[T]):
    """Runs a query every ``interval`` seconds in a thread with a session of its own, keeping
    its rows, until :meth:`stop`. A query that fails is skipped and counted in ``failed``."""

    def __init__(
        self,
        dsn: str,
        query: str,
        params: dict[str, object],
        row: type[T],
        *,
        interval: float = 1.0,
        application_name: str = "vacuumlab-sampler",
        timeouts: Timeouts | None = None,
        last_on_stop: bool = False,
    ) -> None:
        self._dsn, self._query, self._params, self._row = dsn, query, params, row
        self._interval, self._name, self._timeouts = interval, application_name, timeouts
        self._last_on_stop = last_on_stop
        self._samples: list[T] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=application_name, daemon=True)
        self._session: Session | None = None
        self.failed = 0

    def start(self) -> Self:
        # Connect here, not in the thread, so a bad DSN fails the caller at once.
        if self._timeouts is None:
            self._session = connect(self._dsn, application_name=self._name)
        else:
            self._session = connect(self._dsn, timeouts=self._timeouts, application_name=self._name)
        self._thread.start()
        return self

    def stop(self) -> list[T]:
        """Stop (after one last sample with ``last_on_stop``, so a window's end is measured)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._session is not None:
            if self._last_on_stop:
                self._take(self._session)
            self._session.close()
        return list(self._samples)

    @property
    def latest(self) -> T | None:
        return self._samples[-1] if self._samples else None

    def _loop(self) -> None:
        assert self._session is not None
        next_at = time.monotonic()
        while not self._stop.is_set():
            self._take(self._session)
            # A fixed schedule, so a slow sample does not shift every later one.
            next_at += self._interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _take(self, session: Session) -> None:
        try:
            rows = session.fetch(self._query, self._row, self._params)
        except (psycopg.Error, VacuumlabError):
            self.failed += 1
            return
        self._samples.extend(rows)


class Sampler(Periodic[Sample]):
    """Samples table ``relid`` every ``interval`` seconds until :meth:`stop`."""

    def __init__(self, dsn: str, relid: int, interval: float = 1.0) -> None:
        super().__init__(dsn, "sampler", {"relid": relid}, Sample, interval=interval)


@dataclass(frozen=True, slots=True)
class AutovacuumRun:
    """One autovacuum of the table: when it started and how long it took, in seconds
    relative to an origin."""

    start: float
    duration: float


def autovacuum_runs(samples: Sequence[Sample], origin: datetime) -> list[AutovacuumRun]:
    """The autovacuums the samples saw finish.

    A run shows as a rise of ``autovacuum_count``; it ended at ``last_autovacuum``. Its
    duration comes from ``total_autovacuum_time`` where the server has it (18+), otherwise
    from how many samples saw it running in ``pg_stat_progress_vacuum`` (1 s resolution).
    """
    runs = []
    for before, after in itertools.pairwise(samples):
        count = (after.autovacuum_count or 0) - (before.autovacuum_count or 0)
        if count <= 0 or after.last_autovacuum is None:
            continue
        end = (after.last_autovacuum - origin).total_seconds()
        duration = _duration(before, after, count) or _seen_running(samples, after)
        runs.append(AutovacuumRun(start=end - duration, duration=duration))
    return runs


def _duration(before: Sample, after: Sample, count: int) -> float | None:
    if before.total_autovacuum_time_ms is None or after.total_autovacuum_time_ms is None:
        return None
    return (after.total_autovacuum_time_ms - before.total_autovacuum_time_ms) / count / 1000


def _seen_running(samples: Sequence[Sample], end: Sample) -> float:
    """Seconds of consecutive samples, just before ``end``, that saw a vacuum running."""
    index = samples.index(end)
    seconds = 0.0
    for earlier, later in zip(samples[index - 1 :: -1], samples[index::-1], strict=False):
        if not earlier.vacuum_running:
            break
        seconds += (later.at - earlier.at).total_seconds()
    return seconds
