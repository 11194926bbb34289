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
from typing import Final, NamedTuple

from vacuumlab.model import forcing
from vacuumlab.model.pages import (
    PageChanges,
    page_changes,
    pages_read,
    pages_read_later,
    spread_of,
)
from vacuumlab.records.snapshot import PagesScanned, Relation

BYPASS_THRESHOLD_PAGES: Final = 0.02
#: 18's eager scan (heap_vacuum_eager_scan_setup() in vacuumlazy.c): only relations of at
#: least two regions of EAGER_SCAN_REGION_SIZE pages, and it stops after freezing
#: MAX_EAGER_FREEZE_SUCCESS_RATE of the all-visible pages that are not all-frozen.
EAGER_SCAN_MIN_PAGES: Final = 2 * 4096
MAX_EAGER_FREEZE_SUCCESS_RATE: Final = 0.2
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
            read = pages_read_later(scanned.pages, read, later, per_page, spread)
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
