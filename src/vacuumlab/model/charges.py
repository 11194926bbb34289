"""What one vacuum is charged and how long its own work takes, from the pages it reads
(model/duration.py, model/pages.py) and bufmgr.c's charges (model/cost.py): the heap pages
read, of which those holding the changes since are dirtied, the index passes and the heap
pages visited again; a hit or a miss each, as much of the relation as shared buffers hold
(pg_buffercache where it was read)."""

from __future__ import annotations

import math

from vacuumlab.model import cost
from vacuumlab.model.cost import CostSettings
from vacuumlab.model.duration import VacuumWork
from vacuumlab.model.pages import Spread, page_changes, spread_of
from vacuumlab.records.snapshot import PagesCached, Relation

#: For the simulator, which reaches the cost model through this module.
clean_after = cost.clean_after


def pages_changed(
    pages: float, *, touched: float, inserted: float, tuples_per_page: float, spread: Spread
) -> float:
    """The pages holding the changes a vacuum cleans up, which it dirties (see _changed())."""
    new, old = _changed(pages, touched, inserted, tuples_per_page, spread)
    return new + old


def _changed(
    pages: float, touched: float, inserted: float, tuples_per_page: float, spread: Spread
) -> tuple[float, float]:
    """The pages the inserts filled, and those ``touched`` rows were updated or deleted on: at
    the end on pages of their own; at random each older page reached with the chance
    1 − e^(−touched / older pages). The other pages a vacuum reads are all-visible ones in
    short runs, which it leaves as they are."""
    per_page = tuples_per_page if tuples_per_page > 1.0 else 1.0
    new = inserted / per_page
    if new > pages:
        new = pages
    rest = pages - new
    if spread == "at the end":
        old = touched / per_page
    elif rest >= 1.0:
        old = rest * (1.0 - math.exp(-touched / rest))
    else:
        old = rest
    return new, old if old < rest else rest


def heap_cost(
    read: float,
    pages: float,
    *,
    touched: float,
    inserted: float,
    tuples_per_page: float,
    page_hit: float,
    page_miss: float,
    page_dirty: float,
    missed: float = 0.0,
    clean: float = 1.0,
    cached: float | None = None,
) -> float:
    """The cost of reading ``read`` of ``pages`` heap pages after ``touched`` rows were updated
    or deleted and ``inserted`` added (cost.heap_cost(), with the changed pages from
    _changed()). ``clean`` is the share of pages changed once that a checkpoint has written
    since (cost.clean_share()); a page updated several times is clean only if its last change
    is older than the last checkpoint (cost.clean_after()). ``cached``: the relation's pages
    in shared buffers where pg_buffercache counted them, in place of ``missed``
    (cached_shares())."""
    changed, clean, missed, changed_missed = _shares(
        pages, touched, inserted, tuples_per_page, clean, missed, cached
    )
    return cost.heap_cost(
        read,
        changed,
        page_hit=page_hit,
        page_miss=page_miss,
        page_dirty=page_dirty,
        missed=missed,
        clean=clean,
        changed_missed=changed_missed,
    )


def heap_work(
    read: float,
    pages: float,
    *,
    touched: float,
    inserted: float,
    tuples_per_page: float,
    missed: float = 0.0,
    clean: float = 1.0,
    cached: float | None = None,
    index: float = 0.0,
) -> float:
    """The unthrottled seconds of the pass heap_cost() prices, plus ``index`` index pages and
    heap pages visited again (cost.work_seconds())."""
    changed, clean, missed, changed_missed = _shares(
        pages, touched, inserted, tuples_per_page, clean, missed, cached
    )
    return cost.work_seconds(
        read, changed, clean=clean, missed=missed, changed_missed=changed_missed, index=index
    )


def _shares(
    pages: float,
    touched: float,
    inserted: float,
    tuples_per_page: float,
    clean: float,
    missed: float,
    cached: float | None,
) -> tuple[float, float, float, float]:
    """The changed pages, the share of them clean, the share of the others missed and the
    share of the changed ones missed: what heap_cost() and heap_work() share."""
    new, old = _changed(pages, touched, inserted, tuples_per_page, spread_of(touched, inserted))
    changed = new + old
    if changed > 0.0:
        clean = (new * clean + old * cost.clean_after(clean, touched, old)) / changed
    changed_missed = 0.0
    if cached is not None:
        missed, changed_missed = cached_shares(pages, changed, cached)
    return changed, clean, missed, changed_missed


def cached_shares(pages: float, changed: float, cached: float) -> tuple[float, float]:
    """The shares of a relation's unchanged and changed pages missing from shared buffers,
    ``cached`` of its ``pages`` being there: the changed pages first, as the workload touched
    them last; the rest spread evenly over the unchanged ones."""
    found = min(max(cached, 0.0), pages)
    hot = min(changed, found)
    changed_missed = 1.0 - hot / changed if changed > 0.0 else 0.0
    rest = pages - changed
    missed = 1.0 - (found - hot) / rest if rest > 0.0 else 0.0
    return missed, changed_missed


def vacuum_cost(
    w: VacuumWork,
    rel: Relation,
    *,
    pages: int,
    dead: float,
    settings: CostSettings,
    missed: float,
    clean: float,
    cached: PagesCached | None = None,
) -> float:
    """The cost the vacuum ``w`` of ``rel`` accrues (bufmgr.c's charges, see cost.heap_cost()):

    - the heap pages it reads, of which those holding the changes since (pages_changed())
      are dirtied;
    - unless index vacuuming is skipped, every index page once per pass (btbulkdelete() reads
      them all), those holding dead entries dirtied, and the heap pages holding dead items
      read again to free them (lazy_vacuum_heap_rel()), found in shared buffers and left
      dirty by the first pass: a hit each. Index pages are missed in the ``missed`` share
      too.

    ``cached``: the relation's and its indexes' pages in shared buffers, where pg_buffercache
    counted them: the pages missed follow from them instead of ``missed``."""
    relpages, reltuples = rel.relpages, rel.reltuples
    per_page = reltuples / relpages if relpages > 0 and reltuples > 0 else 1.0
    changes = w.heap.changes if w.heap is not None else page_changes(rel)
    touched = max(changes.touched, dead)
    hit, miss, dirty = settings.page_hit, settings.page_miss, settings.page_dirty
    total = heap_cost(
        float(w.heap_pages),
        float(pages),
        touched=touched,
        inserted=changes.inserted,
        tuples_per_page=per_page,
        page_hit=hit,
        page_miss=miss,
        page_dirty=dirty,
        missed=missed,
        clean=clean,
        cached=float(cached.heap) if cached is not None else None,
    )
    if w.index_passes > 0 and pages > 0:
        index = float(w.index_pages)
        if cached is not None:
            missed = 1.0 - min(cached.indexes / index, 1.0) if index > 0 else 0.0
        dirtied = index * (1.0 - math.exp(-dead / index)) if index > 0 else 0.0
        charged = cost.clean_after(clean, dead, dirtied)
        access = hit + missed * (miss - hit)
        total += w.index_passes * (index * access + dirtied * charged * dirty)
        total += pages * (1.0 - math.exp(-dead / pages)) * hit
    return total


def work_seconds(
    w: VacuumWork,
    rel: Relation,
    *,
    pages: int,
    dead: float,
    missed: float,
    clean: float,
    cached: PagesCached | None = None,
) -> float:
    """The unthrottled seconds of the vacuum ``w`` of ``rel``: the pages vacuum_cost() prices,
    each at its time (heap_work(), cost.work_seconds())."""
    relpages, reltuples = rel.relpages, rel.reltuples
    per_page = reltuples / relpages if relpages > 0 and reltuples > 0 else 1.0
    changes = w.heap.changes if w.heap is not None else page_changes(rel)
    index = 0.0
    if w.index_passes > 0 and pages > 0:
        index = w.index_passes * w.index_pages + pages * (1.0 - math.exp(-dead / pages))
    return heap_work(
        float(w.heap_pages),
        float(pages),
        touched=max(changes.touched, dead),
        inserted=changes.inserted,
        tuples_per_page=per_page,
        missed=missed,
        clean=clean,
        cached=float(cached.heap) if cached is not None else None,
        index=index,
    )
