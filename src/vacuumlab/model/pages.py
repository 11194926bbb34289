"""Which heap pages a vacuum reads, from the changes since the visibility map was counted.

A normal vacuum skips all-visible pages, but only in runs of at least
``SKIP_PAGES_THRESHOLD`` (32) pages, and never the last page (heap_vac_scan_next_block(),
find_next_unskippable_block() in vacuumlazy.c). ``pg_class.relallvisible`` is as of the last
vacuum or analyze: every update or delete since cleared the bits of its page
(visibilitymap_clear() in heapam.c). Where ``pg_visibility_map()`` was not read, the pages
read are estimated from the changes since and where they are taken to sit
(:func:`pages_read`); model.duration and the simulator both ask it.
"""

from __future__ import annotations

import math
from typing import Final, Literal, NamedTuple

from vacuumlab.records.snapshot import Relation

#: Runs of skippable pages shorter than this are read anyway, for the kernel's readahead
#: (SKIP_PAGES_THRESHOLD in vacuumlazy.c).
SKIP_PAGES_THRESHOLD: Final = 32
#: Updates and deletes at most this share of the changes: an append-mostly table, whose
#: changes sit at its end.
APPEND_MOSTLY: Final = 0.1


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


def pages_read_later(
    pages: float, read: float, touched: float, per_page: float, spread: Spread
) -> float:
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
