"""Bloat: how much of each relation is dead rows or empty space — estimated from statistics,
and measured where ``--exact`` ran ``pgstattuple_approx``.

The estimate is deliberately simple. The snapshot has no row width, so "expected pages from
rows × width" cannot be computed honestly: ``heap_bytes / reltuples`` would take the width
from the very pages whose bloat is in question. What the statistics do say is how many dead
rows wait for vacuum (``n_dead_tup``) next to the live ones (``n_live_tup``), so the estimate is
their share, ``n_dead_tup / (n_live_tup + n_dead_tup)``, applied to the heap's size — assuming
dead rows are as wide as live ones. It cannot see free space that earlier vacuums left
behind (pgstattuple's ``approx_free_percent``), so it is a floor for a table that was once much
larger, and only ``--exact`` measures that.
"""

from __future__ import annotations

from dataclasses import dataclass

from vacuumlab.advise import horizon
from vacuumlab.advise import toast as toast_options
from vacuumlab.advise.context import Context, alter_table, label
from vacuumlab.model.thresholds import Thresholds, vacuum_threshold
from vacuumlab.records.advice import Finding, Recommendation, Severity, Value
from vacuumlab.records.snapshot import ExactBloat, Relation, Table

#: Bloat worth acting on: above this share of the relation...
LARGE_SHARE = 0.30
#: ...and above this many bytes.
LARGE_BYTES = 10 << 20
#: Estimates below either of these are not reported.
REPORT_SHARE = 0.10
REPORT_BYTES = 1 << 20
#: The scale factor recommended against bloat: a vacuum every 5 % of rows changed.
TARGET_SCALE_FACTOR = 0.05
#: Recommend the lower factor only if vacuums would come at least this many times as often.
MIN_GAIN = 1.5
_MB = 1 << 20
ESTIMATOR = (
    "Estimated from statistics: dead rows' share of all rows, n_dead_tup / (n_live_tup + "
    "n_dead_tup), applied to the heap's size, as if dead rows were as wide as live ones. Free "
    "space that earlier vacuums left behind is invisible to the statistics: --exact measures "
    "it with pgstattuple_approx."
)
NO_INDEX_ESTIMATE = (
    "Index bloat is not estimated: an index's size against its table's depends on the "
    "columns it covers more than on bloat; pgstatindex measures it."
)
RECLAIM = (
    "Vacuum makes dead rows' space reusable but gives it back to the system only at the end "
    "of the table; to shrink it, rewrite it: VACUUM FULL (an ACCESS EXCLUSIVE lock for the "
    "whole rewrite) or pg_repack (online, with room for a second copy)."
)


@dataclass(frozen=True, slots=True)
class BloatEstimate:
    """A relation's bloat from the statistics alone: its size, the dead tuples' share of it, and
    the pages the visibility map does not mark all-visible. (The time to its next vacuum is
    :class:`vacuumlab.advise.estimate.Estimate`.)"""

    size: int
    dead_share: float
    pages: int
    not_all_visible: int

    @property
    def wasted(self) -> float:
        return self.size * self.dead_share


def findings(ctx: Context) -> list[Finding]:
    by_oid = ctx.thresholds_by_oid
    found = []
    for table in ctx.tables():
        for rel in (table.heap, table.toast):
            if rel is None:
                continue
            finding = _relation(ctx, table, rel, by_oid.get(rel.oid))
            if finding is not None:
                found.append(finding)
    return found


def bloat_estimate(rel: Relation, block_size: int) -> BloatEstimate | None:
    live, dead = rel.n_live_tup, rel.n_dead_tup
    if live is None or dead is None or live + dead == 0:
        return None
    size = rel.heap_bytes if rel.heap_bytes is not None else rel.relpages * block_size
    pages = size // block_size
    return BloatEstimate(
        size=size,
        dead_share=dead / (live + dead),
        pages=pages,
        not_all_visible=max(pages - min(rel.relallvisible, pages), 0),
    )


def wasted_share(m: ExactBloat, fillfactor: float) -> float:
    """Dead rows plus free space beyond what fillfactor keeps free on purpose."""
    reserved = 100 - fillfactor
    return (m.dead_tuple_percent + max(m.approx_free_percent - reserved, 0.0)) / 100


def _relation(ctx: Context, table: Table, rel: Relation, t: Thresholds | None) -> Finding | None:
    est = bloat_estimate(rel, ctx.now.server.block_size)
    m = ctx.exact.get(rel.oid)
    if m is not None:
        fillfactor = _fillfactor(rel)
        share, size = wasted_share(m, fillfactor), float(m.table_len)
    elif est is not None:
        share, size = est.dead_share, float(est.size)
        if share < REPORT_SHARE or share * size < REPORT_BYTES:
            return None
        fillfactor = _fillfactor(rel)  # only for the relations that get a finding
    else:
        return None
    large = share > LARGE_SHARE and share * size > LARGE_BYTES
    # A holder that counts keeps every dead row newer than it: vacuuming more often removes
    # none of them, and the horizon question says what to do (GetOldestNonRemovableTransactionId
    # in procarray.c). The bloat is shown, at info, without a setting to change.
    held = large and horizon.held(ctx)
    recommendations = _more_often(ctx, table, rel, t) if large and not held else []
    severity: Severity = "warning" if large and not held else "info"
    name = label(rel, table.heap)
    detail = _detail(est, m, t, large=large, fillfactor=fillfactor)
    return Finding(
        question="bloat",
        severity=severity,
        relation=name,
        title=_title(est, m, share, size),
        detail=detail + (f" {horizon.HELD_BACK}" if held else ""),
        evidence=_evidence(est, m, share, fillfactor),
        recommendations=recommendations,
    )


def _title(est: BloatEstimate | None, m: ExactBloat | None, share: float, size: float) -> str:
    wasted = f"{share:.0%} of {size / _MB:,.1f} MB ({share * size / _MB:,.1f} MB)"
    if m is None:
        return f"estimated bloat: {wasted} dead rows, from statistics"
    estimated = f"; the statistics estimate {est.dead_share:.0%}" if est is not None else ""
    return f"bloat measured: {wasted} dead or free{estimated}"


def _detail(
    est: BloatEstimate | None,
    m: ExactBloat | None,
    t: Thresholds | None,
    *,
    large: bool,
    fillfactor: int,
) -> str:
    parts = [ESTIMATOR]
    if est is not None:
        parts.append(
            f"{est.not_all_visible:,} of {est.pages:,} pages were not all-visible at the last "
            "vacuum or analyze: the next vacuum reads them, the pages changed since, and the "
            "runs of fewer than 32 all-visible pages between them (vacuumlazy.c)."
        )
    if m is not None:
        parts.append(
            f"Measured: {m.dead_tuple_percent:.1f} % dead rows, "
            f"{m.approx_free_percent:.1f} % free space "
            f"({100 - fillfactor} % of it kept free by fillfactor {fillfactor})."
        )
    if t is not None and t.dead > t.vacuum:
        parts.append(
            f"Its {t.dead:,} dead rows are past its threshold of {t.vacuum:,.0f}: vacuum is late "
            "rather than rare — see what holds it back (thresholds, horizon, workers)."
        )
    if large:
        parts.append(RECLAIM)
    parts.append(NO_INDEX_ESTIMATE)
    return " ".join(parts)


def _evidence(
    est: BloatEstimate | None, m: ExactBloat | None, share: float, fillfactor: int
) -> dict[str, Value]:
    evidence: dict[str, Value] = {"wasted_share": round(share, 4), "fillfactor": fillfactor}
    if est is not None:
        evidence |= {
            "estimated_dead_share": round(est.dead_share, 4),
            "estimated_dead_bytes": round(est.wasted),
            "size_bytes": est.size,
            "pages": est.pages,
            "pages_not_all_visible": est.not_all_visible,
        }
    if m is not None:
        evidence |= {
            "measured_table_len": float(m.table_len),
            "measured_dead_tuple_percent": m.dead_tuple_percent,
            "measured_approx_free_percent": m.approx_free_percent,
            "measured_approx_tuple_percent": m.approx_tuple_percent,
        }
    return evidence


def _more_often(
    ctx: Context, table: Table, rel: Relation, t: Thresholds | None
) -> list[Recommendation]:
    """A lower scale factor of the relation's own: vacuums come before dead rows pile up.
    Not while reltuples is unknown (-1), nor where 18's autovacuum_vacuum_max_threshold caps
    the threshold below what the lower factor would give."""
    if t is None or not t.effective.enabled or t.relation.reltuples < 0:
        return []
    current = t.effective.vacuum_scale_factor
    lower = vacuum_threshold(t.effective, t.relation.reltuples, scale_factor=TARGET_SCALE_FACTOR)
    if current <= TARGET_SCALE_FACTOR or lower <= 0 or t.vacuum / lower < MIN_GAIN:
        return []
    name = label(rel, table.heap)
    rec = alter_table(
        table.heap,
        "autovacuum_vacuum_scale_factor",
        f"{TARGET_SCALE_FACTOR:g}",
        toast=t.is_toast,
        version=ctx.version,
        impact=0.5,
        reason=(
            f"at {current:g} × reltuples autovacuum waits for {t.vacuum:,.0f} dead rows in "
            f"{name}; at {TARGET_SCALE_FACTOR:g} for {lower:,.0f}{_capped(t, lower)}, so it comes "
            f"about {t.vacuum / lower:.2g} times as often and fewer dead rows take space between "
            "vacuums (it does not give back space already lost)"
        ),
    )
    inherited = toast_options.needs_carry_over(table, is_toast=t.is_toast)
    inherited.pop("autovacuum_vacuum_scale_factor", None)
    return [rec, *toast_options.carry_over(ctx, table, inherited, owner=label(table.heap))]


def _capped(t: Thresholds, threshold: float) -> str:
    cap = t.effective.vacuum_max_threshold
    return " (autovacuum_vacuum_max_threshold caps it)" if threshold == cap else ""


def _fillfactor(rel: Relation) -> int:
    try:
        return int(rel.reloptions.get("fillfactor", "100"))
    except ValueError:
        return 100
