"""A vacuum under way and the last one that ended: the work a running vacuum has left and the
time the cost model gives it; how long a relation's last vacuum took.

- ``pg_stat_progress_vacuum.heap_blks_scanned`` counts every heap block behind the scan,
  skipped all-visible ones included (the docs' "Progress Reporting"), so the share of the heap
  still ahead is ``1 − scanned / total`` of the pages the vacuum visits (model/duration.py).
- Each index pass reads every index once (lazy_vacuum_all_indexes() in vacuumlazy.c);
  ``index_vacuum_count`` counts the passes done and, from 17, ``indexes_processed`` the
  indexes of the pass under way.
- After each index pass vacuum visits the heap pages that hold dead items again to free them
  (lazy_vacuum_heap_rel()); ``heap_blks_vacuumed`` counts those.
- The time left is the cost model's: the pages left, each read and dirtied (the advisor's
  upper bound, advise/estimate.py), turned into sleep at the share of the cost limit the
  vacuum gets (model/cost.py), plus the simulator's unthrottled time per page. From 18,
  ``delay_time`` says how long the vacuum really slept for the pages behind it, and the sleep
  ahead is scaled by the same ratio. Past the failsafe age vacuum no longer sleeps
  (lazy_check_wraparound_failsafe()).
- A relation's last vacuum: from 18, ``total_(auto)vacuum_time`` grows by the time of each
  vacuum that ends; before, a vacuum seen running in an earlier snapshot that has ended by a
  later one lasted from its transaction's start to ``last_(auto)vacuum``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from vacuumlab.errors import VacuumlabError
from vacuumlab.model import balance, duration
from vacuumlab.model import cost as cm
from vacuumlab.model.simulator import PAGE_S
from vacuumlab.records.snapshot import Relation, VacuumProgress

#: Phases in which an index pass is under way or still to come (vacuumlazy.c's PROGRESS_*).
_BEFORE_LAST_PASS = frozenset({"initializing", "scanning heap", "vacuuming indexes"})


@dataclass(frozen=True, slots=True)
class Pages:
    """Pages of a vacuum: heap pages scanned, index pages read, heap pages visited again to
    free their dead items (lazy_vacuum_heap_rel())."""

    heap: float
    index: float
    second: float

    @property
    def total(self) -> float:
        return self.heap + self.index + self.second

    def dirtied_cost(self, settings: cm.CostSettings) -> float:
        """The first visits: each page read and dirtied (the advisor's upper bound)."""
        return (self.heap + self.index) * (settings.page_hit + settings.page_dirty)

    def hit_cost(self, settings: cm.CostSettings) -> float:
        """The second visits: the heap page, which the first pass dirtied, and its free space
        map page (RecordPageWithFreeSpace() in lazy_vacuum_heap_rel()), a hit each."""
        return self.second * 2 * settings.page_hit


def remaining(v: VacuumProgress, work: duration.VacuumWork, dead: float) -> Pages:
    """What is left of ``work`` (the model's view of the whole vacuum, which should find
    ``dead`` dead tuples) at progress ``v``."""
    scanned = _scanned(v)
    second = second_pass_pages(work, dead)
    return Pages(
        heap=work.heap_pages * (1.0 - scanned),
        index=work.index_pages * index_passes_left(v, work.index_passes),
        second=max(second - v.heap_blks_vacuumed, 0.0),
    )


def visited(v: VacuumProgress, work: duration.VacuumWork, dead: float) -> Pages:
    """What ``work`` has done so far at progress ``v``."""
    passes = max(work.index_passes - index_passes_left(v, work.index_passes), 0.0)
    return Pages(
        heap=work.heap_pages * _scanned(v),
        index=work.index_pages * passes,
        second=min(float(v.heap_blks_vacuumed), second_pass_pages(work, dead)),
    )


def second_pass_pages(work: duration.VacuumWork, dead: float) -> float:
    """Heap pages visited again after the index passes: at most one per dead item. With no
    index pass (none, bypassed or the failsafe) the first pass frees the items itself."""
    return min(max(dead, 0.0), float(work.heap_pages)) if work.index_passes > 0 else 0.0


def index_passes_left(v: VacuumProgress, expected: int) -> float:
    """Index passes still to run: the expected ones not done yet, less the share of the one
    under way; at least the last pass while the heap scan has not ended."""
    if expected <= 0:
        return 0.0
    current = 0.0
    if v.phase == "vacuuming indexes" and v.indexes_total:
        current = min((v.indexes_processed or 0) / v.indexes_total, 1.0)
    left = max(expected - v.index_vacuum_count - current, 0.0)
    if left == 0.0 and v.phase in _BEFORE_LAST_PASS:
        left = 1.0 - current
    return left


def _scanned(v: VacuumProgress) -> float:
    total = v.heap_blks_total
    return min(v.heap_blks_scanned / total, 1.0) if total > 0 else 1.0


def cost_settings(
    v: VacuumProgress, server: Mapping[str, str], options: Mapping[str, str]
) -> tuple[cm.CostSettings, bool] | None:
    """The cost settings a running vacuum works under and whether it shares the limit: a
    worker's (with its table's own settings) or a manual VACUUM's (never balanced)."""
    try:
        if not v.is_autovacuum:
            return cm.CostSettings.for_manual(server), False
        return balance.own_cost(cm.CostSettings.for_autovacuum(server), options)
    except VacuumlabError:
        return None  # the snapshot lacks the cost settings


def eta_seconds(
    v: VacuumProgress,
    rel: Relation,
    *,
    server: Mapping[str, str],
    options: Mapping[str, str],
    version_num: int,
    block_size: int,
    sharing: int,
) -> float | None:
    """Seconds the running vacuum ``v`` of ``rel`` has left, by the cost model; ``sharing``
    is the number of workers that split the cost limit. None without the cost settings."""
    found = cost_settings(v, server, options)
    if found is None:
        return None
    settings, balanced = found
    dead = float(max(rel.n_dead_tup or 0, v.dead_tuples or 0))
    work = duration.work(
        rel,
        dead=dead,
        pages=v.heap_blks_total,
        index_pages=(rel.index_bytes or 0) // block_size,
        server=server,
        options=options,
        version_num=version_num,
    )
    left = remaining(v, work, dead)
    if work.failsafe:
        return left.total * PAGE_S  # lazy_check_wraparound_failsafe(): no more sleeping
    workers = max(sharing, 1) if balanced else 1

    def sleep(cost: float) -> float:
        return cm.throttle_seconds(cost, settings, workers=workers)

    ratio = calibration(v, visited(v, work, dead), settings, sleep)
    ahead = sleep(left.dirtied_cost(settings)) * ratio + sleep(left.hit_cost(settings))
    return left.total * PAGE_S + ahead


def calibration(
    v: VacuumProgress,
    done: Pages,
    settings: cm.CostSettings,
    sleep: Callable[[float], float],
) -> float:
    """How much of the model's sleep for the pages it charges as dirtied the vacuum really
    slept (18's delay_time, less the second visits' share): a page the workload left dirty
    costs only a hit (MarkBufferDirty() in bufmgr.c charges clean buffers only). 1 where not
    measured (before 18, track_cost_delay_timing off, or nothing slept yet)."""
    predicted = sleep(done.dirtied_cost(settings))
    if not v.delay_time_ms or predicted <= 0:
        return 1.0
    slept = v.delay_time_ms / 1000.0 - sleep(done.hit_cost(settings))
    return max(slept, 0.0) / predicted


def last_duration(
    after: Relation,
    before: Relation | None = None,
    running: VacuumProgress | None = None,
) -> float | None:
    """Seconds the last vacuum of ``after`` took, when the snapshots tell: from the vacuum
    times of 18 (the mean of those that ended between ``before`` and ``after``), else from a
    vacuum seen ``running`` in the earlier snapshot that has ended since."""
    if running is None and before is not None and _vacuums(before) == _vacuums(after):
        return None  # none ended in between: most relations, at each refresh
    found = [_from_totals(after, before, manual) for manual in (False, True)]
    known = [pair for pair in found if pair is not None]
    if known:
        return max(known, key=lambda pair: pair[0])[1]
    return _from_progress(after, running) if running is not None else None


def _vacuums(rel: Relation) -> tuple[int | None, int | None]:
    return rel.vacuum_count, rel.autovacuum_count


def _from_totals(
    after: Relation, before: Relation | None, manual: bool
) -> tuple[datetime, float] | None:
    count, total, ended = (
        (after.vacuum_count, after.total_vacuum_time_ms, after.last_vacuum)
        if manual
        else (after.autovacuum_count, after.total_autovacuum_time_ms, after.last_autovacuum)
    )
    if count is None or total is None or ended is None:
        return None
    if before is None:
        return (ended, total / 1000.0) if count == 1 else None
    count_then = before.vacuum_count if manual else before.autovacuum_count
    total_then = before.total_vacuum_time_ms if manual else before.total_autovacuum_time_ms
    if count_then is None or total_then is None or count <= count_then or total < total_then:
        return None  # no vacuum ended in between, or the statistics were reset
    return ended, (total - total_then) / (count - count_then) / 1000.0


def _from_progress(after: Relation, running: VacuumProgress) -> float | None:
    ended = after.last_autovacuum if running.is_autovacuum else after.last_vacuum
    if running.started is None or ended is None or ended <= running.started:
        return None
    return (ended - running.started).total_seconds()
