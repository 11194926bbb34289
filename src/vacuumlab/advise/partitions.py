"""Partitioned tables: the statistics autovacuum never gathers, and each tree's sums.

autovacuum analyzes every partition and never a partitioned table (relkind ``p``):
do_autovacuum() in autovacuum.c lists plain tables, materialized views and TOAST relations
only. A partitioned table's own statistics, sampled over all its partitions, are what the
planner reads for the table as a whole (selfuncs.c looks up the inherited statistics of an
inheritance parent): joins and groupings over it. Only a manual ``ANALYZE`` gathers them, and
the documentation asks for one after the first load and whenever the data changes much.

How far the partitions moved since that ANALYZE is a lower bound from what the statistics
keep: the rows now against the rows it counted, and the rows changed in partitions analyzed
(or created) since. ``ANALYZE parent`` analyzes each partition too, so a partition's changes
since its own last analyze came after the parent's; one autoanalyzed since had at least its
analyze threshold changed.

Per-partition advice stays per partition: each is an ordinary table to autovacuum.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from psycopg import sql

from vacuumlab.advise.context import Context
from vacuumlab.advise.estimate import table_rates
from vacuumlab.records.advice import Finding, PartitionedStatus
from vacuumlab.records.snapshot import Partitioned, Relation
from vacuumlab.units import share

#: Below this many rows in its partitions (never analyzed), or rows changed since (analyzed),
#: a partitioned table's statistics are not worth a finding.
MIN_ROWS: Final = 1000
#: Moved by at least this share of the rows its statistics counted: a warning ("most of its
#: rows"); below it, from the server's autovacuum_analyze_scale_factor on, information.
WARN_SHARE: Final = 0.5


def findings(ctx: Context) -> list[Finding]:
    """A finding per partitioned table whose own statistics are missing or stale."""
    if not ctx.now.partitioned:
        return []
    factor = ctx.setting("autovacuum_analyze_scale_factor", 0.1)
    found = []
    for parent in ctx.now.partitioned:
        leaves = _leaves(ctx, parent)
        if _never_analyzed(parent):
            finding = _never(ctx, parent, leaves)
        else:
            finding = _stale(ctx, parent, leaves, factor)
        if finding is not None:
            found.append(finding)
    return found


def statuses(ctx: Context) -> list[PartitionedStatus]:
    """Each top-level partitioned table with its leaves' sums, for the status table's groups.
    Its rate of dead tuples is the sum of its partitions' own rates, each over the same
    relation in both snapshots: a partition attached or detached between them moves the
    sums, not the rate."""
    rates: dict[int, float | None] = {}
    if ctx.later is not None and ctx.now.partitioned:
        computed = ctx.memo.get("table_rates")  # the status rows' (table_status.py)
        if not isinstance(computed, dict):
            computed = table_rates(ctx)
        rates = {oid: rate for oid, (rate, _, _) in computed.items()}
    found = []
    for parent in ctx.now.partitioned:
        if parent.parent is not None:
            continue  # a sub-partitioned level: its leaves are its root's
        leaves = _leaves(ctx, parent)
        known = [rates[rel.oid] for rel in leaves if rates.get(rel.oid) is not None]
        found.append(
            PartitionedStatus(
                relation=parent.qualified_name,
                partitions=len(leaves),
                rows=sum(_rows(rel) for rel in leaves),
                dead=sum(rel.n_dead_tup or 0 for rel in leaves),
                inserted=sum(rel.n_ins_since_vacuum or 0 for rel in leaves),
                modified=sum(rel.n_mod_since_analyze or 0 for rel in leaves),
                dead_per_second=sum(r for r in known if r is not None) if known else None,
                analyzed_rows=None if parent.reltuples < 0 else parent.reltuples,
                last_analyze=parent.last_analyze,
            )
        )
    return found


def partition_of(ctx: Context) -> dict[int, str]:
    """The top-level partitioned table of each leaf partition, by the leaf's oid."""
    return {
        leaf: parent.qualified_name
        for parent in ctx.now.partitioned
        if parent.parent is None
        for leaf in parent.leaves
    }


def _leaves(ctx: Context, parent: Partitioned) -> list[Relation]:
    tables = ctx.tables_by_oid
    return [tables[oid].heap for oid in parent.leaves if oid in tables]


def _rows(rel: Relation) -> int:
    """A partition's live rows in the statistics (its reltuples where they have none)."""
    if rel.n_live_tup is not None:
        return rel.n_live_tup
    return int(max(rel.reltuples, 0))


def _rows_now(rel: Relation, block_size: int) -> int:
    """A partition's rows for comparing with the partitioned table's ANALYZE: the smaller of
    its live rows and its reltuples scaled to its pages now, as the planner scales them
    (estimate_rel_size()). A session's changes reach the statistics up to a second after it
    commits (pgstat's flush interval): a load analyzed straight after is counted again in
    n_live_tup, on top of the rows the ANALYZE counted, while its pages hold it once."""
    live = _rows(rel)
    if rel.reltuples < 0 or rel.relpages <= 0 or rel.heap_bytes is None:
        return live
    paged = rel.reltuples / rel.relpages * (rel.heap_bytes / block_size)
    return min(live, round(paged))


def _never_analyzed(parent: Partitioned) -> bool:
    """From 14, ANALYZE sets a partitioned table's reltuples (-1 until then) and its
    last_analyze; either one says it ran."""
    return parent.reltuples < 0 and parent.last_analyze is None and not parent.analyze_count


def _analyze_sql(parent: Partitioned, *, only: bool = False) -> str:
    command = "ANALYZE ONLY {};" if only else "ANALYZE {};"
    name = sql.Identifier(parent.schema_name, parent.name)
    return sql.SQL(command).format(name).as_string(None)


def _fix(ctx: Context, parent: Partitioned) -> str:
    text = f"Run {_analyze_sql(parent)} (it analyzes each partition too)"
    if ctx.version >= 180000:
        only = _analyze_sql(parent, only=True)
        text += f", or on PostgreSQL 18 {only} to gather the partitioned table's alone"
    return text + "."


_WHY = (
    "autovacuum analyzes each partition but never a partitioned table (do_autovacuum() lists "
    "plain tables, materialized views and TOAST relations only). The planner estimates "
    "queries over the whole table, its joins and groupings, from the partitioned table's own "
    "statistics, which only a manual ANALYZE gathers: after the first load and whenever the "
    "data changes much."
)


def _never(ctx: Context, parent: Partitioned, leaves: list[Relation]) -> Finding | None:
    rows = sum(_rows(rel) for rel in leaves)
    if rows < MIN_ROWS:
        return None
    name = parent.qualified_name
    return Finding(
        question="thresholds",
        severity="warning",
        relation=name,
        title=f"partitioned table never analyzed: {rows:,} rows in {len(leaves)} partitions "
        "and no statistics of its own",
        detail=f"{_WHY} {name} has none: its estimates fall back on defaults. {_fix(ctx, parent)}",
        evidence={
            "partitions": len(leaves),
            "rows": rows,
            "reltuples": parent.reltuples,
            "last_analyze": None,
            "fix": _analyze_sql(parent),
        },
    )


def _stale(
    ctx: Context, parent: Partitioned, leaves: list[Relation], factor: float
) -> Finding | None:
    counted = max(parent.reltuples, 0.0)
    rows = sum(_rows_now(rel, ctx.now.server.block_size) for rel in leaves)
    grown = abs(rows - counted)
    changed = _changed_since(parent.last_analyze, leaves)
    moved = max(grown, changed)
    ratio = moved / max(counted, 1.0)
    if moved < MIN_ROWS or ratio < factor:
        return None
    name = parent.qualified_name
    when = "" if parent.last_analyze is None else f" on {parent.last_analyze:%Y-%m-%d %H:%M} UTC"
    return Finding(
        question="thresholds",
        severity="warning" if ratio >= WARN_SHARE else "info",
        relation=name,
        title=f"partitioned table's statistics are stale: its partitions moved by at least "
        f"{share(ratio)} of the {counted:,.0f} rows its last ANALYZE counted",
        detail=(
            f"{_WHY} {name} was last analyzed{when}, over {counted:,.0f} rows; its "
            f"{len(leaves)} partitions now hold {rows:,}"
            + (f", and at least {changed:,} of their rows changed since" if changed else "")
            + f". {_fix(ctx, parent)}"
        ),
        evidence={
            "partitions": len(leaves),
            "rows": rows,
            "reltuples": parent.reltuples,
            "rows_changed_since": changed,
            "rows_moved": round(moved),
            "last_analyze": None
            if parent.last_analyze is None
            else parent.last_analyze.isoformat(),
            "fix": _analyze_sql(parent),
        },
    )


def _changed_since(analyzed: datetime | None, leaves: list[Relation]) -> int:
    """At least how many partition rows changed since the partitioned table's ANALYZE, from
    the partitions whose counter of changes started after it: those never analyzed (created
    or attached since: ``ANALYZE parent`` analyzes every partition it has), and those
    autoanalyzed since. A partition last analyzed by that ANALYZE itself is left out: a
    session's changes reach the statistics up to a second after it commits (pgstat's flush
    interval), so a load analyzed straight after leaves its rows in the partitions' counts
    of changes since, though the ANALYZE sampled them."""
    changed = 0
    for rel in leaves:
        auto, manual = rel.last_autoanalyze, rel.last_analyze
        if (auto is None and manual is None) or (
            analyzed is not None
            and auto is not None
            and auto > analyzed
            and (manual is None or auto >= manual)
        ):
            changed += rel.n_mod_since_analyze or 0
    return changed
