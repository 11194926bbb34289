"""What one vacuum of a relation will do, from the relation's state before it: the heap pages it
scans, whether it is aggressive, the index passes, the index bypass and the failsafe.

- Aggressive (vacuum_get_cutoffs() in vacuum.c): ``age(relfrozenxid)`` past
  ``Min(freeze_table_age, 0.95 × autovacuum_freeze_max_age)``, or the multixact equivalent.
- The heap pages read (heap_vac_scan_next_block(), find_next_unskippable_block() in
  vacuumlazy.c): a normal vacuum skips all-visible pages, an aggressive one all-frozen pages,
  but only in runs of at least ``SKIP_PAGES_THRESHOLD`` (32) pages, and never the last page.
  On 18 a normal vacuum also reads some all-visible pages that are not all-frozen (the eager
  scan). ``pg_class.relallvisible`` is as of the last vacuum or analyze: every update or
  delete since cleared the bits of its page (visibilitymap_clear() in heapam.c). Where
  ``pg_visibility_map()`` was read (collect/visibility.py) the pages are counted from it;
  otherwise they are estimated from the changes since and where they are taken to sit
  (``pages_read()``).
- Dead item identifiers are collected up to ``autovacuum_work_mem`` (-1: maintenance_work_mem);
  each time that fills, every index is scanned once. Before 17 they are 6-byte TIDs in one
  array capped at 1 GB (MaxAllocSize); from 17 a TidStore packs them per page, taken here as
  about 64 bytes per heap page with dead items (an approximation: the radix tree's real size
  depends on how the pages cluster).
- 14+ bypasses index vacuuming when fewer than 2 % of the pages hold dead items
  (BYPASS_THRESHOLD_PAGES in vacuumlazy.c) and vacuum_index_cleanup is auto.
- Past the failsafe age (model/forcing.py) vacuum stops throttling and skips index vacuuming
  (lazy_check_wraparound_failsafe()).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, NamedTuple

from vacuumlab.model import cost, forcing
from vacuumlab.model.cost import CostSettings
from vacuumlab.records.snapshot import PagesCached, PagesScanned, Relation

#: For the simulator, which reaches the cost model through this module.
clean_after = cost.clean_after

BYPASS_THRESHOLD_PAGES: Final = 0.02
#: Runs of skippable pages shorter than this are read anyway, for the kernel's readahead
#: (SKIP_PAGES_THRESHOLD in vacuumlazy.c).
SKIP_PAGES_THRESHOLD: Final = 32
#: 18's eager scan (heap_vacuum_eager_scan_setup() in vacuumlazy.c): only relations of at
#: least two regions of EAGER_SCAN_REGION_SIZE pages, and it stops after freezing
#: MAX_EAGER_FREEZE_SUCCESS_RATE of the all-visible pages that are not all-frozen.
EAGER_SCAN_MIN_PAGES: Final = 2 * 4096
MAX_EAGER_FREEZE_SUCCESS_RATE: Final = 0.2
#: Updates and deletes at most this share of the changes: an append-mostly table, whose
#: changes sit at its end.
APPEND_MOSTLY: Final = 0.1
_TID_BYTES: Final = 6
_TIDSTORE_BYTES_PER_PAGE: Final = 64
_MAX_ALLOC: Final = 1024**3 - 1
_KB: Final = 1024


@dataclass(frozen=True, slots=True)
class VacuumWork:
    """The work one vacuum does; ``index_pages`` is read once per index pass."""

    heap_pages: int
    aggressive: bool
    index_pages: int
    index_passes: int
    index_reason: str
    failsafe: bool
    heap: HeapScan | None = None  # how heap_pages was found

    @property
    def heap_exact(self) -> bool:
        """heap_pages was counted from pg_visibility_map(), not estimated."""
        return self.heap is not None and self.heap.exact

    @property
    def heap_how(self) -> str:
        return "" if self.heap is None else self.heap.how

    @property
    def pages_visited(self) -> int:
        return self.heap_pages + self.index_pages * self.index_passes


def aggressive(rel: Relation, server: Mapping[str, str], options: Mapping[str, str]) -> bool:
    """Whether the next vacuum must scan every page that is not all-frozen."""
    xid, mxid = aggressive_ages(server, options)
    return (rel.frozenxid_age or 0) >= xid or (rel.minmxid_age or 0) >= mxid


def aggressive_ages(
    server: Mapping[str, str],
    options: Mapping[str, str],
    *,
    multixacts: int | None = None,
    members: int | None = None,
) -> tuple[float, float]:
    """The xid and multixact ages from which a vacuum is aggressive:
    ``Min(freeze_table_age, 0.95 × autovacuum_freeze_max_age)``, and for multixacts 0.95 ×
    MultiXactMemberFreezeThreshold(), which falls below the setting under member-space
    pressure (vacuum_get_cutoffs() in vacuum.c). Member usage is not collected: without
    ``members`` that is the setting."""
    xid_cap = 0.95 * forcing.setting(server, "autovacuum_freeze_max_age")
    mxid_cap = 0.95 * forcing.member_freeze_threshold(
        forcing.setting(server, "autovacuum_multixact_freeze_max_age"), multixacts, members
    )
    return (
        min(_table_age(server, options, ""), xid_cap),
        min(_table_age(server, options, "multixact_"), mxid_cap),
    )


def in_failsafe(rel: Relation, server: Mapping[str, str], version_num: int) -> bool:
    """Whether the vacuum runs past vacuum_failsafe_age (or the multixact one) from its start:
    strictly past, as vacuum_xid_failsafe_check() (vacuum.c) asks TransactionIdPrecedes()."""
    xid_age = forcing.failsafe_age(server, version_num=version_num)
    mxid_age = forcing.failsafe_age(server, multixact=True, version_num=version_num)
    return (rel.frozenxid_age or 0) > xid_age or (rel.minmxid_age or 0) > mxid_age


Spread = Literal["random", "at the end"]


class PageChanges(NamedTuple):
    """Rows changed since ``pg_class.relallvisible`` was counted, as the statistics tell (a
    named tuple: built for every relation of every advice, where a frozen dataclass costs
    several times more)."""

    touched: float  # updated or deleted: each cleared the visibility-map bits of its page
    inserted: float
    since: str  # "the last vacuum" or "the last analyze"

    @property
    def spread(self) -> Spread:
        return spread_of(self.touched, self.inserted)

    def phrase(self) -> str:
        where = "at the end" if self.spread == "at the end" else "spread at random"
        return (
            f"{self.touched:,.0f} rows updated or deleted and {self.inserted:,.0f} inserted "
            f"since {self.since}, taken as {where}"
        )


def spread_of(touched: float, inserted: float) -> Spread:
    """Where changes sit. Inserts fill new pages at the end; a table whose updates and
    deletes are at most APPEND_MOSTLY of its changes is append-mostly, its few updates taken
    to reach recent rows, at the end too. Otherwise the changes are taken as spread at random
    over the pages: for the skip rule, the costlier case."""
    return "at the end" if touched <= APPEND_MOSTLY * (touched + inserted) else "random"


def page_changes(rel: Relation) -> PageChanges:
    """The changes since relallvisible was counted, by whichever of the last vacuum and the
    last analyze came later: both count it (vac_update_relstats(), from heap_vacuum_rel()
    and do_analyze_rel()).

    Since a vacuum: ``n_ins_since_vacuum`` inserts and ``n_dead_tup`` rows updated or deleted
    (a floor: pruning removed some since). Since an analyze, which also overwrote
    ``n_dead_tup``: ``n_mod_since_analyze`` split by the table's lifetime share of inserts,
    the inserts no more than ``n_ins_since_vacuum``."""
    analyzed, auto = rel.last_analyze, rel.last_autoanalyze
    if auto is not None and (analyzed is None or auto > analyzed):
        analyzed = auto
    if analyzed is not None:
        vacuumed, auto = rel.last_vacuum, rel.last_autovacuum
        if auto is not None and (vacuumed is None or auto > vacuumed):
            vacuumed = auto
        if vacuumed is None or analyzed > vacuumed:
            return _since_analyze(rel)
    dead, inserted = rel.n_dead_tup or 0, rel.n_ins_since_vacuum or 0
    return PageChanges(
        float(dead) if dead > 0 else 0.0,
        float(inserted) if inserted > 0 else 0.0,
        "the last vacuum",
    )


def _since_analyze(rel: Relation) -> PageChanges:
    modified = float(max(rel.n_mod_since_analyze or 0, 0))
    ins, upd, dele = rel.n_tup_ins or 0, rel.n_tup_upd or 0, rel.n_tup_del or 0
    share = ins / (ins + upd + dele) if ins + upd + dele > 0 else 0.0
    inserted = min(modified * share, float(max(rel.n_ins_since_vacuum or 0, 0)))
    return PageChanges(modified - inserted, inserted, "the last analyze")


def pages_read(
    pages: float,
    *,
    counted: float,
    skippable: float,
    touched: float,
    inserted: float,
    tuples_per_page: float,
    spread: Spread,
) -> float:
    """The heap pages a vacuum reads of ``pages``. When the visibility map was counted the
    table had ``counted`` pages, ``skippable`` of them all-visible (all-frozen, for an
    aggressive vacuum); since, ``touched`` rows on them were updated or deleted and
    ``inserted`` rows added. The pages added since are read; inserts they cannot hold went
    into free space on the older pages and clear bits there too.

    Spread at random, each older page stays skippable with the chance ``q`` = its share
    then × e^(−rows reaching them / counted), and the runs follow: see ``_read_among()``.
    At the end, the skippable pages form one run before the changed ones."""
    # Written with comparisons, not min() and max(): the simulator calls it once a vacuum.
    old = counted if counted < pages else pages
    if old < 1.0:
        return pages
    new = pages - old
    per_page = tuples_per_page if tuples_per_page > 1.0 else 1.0
    overflow = inserted - new * per_page  # inserts the new pages could not hold
    hits = touched + overflow if overflow > 0.0 else touched
    share = skippable / old if skippable > 0.0 else 0.0
    if share > 1.0:
        share = 1.0
    if spread == "at the end":
        run = share * old
        rest = old - hits / per_page
        if rest < run:
            run = rest
        if pages - 1.0 < run:
            run = pages - 1.0  # the last page is read
        return pages - run if run >= SKIP_PAGES_THRESHOLD else pages
    q = share * math.exp(-hits / old)
    if new >= 1.0:  # the new pages end the older ones' last run and hold the last page
        return new + _read_among(old, q)
    return 1.0 + _read_among(old - 1.0, q)


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


def _read_among(m: float, q: float) -> float:
    """Pages read among ``m`` pages, each skippable with the chance ``q`` independently, the
    pages around them not skippable: all but those in runs of SKIP_PAGES_THRESHOLD or more.

    Runs of exactly L skippable pages expected: q^m for the whole stretch (L = m); else
    q^L × (2(1 − q) + (m − L − 1)(1 − q)²), one at either edge and the rest inside. Pages in
    short runs are read: m(1 − q) + Σ_{L<32} L × runs(L); from 32 pages on, the sum is taken
    in closed form (Σ L q^L and Σ L² q^L up to K = 31), a seventh of the loop's time in the
    simulator, within 1e-6 of it down to one changed page in ten million."""
    if m < 1.0:
        return 0.0
    p = 1.0 - q
    if p >= 1.0:
        return m
    if p < 1e-9:
        return m * p
    if m >= SKIP_PAGES_THRESHOLD:
        k = SKIP_PAGES_THRESHOLD - 1
        qk = q**k
        s1 = 1.0 - (k + 1) * qk + k * qk * q  # Σ L q^L × p² / q
        s2 = 1.0 + q - (k + 1) ** 2 * qk + (2 * k * k + 2 * k - 1) * qk * q - k * k * qk * q * q
        return m * p + q * (2.0 * s1 / p + (m - 1.0) * s1 - s2 / p)  # s2: Σ L² q^L × p³ / q
    short = 0.0
    power = 1.0
    for length in range(1, int(m) + 1):
        power *= q
        whole = length >= m  # one run over the whole stretch
        short += length * (power if whole else power * (2.0 * p + (m - length - 1.0) * p * p))
    return m * p + short


def _later(pages: float, read: float, touched: float, per_page: float, spread: Spread) -> float:
    """The pages read of a map counted now, once ``touched`` more rows are updated or deleted:
    at the end, on pages of their own; at random, thinning the skippable pages as if the map's
    runs were spread at random too (``_share_skippable()``)."""
    if spread == "at the end":
        return min(read + touched / max(per_page, 1.0), pages)
    q = _share_skippable(pages, read)
    return 1.0 + _read_among(pages - 1.0, q * math.exp(-touched / pages))


def _share_skippable(pages: float, read: float) -> float:
    """The chance ``q`` with which ``_read_among()`` reads ``read`` of ``pages`` (the last
    page read besides): what the visibility map's runs amount to, so that later changes can
    thin them as the estimate does."""
    low, high = 0.0, 1.0
    for _ in range(40):
        mid = (low + high) / 2.0
        if 1.0 + _read_among(pages - 1.0, mid) > read:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


class HeapScan(NamedTuple):
    """The heap pages the next vacuum reads, and how they were found: counted from the
    visibility map (``exact``), or estimated from ``changes``; ``later`` rows updated or
    deleted before the vacuum comes, ``eager`` pages read by 18's eager scan."""

    pages: int
    exact: bool
    changes: PageChanges
    later: float = 0.0
    eager: int = 0

    @property
    def how(self) -> str:
        """Said with the advice (built only when asked: the status rows never are)."""
        if self.exact:
            how = "counted from the visibility map (pg_visibility_map)"
            if self.later > 0.0:
                how += f", and {self.later:,.0f} rows more updated or deleted by then"
        else:
            how = "estimated: " + self.changes.phrase()
        return how + (f"; {self.eager:,} read by the eager scan" if self.eager >= 1 else "")


def heap_scan(
    rel: Relation,
    pages: int,
    *,
    is_aggressive: bool,
    dead: float | None = None,
    scanned: PagesScanned | None = None,
    eager: bool = False,
) -> HeapScan:
    """The heap pages the next vacuum of ``rel`` reads, when it finds ``dead`` dead tuples
    (None: as many as now): from the visibility map where ``scanned`` holds it, else
    estimated (see page_changes() and pages_read()). ``eager``: 18's eager scan is on for
    it (Limits.eager())."""
    changes = page_changes(rel)
    later = (dead or 0.0) - (rel.n_dead_tup or 0)  # rows updated or deleted by then
    if later > 0.0:
        changes = PageChanges(changes.touched + later, changes.inserted, changes.since)
    else:
        later = 0.0
    touched, inserted = changes.touched, changes.inserted
    spread = spread_of(touched, inserted)
    relpages, reltuples = rel.relpages, rel.reltuples
    per_page = reltuples / relpages if relpages > 0 and reltuples > 0 else 1.0
    if scanned is not None and scanned.pages > 0:
        read = float(scanned.aggressive if is_aggressive else scanned.normal)
        if later > 0.0:
            read = _later(scanned.pages, read, later, per_page, spread)
        if pages > scanned.pages:
            read += pages - scanned.pages  # pages added since the map was read
        visible, frozen = scanned.all_visible, scanned.all_frozen
    else:
        visible, frozen = rel.relallvisible, rel.relallfrozen or 0
        read = pages_read(
            float(pages),
            counted=float(relpages),
            skippable=float(frozen if is_aggressive else visible),
            touched=touched,
            inserted=inserted,
            tuples_per_page=per_page,
            spread=spread,
        )
    if read > pages:
        read = float(pages)
    extra = 0.0
    if eager and not is_aggressive and visible > frozen:
        extra = _eager_pages(pages - read, visible, frozen)
        read += extra
    return HeapScan(round(read), scanned is not None, changes, later, round(extra))


def _eager_pages(skipped: float, visible: float, frozen: float) -> float:
    """All-visible pages that are not all-frozen which 18's eager scan reads: among those a
    normal vacuum would skip, up to the cap on its successes (taken as its reads: it is on
    only for a table whose oldest xid is past the freeze limit, where pages freeze)."""
    unfrozen = max(visible - frozen, 0.0)
    if unfrozen <= 0.0 or visible <= 0.0 or skipped <= 0.0:
        return 0.0
    return min(MAX_EAGER_FREEZE_SUCCESS_RATE * unfrozen, skipped * unfrozen / visible)


def heap_pages(rel: Relation, pages: int, *, is_aggressive: bool) -> int:
    """Heap pages the next vacuum reads, estimated (see heap_scan())."""
    return heap_scan(rel, pages, is_aggressive=is_aggressive).pages


def index_passes(dead: float, pages: int, server: Mapping[str, str], version_num: int) -> int:
    """How often every index is scanned: once per fill of the dead-items memory."""
    return _passes(dead, pages, _work_mem_bytes(server), version_num)


def _passes(dead: float, pages: int, memory: float, version_num: int) -> int:
    if version_num < 170000:
        capacity = min(memory, _MAX_ALLOC) / _TID_BYTES
        return max(1, math.ceil(dead / capacity))
    dead_pages = min(dead, float(pages))
    return max(1, math.ceil(dead_pages * _TIDSTORE_BYTES_PER_PAGE / memory))


def bypass(rel: Relation, dead: float, pages: int, version_num: int) -> tuple[bool, str]:
    """Whether index vacuuming is skipped (lazy_vacuum() in vacuumlazy.c), and why."""
    if rel.n_indexes == 0:
        return True, "no indexes"
    cleanup = rel.reloptions.get("vacuum_index_cleanup", "auto").lower()
    if cleanup in ("off", "false", "no", "0"):
        return True, "vacuum_index_cleanup is off"
    if version_num < 140000 or cleanup in ("on", "true", "yes", "1"):
        return False, "index vacuuming is never bypassed here"
    if dead < BYPASS_THRESHOLD_PAGES * pages:
        return True, (
            f"bypassed: {dead:,.0f} dead tuples can fill fewer than 2 % of {pages:,} pages"
        )
    return False, "dead tuples may sit on 2 % of the pages or more: no bypass assumed"


@dataclass(frozen=True, slots=True)
class Limits:
    """What ``work()`` reads from the server's settings and a relation's options, resolved
    once: the same for every relation with the same options (most have none)."""

    aggressive_xid: float
    aggressive_mxid: float
    failsafe_xid: float
    failsafe_mxid: float
    work_mem_bytes: float
    eager_age: float | None = None  # 18's eager scan past this xid age; None: never

    def eager(self, rel: Relation, pages: int) -> bool:
        """Whether a normal vacuum of ``rel`` scans eagerly (heap_vacuum_eager_scan_setup()):
        on 18, a relation of at least EAGER_SCAN_MIN_PAGES whose relfrozenxid is older than
        the freeze limit (the multixact cutoff, which also enables it, is left out)."""
        age = self.eager_age
        return age is not None and pages >= EAGER_SCAN_MIN_PAGES and (rel.frozenxid_age or 0) > age


def limits(server: Mapping[str, str], options: Mapping[str, str], version_num: int) -> Limits:
    xid, mxid = aggressive_ages(server, options)
    return Limits(
        aggressive_xid=xid,
        aggressive_mxid=mxid,
        failsafe_xid=forcing.failsafe_age(server, version_num=version_num),
        failsafe_mxid=forcing.failsafe_age(server, multixact=True, version_num=version_num),
        work_mem_bytes=_work_mem_bytes(server),
        eager_age=eager_age(server, options, version_num),
    )


def eager_age(
    server: Mapping[str, str], options: Mapping[str, str], version_num: int
) -> float | None:
    """The xid age past which 18's eager scan is on: the freeze limit's, ``Min(freeze_min_age,
    autovacuum_freeze_max_age / 2)`` (vacuum_get_cutoffs() in vacuum.c). None before 18 or
    with vacuum_max_eager_freeze_failure_rate 0, the table's or the server's."""
    if version_num < 180000:
        return None
    rate = _number(options.get("vacuum_max_eager_freeze_failure_rate"))
    if rate is None:
        rate = _number(server.get("vacuum_max_eager_freeze_failure_rate"))
    if rate is not None and rate <= 0:
        return None
    own = _number(options.get("autovacuum_freeze_min_age"))
    age = own if own is not None and own >= 0 else _number(server.get("vacuum_freeze_min_age"))
    cap = forcing.setting(server, "autovacuum_freeze_max_age") / 2
    return min(age if age is not None else 50_000_000.0, cap)


def _number(value: str | None) -> float | None:
    try:
        return None if value is None else float(value)
    except ValueError:
        return None


def work(
    rel: Relation,
    *,
    dead: float,
    pages: int,
    index_pages: int,
    server: Mapping[str, str],
    options: Mapping[str, str],
    version_num: int,
    resolved: Limits | None = None,
    scanned: PagesScanned | None = None,
) -> VacuumWork:
    """The next vacuum of ``rel``, expected to find ``dead`` dead tuples on ``pages`` pages.
    ``resolved`` is ``limits(server, options, version_num)`` when the caller keeps it;
    ``scanned``, the relation's visibility map where the snapshot read it."""
    lim = resolved or limits(server, options, version_num)
    xid_age, mxid_age = rel.frozenxid_age or 0, rel.minmxid_age or 0
    is_aggressive = xid_age >= lim.aggressive_xid or mxid_age >= lim.aggressive_mxid
    failsafe = xid_age > lim.failsafe_xid or mxid_age > lim.failsafe_mxid  # in_failsafe()
    skipped, reason = bypass(rel, dead, pages, version_num)
    if failsafe and not skipped:
        skipped, reason = True, "the failsafe skips index vacuuming"
    heap = heap_scan(
        rel,
        pages,
        is_aggressive=is_aggressive,
        dead=dead,
        scanned=scanned,
        eager=lim.eager(rel, pages),
    )
    return VacuumWork(
        heap_pages=heap.pages,
        aggressive=is_aggressive,
        index_pages=index_pages,
        index_passes=0 if skipped else _passes(dead, pages, lim.work_mem_bytes, version_num),
        index_reason=reason,
        failsafe=failsafe,
        heap=heap,
    )


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


def _table_age(server: Mapping[str, str], options: Mapping[str, str], kind: str) -> float:
    own = options.get(f"autovacuum_{kind}freeze_table_age")
    try:
        if own is not None and float(own) >= 0:
            return float(own)
    except ValueError:
        pass
    try:
        return float(server[f"vacuum_{kind}freeze_table_age"])
    except (KeyError, ValueError):
        return 150_000_000.0


def _work_mem_bytes(server: Mapping[str, str]) -> float:
    """autovacuum_work_mem, or maintenance_work_mem when it is -1 (kB in pg_settings)."""
    for name in ("autovacuum_work_mem", "maintenance_work_mem"):
        try:
            value = float(server[name])
        except (KeyError, ValueError):
            continue
        if value > 0:
            return value * _KB
    return 64.0 * _KB * _KB  # maintenance_work_mem's default, 64 MB
