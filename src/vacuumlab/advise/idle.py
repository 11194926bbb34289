"""The tables no question can say anything about, set aside before any model runs on them.

Most of a schema-per-tenant database sits idle: no dead tuple, insert or change counted, no
options, young ages. Every question still walked each of its relations (thresholds, names,
the estimates), 2.5 s of the advice at 100,000 tables. One pass over the relations' own
fields finds the tables where some question could find something; the questions see those
alone, and the status table counts the rest as quiet.

A table is kept when either of its relations has, or when the table has:

- a dead tuple, an insert or a change counted since its last vacuum or analyze (or no count
  at all): the thresholds, bloat, timing, workers and TOAST questions;
- options of its own, or its table's (a TOAST relation reads them): thresholds, TOAST;
- an age at ``AGE_SHARE`` of the server's freeze limit or more: wraparound warns from 75 %,
  the TOAST question from a TOAST relation 25 % older than its table;
- cumulative counts the HOT question (``hot.MIN_UPDATES`` updates) or the queue finding
  (``thresholds.MIN_DEAD`` deletes) reads;
- over an interval, anything its rates read that moved (``model.rates.still()``), or no
  earlier row;
- a TOAST relation of ``toast.MIN_TOAST_BYTES`` or more (the TOAST share);
- a probe's figures (``--exact``, the visibility map, shared buffers), a vacuum or an
  autovacuum worker on it now, or a place in a partitioned table.

What is left out must not change a finding: tests/test_advise_quiet.py compares the advice
with this pass and without it (``advise(every=True)``) at 10,000 tables.
"""

from __future__ import annotations

from collections.abc import Iterable

from vacuumlab.advise import hot, toast
from vacuumlab.advise import thresholds as threshold_question
from vacuumlab.advise.context import Context
from vacuumlab.model import forcing
from vacuumlab.model import rates as rates_model
from vacuumlab.model.forcing import FreezeLimits
from vacuumlab.records.snapshot import Relation, Snapshot, Table

#: Ages below this share of the server's freeze limits give no finding: under the TOAST
#: question's 25 % (toast.OLDER_SHARE) and wraparound's 75 %.
AGE_SHARE = 0.2


def set_aside(ctx: Context) -> None:
    """Set the idle tables of ``ctx`` aside (:meth:`Context.set_aside`)."""
    probed = ctx.exact.keys() | ctx.scanned.keys() | ctx.cached.keys()
    limits = forcing.freeze_limits(ctx.settings, {})
    ctx.set_aside(*in_play(ctx.now, ctx.earlier_by_oid, limits, probed))


def in_play(
    now: Snapshot,
    earlier: dict[int, Relation] | None,
    limits: FreezeLimits,
    probed: Iterable[int],
) -> tuple[list[Table], int]:
    """The tables some question may speak of, in the snapshot's order, and the number of
    relations left out. ``earlier``: the first snapshot's relations by oid (an interval);
    ``limits``: the server's freeze limits; ``probed``: relations with a probe's figures or a
    vacuum on them now."""
    keep = set(probed)
    keep.update(v.relid for v in now.vacuums)
    keep.update(w.relid for w in now.workers or () if w.relid is not None)
    for parent in now.partitioned:
        keep.update(parent.leaves)
    xid_age, mxid_age = AGE_SHARE * limits.xid, AGE_SHARE * limits.mxid
    min_updates, min_deletes = hot.MIN_UPDATES, threshold_question.MIN_DEAD
    toast_bytes = toast.MIN_TOAST_BYTES
    still = rates_model.still
    kept: list[Table] = []
    left = 0
    for table in now.tables:
        heap, rel_toast = table.heap, table.toast
        if (
            heap.reloptions
            or heap.oid in keep
            or (heap.toast_bytes or 0) >= toast_bytes
            or (rel_toast is not None and (rel_toast.reloptions or rel_toast.oid in keep))
        ):
            kept.append(table)
            continue
        for rel in (heap, rel_toast):
            if rel is None:
                continue
            if (
                rel.n_dead_tup != 0
                or rel.n_ins_since_vacuum != 0
                or rel.n_mod_since_analyze != 0
                or (rel.frozenxid_age or 0) >= xid_age
                or (rel.minmxid_age or 0) >= mxid_age
                or (rel.n_tup_upd or 0) >= min_updates
                or (rel.n_tup_del or 0) >= min_deletes
            ):
                break
            if earlier is not None:
                before = earlier.get(rel.oid)
                if before is None or not still(before, rel):
                    break
        else:
            left += 1 + (rel_toast is not None)
            continue
        kept.append(table)
    return kept, left
