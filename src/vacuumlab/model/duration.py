"""What one vacuum of a relation will do, from the relation's state before it: the heap pages it
scans, whether it is aggressive, the index passes, the index bypass and the failsafe.

- Aggressive (vacuum_get_cutoffs() in vacuum.c): ``age(relfrozenxid)`` past
  ``Min(freeze_table_age, 0.95 × autovacuum_freeze_max_age)``, or the multixact equivalent.
  An aggressive scan skips only all-frozen pages, a normal one every all-visible page
  (the visibility map; heap_vac_scan_next_block() in vacuumlazy.c).
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
from typing import Final

from vacuumlab.model import forcing
from vacuumlab.records.snapshot import Relation

BYPASS_THRESHOLD_PAGES: Final = 0.02
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


def heap_pages(rel: Relation, pages: int, *, is_aggressive: bool) -> int:
    """Heap pages scanned: all but the all-visible ones, or all but the all-frozen ones."""
    skipped = (rel.relallfrozen or 0) if is_aggressive else rel.relallvisible
    return max(pages - min(skipped, pages), 0)


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


def limits(server: Mapping[str, str], options: Mapping[str, str], version_num: int) -> Limits:
    xid, mxid = aggressive_ages(server, options)
    return Limits(
        aggressive_xid=xid,
        aggressive_mxid=mxid,
        failsafe_xid=forcing.failsafe_age(server, version_num=version_num),
        failsafe_mxid=forcing.failsafe_age(server, multixact=True, version_num=version_num),
        work_mem_bytes=_work_mem_bytes(server),
    )


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
) -> VacuumWork:
    """The next vacuum of ``rel``, expected to find ``dead`` dead tuples on ``pages`` pages.
    ``resolved`` is ``limits(server, options, version_num)`` when the caller keeps it."""
    lim = resolved or limits(server, options, version_num)
    xid_age, mxid_age = rel.frozenxid_age or 0, rel.minmxid_age or 0
    is_aggressive = xid_age >= lim.aggressive_xid or mxid_age >= lim.aggressive_mxid
    failsafe = xid_age > lim.failsafe_xid or mxid_age > lim.failsafe_mxid  # in_failsafe()
    skipped, reason = bypass(rel, dead, pages, version_num)
    if failsafe and not skipped:
        skipped, reason = True, "the failsafe skips index vacuuming"
    return VacuumWork(
        heap_pages=heap_pages(rel, pages, is_aggressive=is_aggressive),
        aggressive=is_aggressive,
        index_pages=index_pages,
        index_passes=0 if skipped else _passes(dead, pages, lim.work_mem_bytes, version_num),
        index_reason=reason,
        failsafe=failsafe,
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
