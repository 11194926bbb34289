"""Cost-based vacuum delay: what a vacuum's buffer traffic costs and how long it sleeps for it.

PostgreSQL charges every buffer access of a vacuum to a running balance
(src/backend/storage/buffer/bufmgr.c): ``vacuum_cost_page_hit`` for a page found in shared
buffers, ``vacuum_cost_page_miss`` for one read in, ``vacuum_cost_page_dirty`` for one it dirties.
Once the balance reaches the cost limit, ``vacuum_delay_point()`` (src/backend/commands/vacuum.c)
sleeps ``delay * balance / limit`` ms (at most 4 × delay) and resets the balance. Summed over a
run the sleeps come to ``cost / limit * delay``, which is what this module predicts.

The defaults changed over time (page miss 10 before PostgreSQL 14, 2 since; autovacuum delay
20 ms before 12, 2 ms since), so nothing here has defaults: the caller passes the server's own
values, normally read from ``pg_settings``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from vacuumlab.errors import VacuumlabError

_PAGE_COSTS: Final = ("vacuum_cost_page_hit", "vacuum_cost_page_miss", "vacuum_cost_page_dirty")
_MANUAL: Final = (*_PAGE_COSTS, "vacuum_cost_limit", "vacuum_cost_delay")
# The autovacuum values fall back to the manual ones, so both pairs are required up front: one
# error can then name everything that is missing.
_AUTOVACUUM: Final = (*_MANUAL, "autovacuum_vacuum_cost_limit", "autovacuum_vacuum_cost_delay")
_MS_PER_S: Final = 1000.0


@dataclass(frozen=True, slots=True)
class CostSettings:
    """The cost parameters one vacuum runs with: page costs, limit, delay in milliseconds."""

    page_hit: float
    page_miss: float
    page_dirty: float
    limit: int
    delay_ms: float

    def __post_init__(self) -> None:
        if min(self.page_hit, self.page_miss, self.page_dirty) < 0:
            raise VacuumlabError("vacuum page costs cannot be negative")
        if self.limit < 1:
            raise VacuumlabError(f"the vacuum cost limit must be at least 1, not {self.limit}")
        if self.delay_ms < 0:
            raise VacuumlabError(f"the vacuum cost delay cannot be negative ({self.delay_ms} ms)")

    @classmethod
    def for_autovacuum(cls, settings: Mapping[str, str]) -> CostSettings:
        """Settings of an autovacuum worker, from ``pg_settings`` name -> ``setting`` (base
        units: the delays in ms).

        Resolved as autovac_balance_cost() in src/backend/postmaster/autovacuum.c does: a limit
        of -1 (or 0) means vacuum_cost_limit, a delay below 0 means vacuum_cost_delay. Tables
        with their own autovacuum cost storage parameters are not covered.
        """
        values = _numbers(settings, _AUTOVACUUM)
        limit = values["autovacuum_vacuum_cost_limit"]
        delay = values["autovacuum_vacuum_cost_delay"]
        return cls._from(
            values,
            limit=limit if limit > 0 else values["vacuum_cost_limit"],
            delay_ms=delay if delay >= 0 else values["vacuum_cost_delay"],
        )

    @classmethod
    def for_manual(cls, settings: Mapping[str, str]) -> CostSettings:
        """Settings of a manual VACUUM: vacuum_cost_limit and vacuum_cost_delay (0 by default,
        which switches throttling off)."""
        values = _numbers(settings, _MANUAL)
        return cls._from(
            values, limit=values["vacuum_cost_limit"], delay_ms=values["vacuum_cost_delay"]
        )

    @classmethod
    def _from(cls, values: Mapping[str, float], *, limit: float, delay_ms: float) -> CostSettings:
        if not limit.is_integer():
            raise VacuumlabError(f"the vacuum cost limit must be a whole number, not {limit}")
        return cls(
            page_hit=values["vacuum_cost_page_hit"],
            page_miss=values["vacuum_cost_page_miss"],
            page_dirty=values["vacuum_cost_page_dirty"],
            limit=int(limit),
            delay_ms=delay_ms,
        )


def _numbers(settings: Mapping[str, str], names: tuple[str, ...]) -> dict[str, float]:
    missing = [name for name in names if name not in settings]
    if missing:
        raise VacuumlabError(f"server settings missing for the cost model: {', '.join(missing)}")
    values: dict[str, float] = {}
    for name in names:
        try:
            values[name] = float(settings[name])
        except ValueError:
            raise VacuumlabError(f"setting {name} is not a number: {settings[name]!r}") from None
        if not math.isfinite(values[name]):
            raise VacuumlabError(f"setting {name} is not a finite number: {settings[name]!r}")
    return values


def vacuum_cost(hits: int, misses: int, dirtied: int, settings: CostSettings) -> float:
    """The cost a vacuum accrues for its buffer usage: the log's "buffer usage: N hits, M reads
    (misses up to 17), K dirtied" counts the accesses bufmgr.c charges for."""
    if min(hits, misses, dirtied) < 0:
        raise ValueError("buffer counts cannot be negative")
    return hits * settings.page_hit + misses * settings.page_miss + dirtied * settings.page_dirty


#: Besides the heap page, vacuum records every page's free space (RecordPageWithFreeSpace() in
#: freespace.c, called from lazy_scan_heap(), or from lazy_vacuum_heap_rel() for a page whose
#: dead items wait for the indexes): one access to the free space map's leaf page, which covers
#: about 4,000 heap pages and so stays in shared buffers, a hit.
FSM_HITS_PER_PAGE: Final = 1.0
#: checkpoint_timeout's default, when the snapshot lacks the setting.
CHECKPOINT_S: Final = 300.0

#: A vacuum's unthrottled work, between its sleeps, measured on the embedded server
#: (bench/vacuum_work_time.py: PostgreSQL 18, fsync off, VACUUM at cost_delay 0, tables of
#: 1,000 to 12,000 pages; two runs on a loaded 2-core machine, figures rounded):
#: a fixed part per vacuum (catalog lookups, the free space map's upper levels, the
#: truncation check, statistics): the fits put it between 0 and 5 ms.
WORK_FIXED_S: Final = 0.002
#: A heap page read and inspected but left as it is (an all-frozen page: 2.5 to 2.9 µs).
READ_PAGE_S: Final = 3e-6
#: More for a page read in rather than found in shared buffers, from the kernel's page cache
#: (evicted tables: 3.6 to 5.2 µs a page in all).
MISSED_PAGE_S: Final = 2e-6
#: More for a page the vacuum changes, pruned or set all-visible, still dirty from the
#: workload (one row updated on every page: 5.3 to 9.5 µs a page in all).
DIRTY_PAGE_S: Final = 4e-6
#: More again when a checkpoint wrote the page since its change: the vacuum's WAL record then
#: carries a full-page image (XLogRecordAssemble() in xloginsert.c; after a CHECKPOINT: 21
#: to 25 µs a page in all).
IMAGE_PAGE_S: Final = 1.5e-5
#: An index page, or a heap page visited again to free its dead items: not measured apart,
#: the simulator's earlier fit on small busy tables.
PAGE_S: Final = 2e-5


def work_seconds(
    read: float,
    changed: float,
    *,
    clean: float = 0.0,
    missed: float = 0.0,
    changed_missed: float = 0.0,
    index: float = 0.0,
) -> float:
    """A vacuum's unthrottled work: ``read`` heap pages, ``changed`` of them dirtied (``clean``
    of those clean, ``changed_missed`` read in), ``missed`` of the others read in, and
    ``index`` index pages and heap pages visited again (the constants above)."""
    dirtied = changed if changed < read else read
    unchanged = read - dirtied
    fresh = dirtied * (clean + changed_missed * (1.0 - clean))
    return (
        WORK_FIXED_S
        + read * READ_PAGE_S
        + (unchanged * missed + dirtied * changed_missed) * MISSED_PAGE_S
        + dirtied * DIRTY_PAGE_S
        + fresh * IMAGE_PAGE_S
        + index * PAGE_S
    )


def heap_cost(
    read: float,
    changed: float,
    *,
    page_hit: float,
    page_miss: float,
    page_dirty: float,
    missed: float = 0.0,
    clean: float = 1.0,
    changed_missed: float = 0.0,
) -> float:
    """The cost of a vacuum's pass over ``read`` heap pages, ``changed`` of them holding the
    changes it cleans up (pruned, frozen or set all-visible: dirtied).

    - Each page read costs a hit if found in shared buffers, else a miss, charged instead of
      the hit when the read is issued (PinBufferForBlock() and AsyncReadBuffers() in
      bufmgr.c); the free space map adds a hit (FSM_HITS_PER_PAGE).
    - The changed pages are found in shared buffers: the workload has just read them. The
      others, all-visible pages read only because their run is short (SKIP_PAGES_THRESHOLD in
      vacuumlazy.c), are missed in the ``missed`` share (missed_share()).
    - A page costs vacuum_cost_page_dirty only when it was clean as vacuum dirtied it
      (MarkBufferDirty() in bufmgr.c charges it when BM_DIRTY was not set): a changed page is
      still dirty unless a checkpoint wrote it since, ``clean`` of them (clean_share()). The
      all-visible pages are left as they are.
    - Where shared buffers were read (pg_buffercache), a share ``changed_missed`` of the changed
      pages may have left them: each is a miss, and clean, as a dirty buffer is written before
      it is evicted (FlushBuffer() from GetVictimBuffer() in bufmgr.c).

    Held against PostgreSQL 18's log ("buffer usage: N hits, M reads, K dirtied") for a
    21,800-page table: 959 appended pages read, 1,954 hits, 0 reads, 0 dirtied; 8,325 pages
    read after updates on about 740, 14,460 hits, 2,226 reads, 82 dirtied."""
    dirtied = changed if changed < read else read
    unchanged = read - dirtied
    charged = clean + changed_missed * (1.0 - clean)
    return (
        unchanged * (page_hit + missed * (page_miss - page_hit))
        + dirtied * (page_hit + changed_missed * (page_miss - page_hit))
        + read * FSM_HITS_PER_PAGE * page_hit
        + dirtied * charged * page_dirty
    )


def clean_share(age_s: float, checkpoint_s: float = CHECKPOINT_S) -> float:
    """The share of the changed pages found in shared buffers that are clean when the vacuum
    reaches them, for changes spread evenly over the last ``age_s`` seconds: a change ``t``
    seconds old has been written by a checkpoint with a chance of about ``t / checkpoint_s``,
    so over the window the share is ``age_s / (2 × checkpoint_s)``, at most 1."""
    if checkpoint_s <= 0:
        return 1.0
    share = max(age_s, 0.0) / (2.0 * checkpoint_s)
    return share if share < 1.0 else 1.0


def clean_after(clean: float, changes: float, pages: float) -> float:
    """The share of ``pages`` holding ``changes`` that are clean, ``clean`` being the share
    for pages changed once: a page changed ``k`` times, evenly over the same window, is clean
    only if a checkpoint came after its last change, which is k + 1 times younger than the
    window on average, so 2 / (k + 1) of that share."""
    if pages <= 0.0 or changes <= pages:
        return clean
    return clean * 2.0 / (changes / pages + 1.0)


def missed_share(pages: float, shared_buffers_pages: float | None) -> float:
    """The share of a relation's pages a vacuum reads in rather than finds in shared buffers,
    of those the workload has not just touched: what does not fit, 1 − shared_buffers /
    pages, were the relation alone in them. A vacuum reads through a small ring of its own
    (GetAccessStrategy(BAS_VACUUM) in vacuum.c, 2 MB by default on 18), and so do sequential
    scans of a table larger than a quarter of shared_buffers (BAS_BULKREAD, initscan() in
    heapam.c): neither brings more of it in. None: shared_buffers unknown, taken as cached."""
    if shared_buffers_pages is None or pages <= shared_buffers_pages:
        return 0.0
    return 1.0 - shared_buffers_pages / pages


def throttle_seconds(cost: float, settings: CostSettings, *, workers: int = 1) -> float:
    """Seconds a vacuum of the given cost sleeps: ``cost / (limit / workers) * delay``.

    ``workers`` is the number of autovacuum workers sharing the limit. Simplified from
    autovac_balance_cost() (src/backend/postmaster/autovacuum.c): the limit is split evenly
    (16+ uses ``Max(limit / workers, 1)`` in integers; older versions weigh each worker's
    limit/delay ratio, which is the same split when all workers share the settings), and the
    worker count is taken as constant over the run. Pass 1 for manual VACUUM and for tables with
    their own cost storage parameters, which are not balanced.

    The 4 × delay cap on one sleep is ignored: it only binds when the cost accrued between two
    delay points (about one page) exceeds three times the per-worker limit, which takes a tiny
    limit or dozens of workers with the stock settings.
    """
    if cost < 0:
        raise ValueError("cost cannot be negative")
    if settings.delay_ms == 0:
        return 0.0
    return cost / worker_limit(settings, workers) * settings.delay_ms / _MS_PER_S


def predicted_duration(
    work_seconds: float, cost: float, settings: CostSettings, *, workers: int = 1
) -> float:
    """Predicted wall time of a vacuum: its unthrottled work plus the cost-based sleeps."""
    return work_seconds + throttle_seconds(cost, settings, workers=workers)


def pages_per_second(cost_per_page: float, settings: CostSettings, *, workers: int = 1) -> float:
    """The most pages per second throttling allows when each page costs ``cost_per_page``
    (e.g. miss + dirty for a page read and dirtied): one limit's worth per delay, with the
    time spent working counted as zero. Infinite when the delay is 0 or pages are free."""
    if cost_per_page < 0:
        raise ValueError("cost per page cannot be negative")
    share = worker_limit(settings, workers)
    if settings.delay_ms == 0 or cost_per_page == 0:
        return math.inf
    return share / cost_per_page / (settings.delay_ms / _MS_PER_S)


def worker_limit(settings: CostSettings, workers: int) -> float:
    """The cost limit each of ``workers`` balanced autovacuum workers gets: an even split
    (autovac_balance_cost() in autovacuum.c; see :func:`throttle_seconds`)."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    return settings.limit / workers
