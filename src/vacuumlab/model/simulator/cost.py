"""The cost of one vacuum in the simulation: its unthrottled seconds and the cost units that
throttling turns into sleep, and whether it advances relfrozenxid."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

from vacuumlab.model import charges
from vacuumlab.model.cost import PAGE_S as PAGE_S
from vacuumlab.model.cost import WORK_FIXED_S
from vacuumlab.model.pages import SKIP_PAGES_THRESHOLD, pages_read, spread_of

if TYPE_CHECKING:
    from vacuumlab.model.simulator.relation import _Rel

#: Unthrottled work, as the advisor takes it: model/cost.py (work_seconds()).
FIXED_S: Final = WORK_FIXED_S
#: checkpoint_timeout's default. Vacuum pays vacuum_cost_page_dirty only for a buffer that was
#: clean (MarkBufferDirty() in bufmgr.c charges it when BM_DIRTY was not set): a page the
#: workload changed is still dirty unless a checkpoint wrote it since, which for a change t
#: seconds old happens with a chance of about t / CHECKPOINT_S.
CHECKPOINT_S: Final = 300.0
_CLEAN_AFTER_S: Final = 2.0 * CHECKPOINT_S  # changes spread over this long: all found clean


def skips_unfrozen(r: _Rel) -> bool:
    """Whether a normal vacuum starting now is expected to skip an all-visible page that is
    not all-frozen, which keeps relfrozenxid where it was (vacrel->skippedallvis).

    The pages still all-visible are those it left so, thinned by the changes since, taken as
    spread at random (as in :func:`_vacuum_cost`); of those, the all-frozen ones likewise. With
    a share p of pages all-visible, runs of SKIP_PAGES_THRESHOLD or more start at the first
    page with chance p^L and after each page that is not all-visible with chance (1 − p)·p^L;
    a run holds an unfrozen page unless its first L pages are all frozen, (f / p)^L. It is
    taken to skip one when at least half a run is expected. PostgreSQL 18's eager scanning
    of some all-visible pages is left out: it can only make advancing more likely."""
    pages = r.pages()
    eligible = pages - 1.0  # the last page is always read
    if eligible < SKIP_PAGES_THRESHOLD:
        return False
    thinning = math.exp(-r.changes / pages)
    p = min(r.visible * thinning / pages, 1.0)
    if p <= 0.0:
        return False
    f = min(r.frozen * thinning / pages, p)
    runs = p**SKIP_PAGES_THRESHOLD * (1.0 + (eligible - SKIP_PAGES_THRESHOLD) * (1.0 - p))
    return runs * (1.0 - (f / p) ** SKIP_PAGES_THRESHOLD) >= 0.5


def clean_share(age_s: float) -> float:
    """The share of the pages a vacuum dirties that were clean when it reached them, for
    changes spread evenly over the last ``age_s`` seconds."""
    return min(max(age_s, 0.0) / _CLEAN_AFTER_S, 1.0)


def _vacuum_cost(r: _Rel, at: float, *, aggressive: bool) -> tuple[float, float]:
    """The unthrottled seconds and the cost of one vacuum starting at ``at``.

    Heap pages: an aggressive vacuum reads them all; a normal one skips runs of at least 32
    all-visible pages (heap_vac_scan_next_block() in vacuumlazy.c). Those it left all-visible
    lose the bit as rows on them are updated or deleted, and the pages read follow from the
    changes since (before the window too) and where they sit: model.pages.pages_read(),
    the advisor's model, which costs them too (charges.heap_cost()): only changed pages are
    dirtied, the ``clean`` share paying for it (see CHECKPOINT_S): the changes it finds go
    back to its last vacuum's end, or,
    before the first, as long as the dead tuples took to accrue at their rate. Indexes: unless
    fewer than 2 % of the pages hold dead tuples (the bypass, 14+) every index page is read
    once and those holding dead entries dirtied; then the heap pages that held dead tuples are
    visited a second time to free their dead items (lazy_vacuum_heap_rel()), already dirty by
    then."""
    if r.last_end is not None:
        age = at - r.last_end
    elif r.dead_per_second > 0:
        age = r.dead / r.dead_per_second
    else:
        age = math.inf
    clean = (0.0 if age < 0.0 else age) / _CLEAN_AFTER_S  # clean_share(), written out
    if clean > 1.0:
        clean = 1.0
    pages, then, now = r.base_pages, r.reltuples_then, r.reltuples  # _Rel.pages(), written out
    if then > 0 and now != then and now > 0:
        pages = pages * now / then
        if pages < 1.0:
            pages = 1.0
    if aggressive:
        heap = pages
    else:
        touched, inserted = r.changes, r.inserted
        heap = pages_read(
            pages,
            counted=r.counted,
            skippable=r.visible,
            touched=touched,
            inserted=inserted,
            tuples_per_page=r.per_page,
            spread=spread_of(touched, inserted),
        )
    cost = charges.heap_cost(
        heap,
        pages,
        touched=max(r.changes, r.dead),
        inserted=r.inserted,
        tuples_per_page=r.per_page,
        page_hit=r.page_hit,
        page_miss=r.page_hit,
        page_dirty=r.page_dirty,
        clean=clean,
    )
    index_read = 0.0
    dead = r.dead
    if r.indexed and dead >= 0.02 * pages:
        index_read = r.index_pages
        dirtied = index_read * (1.0 - math.exp(-dead / index_read))
        cost += (
            index_read * r.page_hit
            + charges.clean_after(clean, dead, dirtied) * dirtied * r.page_dirty
        )
        second = pages * (1.0 - math.exp(-dead / pages))
        cost += second * r.page_hit
        index_read += second
    work = charges.heap_work(
        heap,
        pages,
        touched=max(r.changes, r.dead),
        inserted=r.inserted,
        tuples_per_page=r.per_page,
        clean=clean,
        index=index_read,
    )
    return work, cost
