"""When and how long: how fast each relation gathers dead tuples and inserts, when autovacuum
should next take it, and how long that vacuum should take under the cost-based delay.

- Rates, the time to the next vacuum and its duration are estimated in estimate.py.
- A relation is vacuumed once it passes a threshold (model/thresholds.py) and the launcher
  next sends a worker to its database, at most ``autovacuum_naptime`` later (the launcher
  visits every database once per naptime: launcher_determine_sleep() in autovacuum.c).
- The duration is the cost model's sleep (model/cost.py) for the pages the vacuum visits.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from vacuumlab.advise import horizon
from vacuumlab.advise import toast as toast_options
from vacuumlab.advise.context import Context, alter_system, alter_table, label
from vacuumlab.advise.estimate import Duration, Estimate, estimates
from vacuumlab.records.advice import Finding, Recommendation, Severity, Value
from vacuumlab.records.snapshot import Relation
from vacuumlab.units import duration as duration_text
from vacuumlab.units import rate as rate_text

#: The churn study's best step runs autovacuum_naptime at 10 s.
QUEUE_NAPTIME_S = 10
#: autovacuum_vacuum_cost_limit's maximum (guc_tables.c, reloptions.c).
MAX_COST_LIMIT = 10_000
CHURN_MEASUREMENT = (
    "vacuumlab run churn (demo preset, README): naptime 10s + cost_delay 0 + cost_limit 10000 "
    "+ scale_factor 0.1 cut mean latency 2.35 → 1.71 ms, its stddev 1.51 → 0.65 ms and the "
    "dead-tuple peak 214,718 → 86,662 against the defaults"
)
ASSUMPTIONS = (
    "each page found in shared buffers costs vacuum_cost_page_hit, each read in "
    "vacuum_cost_page_miss: of a relation larger than shared_buffers, the share that does not"
    " fit of the pages the workload did not just touch; each heap page read adds a hit on the"
    " free space map; the pages holding changes are dirtied, and cost vacuum_cost_page_dirty "
    "only if a checkpoint has written them since their last change (a share growing with the "
    "time since the last vacuum over 2 × checkpoint_timeout); each heap page that is not all-"
    "visible visited once, and runs of fewer than 32 all-visible pages too "
    "(SKIP_PAGES_THRESHOLD in vacuumlazy.c; an aggressive vacuum skips only all-frozen "
    "pages); without pg_visibility, the pages changed since the last vacuum or analyze are "
    "estimated from its counters, inserts at the end of the table and updates and deletes "
    "spread at random unless the table is append-mostly; every index page read once per index"
    " pass (one per fill of autovacuum_work_mem); the sleeps take as long as asked, and the "
    "work between them a fixed 3 ms and 20 µs a page visited"
)
_NO_INTERVAL = "run with --interval 60s for rates"
SHARED_SLOW = (
    "Other relations' vacuums outlast their cycles too, on the same shared budget: a cost "
    "limit of each one's own would raise that budget many times over and take them out of "
    "balancing (autovac_balance_cost in autovacuum.c). The budget is the one to change: see "
    "Cost budget and workers."
)
_KIND = {"dead tuples": "vacuum", "inserts": "insert"}


def findings(ctx: Context) -> list[Finding]:
    if ctx.later is None or not ctx.seconds or ctx.seconds <= 0:
        return [_no_interval()]
    active = [e for e in estimates(ctx) if e.active]
    if not active:
        return [_quiet(ctx.seconds)]
    naptime = ctx.setting("autovacuum_naptime", 60)
    fastest = _fastest_queue([e for e in active if _comes_and_goes(ctx, e)], naptime)
    shared_slow = sum(_slow(e) and _balanced(e) for e in active) > 1
    return [
        _finding(ctx, e, naptime, with_naptime=e is fastest, shared_slow=shared_slow)
        for e in active
    ]


# -- findings -----------------------------------------------------------------------------------


def _finding(
    ctx: Context, e: Estimate, naptime: float, *, with_naptime: bool, shared_slow: bool
) -> Finding:
    slow = _slow(e)
    detail = _detail(e, naptime, slow=slow)
    if horizon.held(ctx) and (slow or with_naptime):
        slow, with_naptime = False, False  # a faster or earlier vacuum removes nothing now
        detail += " " + horizon.HELD_BACK
    if slow and shared_slow and _balanced(e):
        slow = False
        detail += " " + SHARED_SLOW
    recommendations = _faster_vacuum(ctx, e) if slow else []
    if with_naptime:
        recommendations.append(_naptime(ctx, e, naptime))
    severity: Severity = "warning" if slow or with_naptime else "info"
    return Finding(
        question="timing",
        severity=severity,
        relation=e.name,
        title=_title(e, naptime),
        detail=detail,
        evidence=_evidence(e, naptime),
        recommendations=recommendations,
    )


def _balanced(e: Estimate) -> bool:
    """The relation's vacuum shares the workers' cost budget (no cost settings of its own)."""
    return e.duration is not None and e.duration.balanced


def _slow(e: Estimate) -> bool:
    """The vacuum takes longer than the relation needs to gather its threshold again."""
    cycle, seconds = e.cycle, e.vacuum_seconds
    return cycle is not None and seconds is not None and seconds > cycle


def _fastest_queue(active: list[Estimate], naptime: float) -> Estimate | None:
    """The relation that passes its threshold fastest, if faster than the launcher's round."""
    if naptime <= QUEUE_NAPTIME_S:
        return None
    fast = [e for e in active if e.cycle is not None and e.cycle < naptime]
    return min(fast, key=lambda e: e.cycle or 0.0) if fast else None


def _comes_and_goes(ctx: Context, e: Estimate) -> bool:
    """Queue-like over the interval: it deleted at least as many rows as it holds. The churn
    study's naptime evidence is for such tables; a small table updated in place (a counter,
    pgbench_branches) has its dead versions pruned on the page, and a shorter naptime buys
    it nothing worth a server-wide change. Nor is a TOAST relation whose values are replaced:
    a read fetches a value by its own chunk_id (toast_fetch_datum() in detoast.c, through the
    TOAST index), never through the dead chunks of replaced values, so they cost space, which
    the TOAST question reports, not latency."""
    if e.thresholds.is_toast:
        return False
    rel = e.thresholds.relation
    before = ctx.earlier(rel)
    if before is None or rel.n_tup_del is None or before.n_tup_del is None:
        return False
    return rel.n_tup_del - before.n_tup_del >= max(rel.n_live_tup or 0, 1)


def _title(e: Estimate, naptime: float) -> str:
    rate = e.rates.dead_per_second if e.rates else None
    if e.trigger == "autovacuum is off":
        title = f"autovacuum is off for it; dead tuples grow by {rate_text(rate or 0)}"
    elif e.to_vacuum == 0:
        why = e.trigger or "past its threshold"
        title = f"{why}: autovacuum is due within {duration_text(naptime)}"
    elif e.to_vacuum is not None:
        low, high = duration_text(e.to_vacuum), duration_text(e.to_vacuum + naptime)
        title = f"next autovacuum in {low} to {high} (by {e.trigger})"
    else:
        title = "no autovacuum in sight at the current rates"
    return title + _duration_clause(e)


def _duration_clause(e: Estimate) -> str:
    if e.duration is None or e.trigger == "autovacuum is off":
        return ""
    if not e.duration.throttled:
        return "; it runs unthrottled"
    return f"; it should take about {duration_text(e.vacuum_seconds or 0)}"


def _detail(e: Estimate, naptime: float, *, slow: bool) -> str:
    parts = [_rates_sentence(e)]
    if e.to_vacuum is not None and e.to_vacuum > 0:
        kind = _KIND.get(e.trigger or "", "vacuum")
        parts.append(
            f"It passes its {kind} threshold in about {duration_text(e.to_vacuum)}; the "
            f"launcher comes round within {duration_text(naptime)} after that."
        )
    parts.append(_duration_sentence(e))
    if slow and e.cycle is not None:
        parts.append(
            f"That is longer than the {duration_text(e.cycle)} it takes to gather a threshold "
            "of dead tuples again: each vacuum ends with a full threshold already waiting."
        )
    return " ".join(p for p in parts if p)


def _rates_sentence(e: Estimate) -> str:
    r = e.rates
    if r is None:
        return ""
    dead = "not reported" if r.dead_per_second is None else rate_text(r.dead_per_second)
    ins = "not reported" if r.inserts_per_second is None else rate_text(r.inserts_per_second)
    source = f" (from {r.dead_source})" if r.dead_source else ""
    return f"Dead tuples {dead}{source}, inserts {ins}."


def _duration_sentence(e: Estimate) -> str:
    d = e.duration
    if d is None:
        return "The cost settings are not in the snapshot: no duration estimate."
    passes = d.work.index_passes
    pages = f"{d.heap_pages:,} heap pages ({heap_source(d)})" + (
        f" and {d.index_pages:,} index pages" + (f" {passes} times" if passes > 1 else "")
        if d.index_scan
        else ""
    )
    if d.work.failsafe:
        return f"Past the failsafe age the vacuum reads {pages} with no cost delay at all."
    if not d.throttled:
        return f"The vacuum reads {pages} unthrottled (cost delay 0): its I/O sets the pace."
    best = duration_text(d.seconds(d.cost))
    low, high = duration_text(d.seconds(d.cost_low)), duration_text(d.seconds(d.cost_high))
    share = f", shared by {d.workers} workers" if d.workers > 1 else ""
    cached = ""
    if d.missed > 0.0:
        cached = (
            f"; larger than shared_buffers, {d.missed:.0%} of the pages the workload did not "
            "just touch are read from disk"
        )
    return (
        f"The vacuum visits {pages} (index pass: {d.index_reason}){cached}. At a cost limit "
        f"of {d.settings.limit}{share} and a {d.settings.delay_ms:g} ms delay it takes about "
        f"{best}: {low} if the pages it changes are all still dirty from the workload, {high} "
        "if a checkpoint has written them all."
    )


def _evidence(e: Estimate, naptime: float) -> dict[str, Value]:
    t, r, d = e.thresholds, e.rates, e.duration
    evidence: dict[str, Value] = {
        "dead_per_second": _round(r.dead_per_second if r else None),
        "dead_rate_from": r.dead_source if r else None,
        "inserts_per_second": _round(r.inserts_per_second if r else None),
        "n_dead_tup": t.dead,
        "vacuum_threshold": round(t.vacuum, 1),
        "seconds_to_vacuum": _round(e.to_vacuum),
        "seconds_to_vacuum_latest": _round(None if e.to_vacuum is None else e.to_vacuum + naptime),
        "trigger": e.trigger,
        "cycle_seconds": _round(e.cycle),
    }
    if d is not None:
        evidence |= _duration_evidence(d)
    evidence["average_past_autovacuum_seconds"] = _past_average(t.relation)
    return evidence


def heap_source(d: Duration) -> str:
    """How the heap pages were found, in a few words."""
    if d.work.heap_exact:
        return "counted from the visibility map"
    return "estimated from the changes since the last vacuum"


def _duration_evidence(d: Duration) -> dict[str, Value]:
    return {
        "heap_pages_to_visit": d.heap_pages,
        "heap_pages_from": "pg_visibility_map" if d.work.heap_exact else "estimated",
        "heap_pages_how": d.work.heap_how,
        "index_pages": d.index_pages,
        "index_scan": d.index_scan,
        "index_scan_reason": d.index_reason,
        "index_passes": d.work.index_passes,
        "aggressive": d.work.aggressive,
        "failsafe": d.work.failsafe,
        "cost": round(d.cost),
        "cost_low": round(d.cost_low),
        "cost_high": round(d.cost_high),
        "pages_missed_share": round(d.missed, 3),
        "pages_cached_from": "pg_buffercache" if d.cached else "estimated",
        "changed_pages_clean_share": round(d.clean, 3),
        "cost_limit": d.settings.limit,
        "cost_delay_ms": d.settings.delay_ms,
        "workers_sharing_limit": d.workers,
        "own_cost_settings": not d.balanced,
        "estimated_vacuum_seconds": _round(d.seconds(d.cost)) if d.throttled else None,
        "estimated_vacuum_seconds_low": _round(d.seconds(d.cost_low)) if d.throttled else None,
        "estimated_vacuum_seconds_high": _round(d.seconds(d.cost_high)) if d.throttled else None,
        "assumptions": ASSUMPTIONS,
    }


def _past_average(rel: Relation) -> float | None:
    """PostgreSQL 18 records the time autovacuum spent on the relation: a check on the model."""
    total, count = rel.total_autovacuum_time_ms, rel.autovacuum_count
    if total is None or not count:
        return None
    return round(total / count / 1000, 3)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# -- recommendations ----------------------------------------------------------------------------


def _faster_vacuum(ctx: Context, e: Estimate) -> list[Recommendation]:
    """A cost limit of the relation's own, high enough to finish within half a cycle."""
    d, cycle = e.duration, e.cycle
    assert d is not None
    assert cycle is not None
    needed = d.cost * d.settings.delay_ms / 1000 / (cycle / 2)
    limit = max(100, math.ceil(needed / 100) * 100)
    return own_cost_budget(
        ctx,
        e,
        limit,
        impact=min(1.0, 0.4 + 0.1 * (e.vacuum_seconds or 0) / cycle),
        reason=lambda setting, value: (
            f"a vacuum of {e.name} sleeps about {duration_text(e.vacuum_seconds or 0)} but the "
            f"relation gathers a threshold of dead tuples every {duration_text(cycle)}; with "
            f"{setting} = {value} of its own it finishes within half of that, and it leaves the "
            "shared budget to the other workers (autovac_balance_cost in autovacuum.c)"
        ),
    )


def own_cost_budget(
    ctx: Context,
    e: Estimate,
    limit: int,
    *,
    impact: float,
    reason: Callable[[str, str], str],
) -> list[Recommendation]:
    """A cost budget of the relation's own: ``limit`` as its cost limit, or no delay at all
    past the largest limit; a TOAST relation also gets the table's settings it would lose."""
    setting, value = (
        ("autovacuum_vacuum_cost_limit", str(limit))
        if limit <= MAX_COST_LIMIT
        else ("autovacuum_vacuum_cost_delay", "0")
    )
    rec = alter_table(
        e.table.heap,
        setting,
        value,
        toast=e.thresholds.is_toast,
        version=ctx.version,
        impact=impact,
        evidence=CHURN_MEASUREMENT,
        reason=reason(setting, value),
    )
    inherited = toast_options.needs_carry_over(e.table, is_toast=e.thresholds.is_toast)
    inherited.pop(setting, None)
    owner = label(e.table.heap)
    return [rec, *toast_options.carry_over(ctx, e.table, inherited, owner=owner)]


def _naptime(ctx: Context, e: Estimate, naptime: float) -> Recommendation:
    rate = e.rates.dead_per_second if e.rates else 0
    return alter_system(
        "autovacuum_naptime",
        str(QUEUE_NAPTIME_S),
        version=ctx.version,
        impact=0.4,
        evidence=CHURN_MEASUREMENT,
        reason=(
            f"{e.name} gathers a threshold of dead tuples every {duration_text(e.cycle or 0)}, "
            f"faster than the launcher's round of {duration_text(naptime)}: up to "
            f"{(rate or 0) * naptime:,.0f} more dead tuples wait for a worker. Naptime is "
            "server-wide only"
        ),
    )


def _no_interval() -> Finding:
    return Finding(
        question="timing",
        severity="info",
        relation=None,
        title=_NO_INTERVAL,
        detail=(
            "One snapshot has counters but no rates: when each table passes its threshold "
            "needs two snapshots some time apart. The status table still shows the "
            "estimated vacuum duration of each relation it lists."
        ),
    )


def _quiet(seconds: float) -> Finding:
    return Finding(
        question="timing",
        severity="info",
        relation=None,
        title=f"no relation gained dead tuples or inserts in {duration_text(seconds)}",
        detail="Nothing to time: take the snapshots while the workload runs.",
        evidence={"interval_seconds": round(seconds, 3)},
    )
