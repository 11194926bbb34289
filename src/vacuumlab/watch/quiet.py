"""The relations the live view counts without ranking them: nothing moves them toward
autovacuum, so their place in the queue is the last and their row would say nothing.

At 100,000 tables most relations are a tenant's idle tables, and ranking each at every
refresh (its standing, the survey, a queue key) took a second of the refresh. A relation is
quiet when it has:

- no dead tuple, insert or change counted (n_dead_tup, n_ins_since_vacuum,
  n_mod_since_analyze all 0) and no options of its own or its table's: it is past no
  threshold and its share of each is 0;
- ages that stay under the server's freeze limits for the view's horizon (its xid age plus
  the transaction ids the horizon will consume): no forced vacuum, now or in the window;
- no vacuum on it now;
- with a previous snapshot, the same counts there (``model.rates.still()``): no rates, so the
  simulator has nothing to start for it.

A table is quiet when its heap and TOAST relation both are. The view counts them
(``LiveView.quiet``) and keeps the oldest of each age among them, for wraparound. Only in a
database of more than ``QUIET_FROM`` tables: below, every relation has its row, idle or not
(the terminal lists them all, the exporter up to its cap), and ranking them costs little.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from vacuumlab.model import rates
from vacuumlab.model import thresholds as th
from vacuumlab.model.forcing import FreezeLimits
from vacuumlab.records.snapshot import Relation, Snapshot, Table

#: Tables from which the quiet ones are counted, not ranked: at 10,000 tables a refresh took
#: 0.5 s, rows and all (docs/benchmarks.md).
QUIET_FROM = 10_000
#: Seconds added to the window in which a vacuum or analyze keeps a table in the server's
#: filter of the quiet ones (Source.quiet()): the two clocks' rounding, a statement's start.
WINDOW_MARGIN_S = 5.0
#: A relation and its table, with the age that made it the oldest.
Aged = tuple[int, Table, Relation]


@dataclass(slots=True)
class Quiet:
    """What the quiet relations add up to."""

    count: int = 0
    oldest_xid: Aged | None = None
    oldest_mxid: Aged | None = None


def split(
    tables: list[Table],
    earlier: Mapping[int, Relation],
    limits: FreezeLimits,
    reach: float,
    running: set[int],
) -> tuple[list[Table], Quiet]:
    """The tables to rank, in order, and the quiet ones' sum. ``earlier``: the previous
    snapshot's relations by oid (empty without one); ``limits``: the server's freeze limits;
    ``reach``: transaction ids the horizon will consume."""
    quiet = Quiet()
    ranked: list[Table] = []
    xid_limit, mxid_limit = limits.xid - reach, limits.mxid
    still = rates.still
    oldest_xid = oldest_mxid = -1
    for table in tables:
        heap, toast = table.heap, table.toast
        if heap.reloptions or (toast is not None and toast.reloptions):
            ranked.append(table)
            continue
        for rel in (heap, toast) if toast is not None else (heap,):
            xid_age, mxid_age = rel.frozenxid_age or 0, rel.minmxid_age or 0
            if (
                rel.n_dead_tup != 0
                or rel.n_ins_since_vacuum != 0
                or rel.n_mod_since_analyze != 0
                or xid_age > xid_limit
                or mxid_age > mxid_limit
                or rel.oid in running
            ):
                break
            if earlier:
                before = earlier.get(rel.oid)
                # The same record when the refresh kept it (collect/snapshot.py Kept).
                if before is not rel and (before is None or not still(before, rel)):
                    break
        else:
            for rel in (heap, toast) if toast is not None else (heap,):
                quiet.count += 1
                xid_age, mxid_age = rel.frozenxid_age or 0, rel.minmxid_age or 0
                if xid_age > oldest_xid:
                    oldest_xid, quiet.oldest_xid = xid_age, (xid_age, table, rel)
                if mxid_age > oldest_mxid:
                    oldest_mxid, quiet.oldest_mxid = mxid_age, (mxid_age, table, rel)
            continue
        ranked.append(table)
    return ranked, quiet


def older(
    standing_of: Callable[[Table], list[th.Standing]],
    ranked: th.Standing | None,
    quiet: Aged | None,
    *,
    xid: bool,
) -> th.Standing | None:
    """The oldest relation of a counter: the ranked one, or an older quiet one, whose
    standing ``standing_of`` works out now."""
    if quiet is None:
        return ranked
    age, table, rel = quiet
    if ranked is not None:
        held = ranked[1].frozenxid_age if xid else ranked[1].minmxid_age
        if (held or 0) >= age:
            return ranked
    return next(s for s in standing_of(table) if s[1] is rel)


def xid_rate(before: Snapshot | None, after: Snapshot, seconds: float | None) -> float:
    """Transaction ids consumed per second between two snapshots (0 without both)."""
    if before is None or before.xids is None or after.xids is None or not seconds:
        return 0.0
    return max(after.xids.next_xid - before.xids.next_xid, 0) / seconds
