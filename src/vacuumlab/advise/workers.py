"""Cost budget and workers: whether autovacuum as a whole keeps up with the dead tuples every
table produces, and whether there are workers for the tables past their thresholds.

All autovacuum workers share one cost budget: ``autovacuum_vacuum_cost_limit`` per
``autovacuum_vacuum_cost_delay``, split between the workers running
(autovac_balance_cost() in src/backend/postmaster/autovacuum.c) — except tables with
cost settings of their own, which keep theirs. ``autovacuum_max_workers`` caps how many tables are
vacuumed at once, in all databases together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vacuumlab.advise import estimate, horizon, simulated, timing
from vacuumlab.advise.context import Context, alter_system
from vacuumlab.model import balance
from vacuumlab.model import cost as cm
from vacuumlab.model.knobs import knob
from vacuumlab.model.thresholds import of_tables
from vacuumlab.records.advice import Finding, Recommendation, Severity, Value
from vacuumlab.records.snapshot import Relation

#: Recommend a budget this many times the pages per second needed.
HEADROOM = 2.0
#: Warn once the need reaches this share of the budget: it is a lower bound.
BUSY_SHARE = 0.5
#: A relation with at least this share of the need gets a cost limit of its own.
HOT_SHARE = 0.5
#: A relation past its threshold through an interval of this many naptimes waited for a slot.
WAITED_NAPTIMES = 2.0
ASSUMPTIONS = (
    "dead tuples packed as densely as live ones (reltuples / relpages to a page), each page "
    "costing vacuum_cost_page_hit + vacuum_cost_page_dirty: a lower bound, since dead tuples "
    "spread over more pages dirty more of them, and each vacuum also reads the pages that are "
    "not all-visible and its indexes"
)


@dataclass(frozen=True, slots=True)
class Need:
    """Pages per second of vacuum work one relation produces."""

    estimate: estimate.Estimate
    pages_per_second: float


def findings(ctx: Context) -> list[Finding]:
    return [*_budget(ctx), _workers(ctx)]


# -- the cost budget ----------------------------------------------------------------------------


def _budget(ctx: Context) -> list[Finding]:
    settings = estimate.autovacuum_cost(ctx)
    if settings is None:
        return [_info("the cost settings are not in the snapshot", "No budget to compare.")]
    if ctx.later is None or not ctx.seconds or ctx.seconds <= 0:
        return [
            _info(
                "run with --interval 60s to compare the work with the cost budget",
                "The work autovacuum has to do comes from dead-tuple rates: two snapshots.",
            )
        ]
    if settings.delay_ms == 0:
        return [
            _info(
                "autovacuum runs unthrottled: no cost budget",
                "autovacuum_vacuum_cost_delay is 0, so workers never sleep for cost; their "
                "pace is the I/O's.",
            )
        ]
    needs, unsized = _needs(ctx)
    return [_budget_finding(ctx, settings, needs, unsized)]


def _needs(ctx: Context) -> tuple[list[Need], int]:
    """Each relation sharing the budget, with the pages per second its dead tuples fill."""
    needs, unsized = [], 0
    for e in estimate.estimates(ctx):
        rate = e.rates.dead_per_second if e.rates else None
        shared = e.duration is not None and e.duration.balanced
        if not rate or not shared or not e.thresholds.effective.enabled:
            continue
        rel = e.thresholds.relation
        if rel.relpages <= 0 or rel.reltuples <= 0:
            unsized += 1
            continue
        needs.append(Need(e, rate / (rel.reltuples / rel.relpages)))
    return needs, unsized


def _budget_finding(
    ctx: Context, settings: cm.CostSettings, needs: list[Need], unsized: int
) -> Finding:
    page_cost = settings.page_hit + settings.page_dirty
    budget = cm.pages_per_second(page_cost, settings)
    needed = sum(n.pages_per_second for n in needs)
    share = needed / budget
    hottest = max(needs, key=lambda n: n.pages_per_second, default=None)
    busy = share >= BUSY_SHARE and not horizon.held(ctx)  # held: more budget removes nothing
    recommendations = _more_budget(ctx, settings, needs, needed, hottest) if busy else []
    severity: Severity = "warning" if busy else "info"
    return Finding(
        question="workers",
        severity=severity,
        relation=None,
        title=(
            f"dead tuples need {needed:,.0f} pages/s of vacuum; the cost budget allows "
            f"{budget:,.0f} ({share:.0%})"
        ),
        detail=_budget_detail(settings, page_cost, budget, hottest, needed, unsized)
        + (f" {horizon.HELD_BACK}" if share >= BUSY_SHARE and not busy else ""),
        evidence=_budget_evidence(settings, page_cost, budget, needed, hottest, len(needs)),
        recommendations=recommendations,
    )


def _budget_detail(
    settings: cm.CostSettings,
    page_cost: float,
    budget: float,
    hottest: Need | None,
    needed: float,
    unsized: int,
) -> str:
    text = (
        f"The workers share a limit of {settings.limit} per {settings.delay_ms:g} ms: at "
        f"{page_cost:g} a page (hit + dirtied) that is {budget:,.0f} pages/s whatever the "
        "number of workers. "
        f"Assumed: {ASSUMPTIONS}."
    )
    if hottest is not None and needed > 0:
        text += (
            f" {hottest.estimate.name} alone needs {hottest.pages_per_second:,.0f} pages/s "
            f"({hottest.pages_per_second / needed:.0%})."
        )
    if unsized:
        text += f" {unsized} relations without reltuples/relpages (never analysed) are left out."
    return text


def _budget_evidence(
    settings: cm.CostSettings,
    page_cost: float,
    budget: float,
    needed: float,
    hottest: Need | None,
    counted: int,
) -> dict[str, Value]:
    return {
        "needed_pages_per_second": round(needed, 1),
        "budget_pages_per_second": round(budget, 1),
        "budget_share": round(needed / budget, 4),
        "cost_per_page": page_cost,
        "cost_limit": settings.limit,
        "cost_delay_ms": settings.delay_ms,
        "relations_counted": counted,
        "hottest": hottest.estimate.name if hottest else None,
        "hottest_pages_per_second": round(hottest.pages_per_second, 1) if hottest else None,
    }


def _more_budget(
    ctx: Context,
    settings: cm.CostSettings,
    needs: list[Need],
    needed: float,
    hottest: Need | None,
) -> list[Recommendation]:
    """Per table when one relation makes most of the work, else server-wide."""
    if hottest is not None and hottest.pages_per_second >= HOT_SHARE * needed:
        return _own_budget(ctx, settings, hottest)
    return _shared_budget(ctx, settings, needed)


def _limit_for(pages_per_second: float, settings: cm.CostSettings) -> int:
    """The cost limit that allows HEADROOM × the pages per second at the current delay."""
    page_cost = settings.page_hit + settings.page_dirty
    raw = HEADROOM * pages_per_second * page_cost * settings.delay_ms / 1000
    return max(100, math.ceil(raw / 100) * 100)


def _own_budget(ctx: Context, settings: cm.CostSettings, hot: Need) -> list[Recommendation]:
    e = hot.estimate
    # Never below the shared limit: its own setting should not leave it worse off than alone.
    limit = max(_limit_for(hot.pages_per_second, settings), settings.limit)
    return timing.own_cost_budget(
        ctx,
        e,
        limit,
        impact=0.6,
        reason=lambda setting, value: (
            f"{e.name} makes {hot.pages_per_second:,.0f} pages/s of vacuum work, most of it; "
            f"{setting} = {value} of its own gives it {HEADROOM:g} × that and takes it out of "
            "the shared budget, which the other tables keep"
        ),
    )


def _shared_budget(ctx: Context, settings: cm.CostSettings, needed: float) -> list[Recommendation]:
    limit = _limit_for(needed, settings)
    why = (
        f"all tables together need {needed:,.0f} pages/s; the shared budget is "
        f"{cm.pages_per_second(settings.page_hit + settings.page_dirty, settings):,.0f}"
    )
    if limit <= timing.MAX_COST_LIMIT:
        if limit <= settings.limit:
            return []
        return [_system(ctx, "autovacuum_vacuum_cost_limit", str(limit), why, 0.6)]
    page_cost = settings.page_hit + settings.page_dirty
    delay = timing.MAX_COST_LIMIT / (HEADROOM * needed * page_cost) * 1000
    delay_value = f"{math.floor(delay * 10) / 10:g}"
    return [
        _system(ctx, "autovacuum_vacuum_cost_limit", str(timing.MAX_COST_LIMIT), why, 0.6),
        _system(ctx, "autovacuum_vacuum_cost_delay", delay_value, why + " even at 10000", 0.5),
    ]


def _system(ctx: Context, setting: str, value: str, why: str, impact: float) -> Recommendation:
    return alter_system(
        setting,
        value,
        version=ctx.version,
        impact=impact,
        evidence=timing.CHURN_MEASUREMENT,
        reason=f"{why}: {setting} = {knob(setting).with_unit(value)} gives {HEADROOM:g} × the need",
    )


# -- workers ------------------------------------------------------------------------------------


def _workers(ctx: Context) -> Finding:
    max_workers = ctx.workers
    # Every worker alive holds a slot, those running ANALYZE too (pg_stat_activity).
    running = balance.busy_workers(ctx.now.workers, ctx.now.vacuums)
    busy = {v.relid for v in ctx.now.vacuums if v.is_autovacuum}
    names = ctx.names
    waiting = [
        names[t.relation.oid]
        for t in ctx.thresholds
        if t.needs_vacuum and t.relation.oid not in busy
    ]
    free = max(max_workers - running, 0)
    # With a worker free, a waiting relation only waits for the launcher's next round.
    waited = _waited(ctx, busy)
    paced = bool(waited) and _paced(ctx)
    short = (free == 0 and bool(waiting)) or bool(waited)
    severity: Severity = "warning" if short else "info"
    detail = _workers_detail(waiting, free) + _waited_detail(ctx, waited)
    recommendations = []
    if paced and free:
        rec, note = _faster_launcher(ctx, waited)
        recommendations = [rec] if rec else []
        detail += note
    elif short:
        rec, note = more_workers(ctx, max_workers, len(waiting))
        recommendations = [rec] if rec else []
        detail += note
    return Finding(
        question="workers",
        severity=severity,
        relation=None,
        title=(
            f"{running} of {max_workers} autovacuum workers busy; relations past their "
            f"threshold without one: {len(waiting)}"
            + (f"; {len(waited)} waited the whole {ctx.seconds or 0:,.0f} s" if waited else "")
        ),
        detail=detail,
        evidence={
            "autovacuum_max_workers": max_workers,
            "running": running,
            "free": free,
            "waiting": len(waiting),
            "waited_the_interval": len(waited) if ctx.later is not None else None,
        },
        recommendations=recommendations,
    )


def _waited(ctx: Context, busy: set[int]) -> list[str]:
    """Relations past their threshold in both snapshots, vacuumed by nobody in between and by
    no worker at either end, over an interval of at least WAITED_NAPTIMES naptimes.

    While a worker slot is free the launcher starts a worker in each database every
    autovacuum_naptime / databases (launcher_determine_sleep, do_start_worker in
    autovacuum.c), and a new worker takes any relation past its threshold that no other
    worker holds, the first in its list. So a relation that waits several naptimes waited
    for a slot, whatever the count of busy workers at the instant of either snapshot (a worker
    visiting another database leaves its slot free for a moment), or behind other relations'
    long vacuums, one per naptime it waited: the simulation tells which (_paced())."""
    seconds = ctx.seconds
    naptime = ctx.setting("autovacuum_naptime", 60.0)
    if ctx.later is None or seconds is None or seconds < WAITED_NAPTIMES * naptime:
        return []
    first = of_tables(ctx.snapshot.tables, ctx.settings, ctx.version)
    before = {t.relation.oid for t in first if t.needs_vacuum}
    busy_before = {v.relid for v in ctx.snapshot.vacuums if v.is_autovacuum}
    names = ctx.names
    waited = []
    for t in ctx.thresholds:
        rel = t.relation
        then = ctx.earlier(rel)
        if not t.needs_vacuum or rel.oid not in before or then is None:
            continue
        if rel.oid in busy or rel.oid in busy_before or _vacuumed_between(then, rel):
            continue
        waited.append(names[rel.oid])
    return waited


def _paced(ctx: Context) -> bool:
    """Whether the simulation of the hours ahead has relations waiting long with a slot free
    and none waiting for a slot: then the launcher's pace or the workers' list order holds
    them back, not the number of workers (see simulated.waits())."""
    run = simulated.base(ctx)
    if run is None:
        return False
    late = simulated.waits(run)
    return bool(late.with_slots_free) and not late.for_a_slot


def _faster_launcher(ctx: Context, waited: list[str]) -> tuple[Recommendation | None, str]:
    """Half the naptime, at least a second: a worker per database twice as often, so a
    relation behind long vacuums in one worker's list is taken by the next worker sooner."""
    naptime = ctx.setting("autovacuum_naptime", 60.0)
    target = max(math.floor(naptime / 2), 1)
    note = (
        " Simulated, they wait with a worker slot free: behind other relations' long vacuums "
        "in the workers' lists, and for the launcher, which starts one worker per database "
        "every autovacuum_naptime. More workers would not shorten that; a shorter naptime "
        "would."
    )
    if target >= naptime:
        return None, note
    rec = alter_system(
        "autovacuum_naptime",
        str(target),
        version=ctx.version,
        impact=0.5,
        reason=(
            f"{len(waited)} relations waited past their threshold with a worker slot free: "
            "the launcher sends a worker to each database once per autovacuum_naptime "
            "(launcher_determine_sleep() in autovacuum.c), and each worker goes through its "
            "list in order"
        ),
    )
    return rec, note


def _vacuumed_between(then: Relation, now: Relation) -> bool:
    return (then.autovacuum_count, then.vacuum_count) != (now.autovacuum_count, now.vacuum_count)


def _waited_detail(ctx: Context, waited: list[str]) -> str:
    if not waited:
        return ""
    shown = ", ".join(waited[:5]) + (f" and {len(waited) - 5} more" if len(waited) > 5 else "")
    return (
        f" Past their threshold at both snapshots, {ctx.seconds or 0:,.0f} s apart, and "
        f"vacuumed by no worker in between: {shown}. They waited for a slot, or behind other "
        "relations' vacuums: the launcher starts one worker per database every naptime, and "
        "each goes through its list in pg_class order."
    )


def _workers_detail(waiting: list[str], free: int) -> str:
    if not waiting:
        return "No relation is past its threshold without a worker on it."
    shown = ", ".join(waiting[:5]) + (f" and {len(waiting) - 5} more" if len(waiting) > 5 else "")
    if free:
        return (
            f"Waiting: {shown}. {free} workers are free: the launcher sends one to each "
            "database at its next round (every autovacuum_naptime), and a worker takes the "
            "relations of its database one after another."
        )
    return f"Waiting: {shown}. Every worker is busy: they wait for one to finish."


def more_workers(ctx: Context, current: int, waiting: int) -> tuple[Recommendation | None, str]:
    """A worker per waiting relation, at most twice as many as now, within
    autovacuum_worker_slots on 18+ (the slots reserved at server start)."""
    target = current + min(waiting, current)
    slots = int(ctx.setting("autovacuum_worker_slots", 0)) if ctx.version >= 180000 else 0
    if slots:
        target = min(target, slots)
    if target <= current:
        return None, (
            f" autovacuum_max_workers already uses all {slots} autovacuum_worker_slots: raising "
            "those needs a restart."
        )
    rec = alter_system(
        "autovacuum_max_workers",
        str(target),
        version=ctx.version,
        impact=0.5,
        reason=(
            f"every one of the {current} workers is busy while {waiting} relations past their "
            "threshold wait. The workers split one cost budget (autovac_balance_cost in "
            "autovacuum.c): raise autovacuum_vacuum_cost_limit with them, or each goes slower"
        ),
    )
    return rec, ""


def _info(title: str, detail: str) -> Finding:
    return Finding(question="workers", severity="info", relation=None, title=title, detail=detail)
