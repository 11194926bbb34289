"""Where every relation stands: the advice's status table, one row per relation with its
thresholds, its rates and its time to the next vacuum (:mod:`vacuumlab.advise.estimate`). Its own
module, so the advisor (``advise/__init__.py``) imports the estimates at the top, and nothing in
the estimates imports the advisor back."""

from __future__ import annotations

from operator import itemgetter
from typing import cast

from pydantic import TypeAdapter

from vacuumlab.advise.context import Context
from vacuumlab.advise.estimate import table_rates
from vacuumlab.advise.partitions import partition_of
from vacuumlab.records.advice import TableStatus
from vacuumlab.records.shared import one_fields_set

#: Validates the status rows in one call: at 20,000 relations, one call per row costs a sixth more.
_STATUSES = TypeAdapter(list[TableStatus])
_PROGRESS = itemgetter("vacuum_progress")


def table_statuses(ctx: Context, *, every: bool = False) -> tuple[list[TableStatus], int]:
    """The advice's status table, most progress to its next vacuum first, and the number of
    relations left out: the quiet ones (:func:`vacuumlab.advise.estimate.quiet`), unless
    ``every`` lists them too. A partition is listed quiet or not: its partitioned table's
    rows group them all."""
    rates = ctx.memo["table_rates"] = table_rates(ctx, every=every)
    still = cast(set[int], ctx.memo["quiet"])
    names = ctx.names
    # Only where there are partitioned tables: the TOAST owners are a pass over every table.
    roots = partition_of(ctx) if ctx.now.partitioned else {}
    owners = ctx.owners if roots else {}
    # Relations sharing options share one Effective, and so one sorted list of overrides.
    overridden: dict[int, list[str]] = {}
    rows = []
    left_out = 0
    for t in ctx.thresholds:
        if t.relation.oid in still and not (
            roots and roots.get(owners[oid].oid if (oid := t.relation.oid) in owners else oid)
        ):
            left_out += 1
            continue
        effective = t.effective
        overrides = overridden.get(id(effective))
        if overrides is None:
            overrides = overridden[id(effective)] = sorted(effective.overridden)
        dead_rate, to_vacuum, duration = rates.get(t.relation.oid, (None, None, None))
        rows.append(
            {
                "relation": names[t.relation.oid],
                "is_toast": t.is_toast,
                "autovacuum_enabled": effective.enabled,
                "dead": t.dead,
                "vacuum_threshold": t.vacuum,
                "vacuum_progress": t.vacuum_progress,
                "inserted": t.inserted,
                "insert_threshold": t.insert,
                "modified": t.modified,
                "analyze_threshold": t.analyze,
                "overridden": overrides,
                "dead_per_second": dead_rate,
                "seconds_to_vacuum": to_vacuum,
                "estimated_vacuum_seconds": duration,
                "needs_analyze": t.needs_analyze,
                "forced": t.forced,
                "never_counted": t.relation.reltuples < 0,
                "partition_of": roots.get(
                    owners[oid].oid if (oid := t.relation.oid) in owners else oid
                )
                if roots
                else None,
            }
        )
    # Most progress first, ordered before validation with a key read in C; a stable sort in
    # reverse keeps equal rows in their order, as sorting on the negated progress did.
    rows.sort(key=_PROGRESS, reverse=True)
    return one_fields_set(_STATUSES.validate_python(rows)), left_out + ctx.idle
