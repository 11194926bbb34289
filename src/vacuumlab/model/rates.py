"""Rates between two snapshots, and when a relation next passes a threshold at those rates.

Dead tuples per second come from ``n_dead_tup``: its growth when nothing overwrote it in
between, else its count since the vacuum in between ended (the non-HOT share of it) or, when
more, the non-HOT updates and deletes over the interval (whose old versions stay counted when
pruned). ``n_tup_upd + n_tup_del`` would overstate them: page pruning removes HOT versions
between vacuums and lowers ``n_dead_tup`` (pgstat_update_heap_dead_tuples() in
pgstat_relation.c). Inserts per second come from ``n_tup_ins``; live tuples per second from
``n_live_tup``, or from inserts less deletes across an overwrite.

On a table whose updates are HOT, ``n_dead_tup`` is no measure of a rate after a vacuum: every
update adds one, and on-access pruning (heap_page_prune_opt(), once a page's free space falls
below its fillfactor's) takes it back, so within seconds of the vacuum it stands at the versions
not yet pruned, about one a page, and stays there. The scheduling study's HOT-only tables held
130 to 180 on 156 pages while 170 rows a second were updated.

A VACUUM and an ANALYZE both overwrite ``n_live_tup`` and ``n_dead_tup`` (pgstat_report_vacuum()
and pgstat_report_analyze() in pgstat_relation.c): the vacuum with what it left, about nothing;
the ANALYZE with its sample's estimate of every dead tuple in the table. Autoanalyze fires at a
scale factor of 0.1, autovacuum at 0.2: the ANALYZE is the more frequent of the two. Across
either, the growth of ``n_dead_tup`` says nothing of the rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from vacuumlab.model.thresholds import Thresholds
from vacuumlab.records.snapshot import Relation

#: Below this many seconds since a vacuum ended, an ``n_dead_tup`` of 0 says little about the
#: rate: backends flush their counts at most once a second (PGSTAT_MIN_INTERVAL in pgstat.c),
#: so a count a second old may still read 0. A count above 0 is used as it is.
SHORT_SINCE_S = 5.0


@dataclass(frozen=True, slots=True)
class Rates:
    """Per second over the interval between the two snapshots; None when not reported."""

    dead_per_second: float | None
    inserts_per_second: float | None
    dead_source: str | None
    live_per_second: float | None = None


def between(before: Relation, after: Relation, seconds: float, taken_at: datetime) -> Rates | None:
    """The rates of one relation from its two snapshots ``seconds`` apart; ``taken_at`` is
    when the later one was taken."""
    if seconds <= 0:
        return None
    if still(before, after):
        return _STILL  # what the general case gives a relation nothing touched: most of them
    dead = _dead_rate(before, after, seconds, taken_at)
    inserts = _delta(before.n_tup_ins, after.n_tup_ins)
    live = _live_growth(before, after)
    return Rates(
        dead_per_second=dead[0] if dead else None,
        inserts_per_second=None if inserts is None else inserts / seconds,
        dead_source=dead[1] if dead else None,
        live_per_second=None if live is None else live / seconds,
    )


def still(before: Relation, after: Relation) -> bool:
    """Whether nothing the rates read moved between the two: no dead tuple, insert or live
    tuple counted, no vacuum and no ANALYZE. :func:`between` then gives no growth of any."""
    return (
        after.n_dead_tup is not None
        and after.n_dead_tup == before.n_dead_tup
        and after.n_tup_ins is not None
        and after.n_tup_ins == before.n_tup_ins
        and after.n_live_tup == before.n_live_tup
        and _overwrites(after) == _overwrites(before)
    )


_STILL = Rates(
    dead_per_second=0.0, inserts_per_second=0.0, dead_source="n_dead_tup", live_per_second=0.0
)


def _dead_rate(
    before: Relation, after: Relation, seconds: float, taken_at: datetime
) -> tuple[float, str] | None:
    """Net growth of n_dead_tup over the interval; across a vacuum or an ANALYZE, the
    dead tuples counted since the vacuum ended (the share of them that the interval's updates
    and deletes were not HOT), or the non-HOT updates and deletes over the interval when more.
    Never n_tup_upd + n_tup_del: page pruning removes dead versions between vacuums and lowers
    n_dead_tup (pgstat_update_heap_dead_tuples()), so on HOT-heavy tables updates overstate
    the dead tuples a vacuum finds."""
    if before.n_dead_tup is None or after.n_dead_tup is None:
        return None
    if _overwrites(after) == _overwrites(before):
        return max(after.n_dead_tup - before.n_dead_tup, 0) / seconds, "n_dead_tup"
    left = _left_dead(before, after)
    if _vacuums(after) == _vacuums(before):
        # Only an ANALYZE in between: it set n_dead_tup to its estimate of all the dead tuples
        # in the table (pgstat_report_analyze()), which a sample of a large table, or the
        # changes made while it read (whose counts it overwrites), leave short or long. The
        # count since it ended starts from that estimate, not from 0: only the updates and
        # deletes are left to go by.
        if left is None:
            return None
        return left / seconds, _ACROSS_ANALYZE
    # A vacuum in between. An ANALYZE after it leaves n_dead_tup an estimate of the dead tuples
    # since the vacuum, so the count is still taken from the vacuum's end.
    ends = [t for t in (after.last_vacuum, after.last_autovacuum) if t is not None]
    since = (taken_at - max(ends)).total_seconds() if ends else seconds
    if since < SHORT_SINCE_S and after.n_dead_tup == 0 and left is not None:
        return left / seconds, "non-HOT updates and deletes (a vacuum ended just before)"
    since = min(max(since, 1.0), seconds)
    # The HOT versions in the count are those pruning has yet to take back: as many seconds
    # after the vacuum as a minute later, a level and not a rate. Over a few seconds since the
    # vacuum they read as one: a HOT-only table's 150 over 5 s, 30/s, where none accrue.
    share = _not_hot(before, after)
    counted = share * after.n_dead_tup / since
    # Both are lower bounds of how fast n_dead_tup grows between vacuums, the second over the
    # whole interval: the count since the vacuum ended covers only its last seconds, which a
    # lull in the load or the backends' flush lag (PGSTAT_MIN_INTERVAL) can leave short. The
    # scheduling study measured a table whose 272 non-HOT updates a second left 67/s in the
    # 7.6 s after a vacuum, and 284/s over the 40 s before the next one.
    if left is not None and left / seconds > counted:
        return left / seconds, "non-HOT updates and deletes over the interval (a vacuum in between)"
    if share < 1.0:
        return counted, "n_dead_tup since the vacuum in between, its non-HOT share"
    return counted, "n_dead_tup since the vacuum in between"


_ACROSS_ANALYZE = "non-HOT updates and deletes over the interval (an ANALYZE in between)"


def _not_hot(before: Relation, after: Relation) -> float:
    """The share of the interval's updates and deletes that were not HOT updates; 1 when
    unknown or when none were counted."""
    changes = [
        _delta(before.n_tup_upd, after.n_tup_upd),
        _delta(before.n_tup_hot_upd, after.n_tup_hot_upd),
        _delta(before.n_tup_del, after.n_tup_del),
    ]
    if any(c is None for c in changes):
        return 1.0
    updated, hot, deleted = (c or 0 for c in changes)
    total = updated + deleted
    return max(total - hot, 0) / total if total > 0 else 1.0


def _left_dead(before: Relation, after: Relation) -> int | None:
    """Dead tuples that updates and deletes left over the interval and that pruning cannot
    take back from ``n_dead_tup``: a non-HOT update's or a delete's old version becomes an
    LP_DEAD item when pruned, and heap_page_prune_and_freeze() subtracts only
    ``ndeleted - nnewlpdead`` (pgstat_update_heap_dead_tuples()). HOT updates are left out:
    pruning removes those outright."""
    changes = [
        _delta(before.n_tup_upd, after.n_tup_upd),
        _delta(before.n_tup_hot_upd, after.n_tup_hot_upd),
        _delta(before.n_tup_del, after.n_tup_del),
    ]
    if any(c is None for c in changes):
        return None
    updated, hot, deleted = (c or 0 for c in changes)
    return max(updated - hot, 0) + deleted


def _live_growth(before: Relation, after: Relation) -> int | None:
    """Growth of n_live_tup over the interval; across a vacuum or an ANALYZE, which set it to
    their own count (pgstat_report_vacuum(), pgstat_report_analyze()), the inserts less the
    deletes, as a committed transaction adds them to it (AtEOXact_PgStat_Relations())."""
    if _overwrites(after) == _overwrites(before):
        return _change(before.n_live_tup, after.n_live_tup)
    inserted = _delta(before.n_tup_ins, after.n_tup_ins)
    deleted = _delta(before.n_tup_del, after.n_tup_del)
    return None if inserted is None or deleted is None else inserted - deleted


def _vacuums(rel: Relation) -> int:
    return (rel.vacuum_count or 0) + (rel.autovacuum_count or 0)


def _overwrites(rel: Relation) -> tuple[int, int]:
    """Vacuums and ANALYZEs so far: each overwrites n_live_tup and n_dead_tup."""
    return _vacuums(rel), (rel.analyze_count or 0) + (rel.autoanalyze_count or 0)


def _change(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else after - before


def _delta(before: int | None, after: int | None) -> int | None:
    """Growth of a cumulative counter; None when unknown or reset in between."""
    if before is None or after is None or after < before:
        return None
    return after - before


def to_vacuum(t: Thresholds, rates: Rates | None) -> tuple[float | None, str | None]:
    """Seconds until autovacuum should take the relation (0 once due), and what triggers it;
    the launcher adds up to one naptime."""
    if t.in_recovery:
        return None, "a standby"
    if t.forced is not None:
        return 0.0, "forced for wraparound"
    if not t.effective.enabled:
        return None, "autovacuum is off"
    if t.needs_vacuum:
        return 0.0, "past its threshold"
    if rates is None:
        return None, None
    candidates = []
    if rates.dead_per_second:
        candidates.append((max(t.vacuum - t.dead, 0) / rates.dead_per_second, "dead tuples"))
    if t.insert is not None and rates.inserts_per_second:
        candidates.append((max(t.insert - t.inserted, 0) / rates.inserts_per_second, "inserts"))
    if not candidates:
        return None, None
    seconds, trigger = min(candidates)
    return seconds, trigger


def dead_at_vacuum(
    t: Thresholds, rates: Rates | None, to_vacuum: float | None, trigger: str | None
) -> float:
    """Dead tuples when the vacuum starts: the threshold, or what accrues until the inserts
    trigger it."""
    if trigger == "inserts" and rates is not None and to_vacuum is not None:
        return t.dead + (rates.dead_per_second or 0) * to_vacuum
    if trigger in ("past its threshold", "forced for wraparound"):
        return float(t.dead)
    return max(t.vacuum, float(t.dead))
