"""The scheduling study's arithmetic, pure: the workload's weights, the autovacuums the 1 Hz
samples saw, the launcher's phase, and predicted against measured per table.

Errors are relative, ``|predicted − measured| / max(measured, 1)``: a table measured with no
vacuum but predicted with two scores 2.0, not infinity. Each median is over the tables its
quantity says something about: counts over tables that either side vacuumed, peaks over tables
with dead tuples on either side, durations over tables both sides vacuumed.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from vacuumlab.model.simulator import Outcome
from vacuumlab.records.scheduling import TableSample

TABLE_PREFIX = "sched_"


#: The mixed workload's HOT-only tables keep this fillfactor: half of each page free, so an
#: update's new version always fits beside the old one, which on-access pruning frees.
HOT_FILLFACTOR = 50


@dataclass(frozen=True, slots=True)
class TableLoad:
    """One study table: the weight of its pgbench script (0: no script, a quiet table), its
    rows, and whether its updates are HOT (a column no index covers, on pages with room)."""

    name: str
    weight: int
    rows: int
    hot: bool = False

    @property
    def fillfactor(self) -> int:
        return HOT_FILLFACTOR if self.hot else 100


def workload(tables: int, quiet: int, spread: float, rows: int) -> list[TableLoad]:
    """The tables in creation (``pg_class``) order with their scripts' weights.

    Busy tables' weights fall geometrically from ``10 × spread`` to 10, so the busiest churns
    ``spread`` times faster than the slowest busy one. Ranks are scattered over the creation
    order (rank = 13·i mod n, a permutation when n is not a multiple of 13), so a worker's
    list, which follows ``pg_class`` order, mixes hot and slow tables as real schemas do."""
    busy = tables - quiet
    step = 13 if tables % 13 else 7
    loads = []
    for i in range(tables):
        rank = (step * i) % tables
        weight = 0
        if rank < busy:
            share = (busy - 1 - rank) / (busy - 1) if busy > 1 else 1.0
            weight = round(10 * spread**share)
        loads.append(TableLoad(f"{TABLE_PREFIX}{i:02d}", weight, rows))
    return loads


#: The mixed workload, in creation (``pg_class``) order: (role, weight). The busy table takes
#: 100 of every 160 transactions on twenty times the rows, so its vacuums take most of the
#: workers' time; the churners' non-HOT updates (30 of 160) spread 8 to 1; the HOT tables'
#: updates (30 of 160) leave no dead tuple that pruning does not take back.
MIXED: tuple[tuple[str, int], ...] = (
    ("hot", 6), ("churn", 16), ("hot", 6), ("busy", 100), ("hot", 6),
    ("churn", 8), ("hot", 6), ("churn", 4), ("hot", 6), ("churn", 2),
)  # fmt: skip


def mixed_workload(rows: int, busy_rows: int) -> list[TableLoad]:
    """Ten tables: five whose updates are all HOT, four churned by non-HOT updates at rates
    spread 8 to 1, and one busy table of ``busy_rows`` rows, the others having ``rows``."""
    loads = []
    counts: dict[str, int] = {}
    for role, weight in MIXED:
        n = counts[role] = counts.get(role, 0) + 1
        name = f"{TABLE_PREFIX}{role}" if role == "busy" else f"{TABLE_PREFIX}{role}_{n}"
        size = busy_rows if role == "busy" else rows
        loads.append(TableLoad(name, weight, size, hot=role == "hot"))
    return loads


# -- what the samples saw ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Vacuum:
    """One autovacuum of one table, in seconds since the arm's load started; a start equal
    to the end means its duration is unknown (before PostgreSQL 18)."""

    table: str
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


def vacuums_seen(samples: Iterable[TableSample], origin: datetime) -> list[Vacuum]:
    """Every autovacuum the samples saw finish, by start.

    A vacuum shows as a rise of ``autovacuum_count``; it ended at ``last_autovacuum``, which
    pgstat_report_vacuum() stamps as it adds the vacuum's elapsed time to
    ``total_autovacuum_time`` (18+): the start is the end less that time. A table vacuumed
    twice between two samples cannot happen here: a worker's list holds a table once, and the
    next worker comes a naptime (5 s or more) later."""
    by_table: dict[str, list[TableSample]] = {}
    for sample in samples:
        by_table.setdefault(sample.table_name, []).append(sample)
    found = []
    for table, rows in by_table.items():
        rows.sort(key=lambda s: s.at)
        for before, after in itertools.pairwise(rows):
            count = (after.autovacuum_count or 0) - (before.autovacuum_count or 0)
            if count <= 0 or after.last_autovacuum is None:
                continue
            end = (after.last_autovacuum - origin).total_seconds()
            took = 0.0
            if before.total_autovacuum_time_ms is not None and after.total_autovacuum_time_ms:
                took = (after.total_autovacuum_time_ms - before.total_autovacuum_time_ms) / count
            found.append(Vacuum(table, end - took / 1000.0, end))
    return sorted(found, key=lambda v: (v.start, v.table))


def dead_series(
    samples: Iterable[TableSample], origin: datetime
) -> dict[str, list[tuple[float, float | None]]]:
    """Per table, ``n_dead_tup`` against seconds since the arm's load started."""
    series: dict[str, list[tuple[float, float | None]]] = {}
    for s in samples:
        value = None if s.n_dead_tup is None else float(s.n_dead_tup)
        series.setdefault(s.table_name, []).append(((s.at - origin).total_seconds(), value))
    return series


def next_launch(launches: Sequence[float], window_start: float, naptime_s: float) -> float | None:
    """Seconds from ``window_start`` to the launcher's next visit, from the last worker seen
    starting before it (the launcher sends one to a database every naptime,
    launcher_determine_sleep()); None when none was seen."""
    earlier = [t for t in launches if t <= window_start]
    if not earlier or naptime_s <= 0:
        return None
    return (max(earlier) + naptime_s - window_start) % naptime_s


# -- predicted against measured ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a table's comparison: its vacuums in the window and its peak."""

    starts: list[float] = field(default_factory=list)  # seconds since the load started
    durations: list[float] = field(default_factory=list)
    peak_dead: float | None = None

    @property
    def vacuums(self) -> int:
        return len(self.starts)

    @property
    def first_start(self) -> float | None:
        return self.starts[0] if self.starts else None

    @property
    def mean_duration(self) -> float | None:
        return statistics.fmean(self.durations) if self.durations else None


def predicted_sides(outcome: Outcome, window_start: float) -> dict[str, Side]:
    """What the simulator predicted per table (by its label, ``schema.table``), moved from
    the window's clock onto the load's."""
    return {
        subject.label: Side(
            [window_start + s for s in tally.starts], list(tally.durations), tally.peak_dead
        )
        for subject, tally in zip(outcome.subjects, outcome.tallies, strict=True)
    }


def measured_sides(
    vacuums: Iterable[Vacuum],
    dead: Mapping[str, Sequence[tuple[float, float | None]]],
    window: tuple[float, float],
) -> dict[str, Side]:
    """What PostgreSQL did per table in the window: vacuums that started and ended in it
    (the simulation knows nothing of one already running when it starts) and the highest
    ``n_dead_tup`` sampled in it."""
    start, end = window
    inside = [v for v in vacuums if v.start >= start and v.end <= end]
    sides = {}
    for table in set(dead) | {v.table for v in inside}:
        mine = [v for v in inside if v.table == table]
        peaks = [v for t, v in dead.get(table, ()) if v is not None and start <= t <= end]
        sides[table] = Side(
            [v.start for v in mine],
            [v.duration for v in mine if v.duration > 0],
            max(peaks) if peaks else None,
        )
    return sides


def relative_error(predicted: float | None, measured: float | None) -> float | None:
    """``|predicted − measured| / max(measured, 1)``; None when either is unknown."""
    if predicted is None or measured is None:
        return None
    return abs(predicted - measured) / max(abs(measured), 1.0)


@dataclass(frozen=True, slots=True)
class TableResult:
    """One table, predicted against measured."""

    table: str
    dead_per_second: float
    measured: Side
    predicted: Side

    @property
    def count_error(self) -> float | None:
        if not (self.measured.vacuums or self.predicted.vacuums):
            return None
        return relative_error(self.predicted.vacuums, self.measured.vacuums)

    @property
    def peak_error(self) -> float | None:
        if not (self.measured.peak_dead or self.predicted.peak_dead):
            return None
        return relative_error(self.predicted.peak_dead, self.measured.peak_dead)

    @property
    def duration_error(self) -> float | None:
        measured = self.measured.mean_duration
        if measured is None or measured <= 0:
            return None
        predicted = self.predicted.mean_duration
        return None if predicted is None else abs(predicted - measured) / measured

    @property
    def first_start_error_s(self) -> float | None:
        m, p = self.measured.first_start, self.predicted.first_start
        return None if m is None or p is None else abs(p - m)


def compare(
    tables: Sequence[str],
    schema: str,
    measured: Mapping[str, Side],
    predicted: Mapping[str, Side],
    rates: Mapping[str, float],
) -> list[TableResult]:
    """Each study table, predicted (keyed ``schema.table``) against measured (by name)."""
    return [
        TableResult(
            table,
            rates.get(f"{schema}.{table}", 0.0),
            measured.get(table, Side()),
            predicted.get(f"{schema}.{table}", Side()),
        )
        for table in tables
    ]


def median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


@dataclass(frozen=True, slots=True)
class Summary:
    """The arm's medians over its tables."""

    counted: int  # tables with a count error
    count_error: float | None
    peak_error: float | None
    duration_error: float | None
    first_start_error_s: float | None
    vacuums_measured: int
    vacuums_predicted: int


def summarize(results: Sequence[TableResult]) -> Summary:
    counts = [r.count_error for r in results if r.count_error is not None]
    return Summary(
        counted=len(counts),
        count_error=median(counts),
        peak_error=median(r.peak_error for r in results),
        duration_error=median(r.duration_error for r in results),
        first_start_error_s=median(r.first_start_error_s for r in results),
        vacuums_measured=sum(r.measured.vacuums for r in results),
        vacuums_predicted=sum(r.predicted.vacuums for r in results),
    )


def busy_share(
    spans: Iterable[tuple[float, float]], window: tuple[float, float], workers: int
) -> float:
    """Worker-seconds spent vacuuming inside the window over those it offers."""
    start, end = window
    busy = sum(max(min(b, end) - max(a, start), 0.0) for a, b in spans)
    return busy / ((end - start) * max(workers, 1)) if end > start else 0.0
