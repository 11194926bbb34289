"""When and how long: how fast each relation gathers dead tuples and inserts, when autovacuum
should next take it, and how long that vacuum should take under the cost-based delay.

- Rates need two snapshots. Dead tuples per second come from ``n_dead_tup`` when no vacuum ran
  in between, else from ``n_tup_upd + n_tup_del`` (each update or delete leaves one dead
  version; pgstat_relation.c); inserts per second from ``n_tup_ins``.
- A relation is vacuumed once it passes a threshold (model/thresholds.py) and the launcher
  next sends a worker to its database, at most ``autovacuum_naptime`` later (the launcher
  visits every database once per naptime: launcher_determine_sleep() in autovacuum.c).
- The duration is the cost model's sleep (model/cost.py) for the pages the vacuum visits:
  the heap pages that are not all-visible (the visibility map lets vacuum skip the others;
  vacuumlazy.c) and, unless the index-vacuuming bypass applies, every index page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from vacuumlab.advise import toast as toast_options
from vacuumlab.advise.context import Context, alter_system, alter_table, label
from vacuumlab.errors import VacuumlabError
from vacuumlab.model import cost as cm
from vacuumlab.model.thresholds import Thresholds
from vacuumlab.records.advice import Finding, Recommendation, Severity, Value
from vacuumlab.records.snapshot import Relation, Table

#: lazy_vacuum() in vacuumlazy.c (14+) skips index vacuuming when fewer than this share of
#: the heap's pages hold dead items (and those take under 32 MB).
BYPASS_THRESHOLD_PAGES = 0.02
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
    "pages found in shared buffers (each read from disk adds vacuum_cost_page_miss); each heap "
    "page that is not all-visible visited once (runs of fewer than 32 all-visible pages are "
    "read too: SKIP_PAGES_THRESHOLD in vacuumlazy.c); every index page read once when index "
    "vacuuming runs; only the throttled sleep is counted, the work itself adds to it"
)
_NO_INTERVAL = "run with --interval 60s for rates"
_KIND = {"dead tuples": "vacuum", "inserts": "insert"}


@dataclass(frozen=True, slots=True)
class Rates:
    """Per second over the interval between the two snapshots; None when not reported."""

    dead_per_second: float | None
    inserts_per_second: float | None
    dead_source: str | None


@dataclass(frozen=True, slots=True)
class Duration:
    """What the next vacuum of a relation reads, and what throttling makes it sleep."""

    heap_pages: int
    index_pages: int
    index_scan: bool
    index_reason: str
    cost_clean: float  # every page visited costs vacuum_cost_page_hit
    cost_dirtied: float  # every page visited costs hit + dirty
    settings: cm.CostSettings
    workers: int  # workers sharing the cost limit
    balanced: bool  # False: the relation has its own cost settings

    @property
    def throttled(self) -> bool:
        return self.settings.delay_ms > 0

    def seconds(self, cost: float) -> float:
        return cm.throttle_seconds(cost, self.settings, workers=self.workers)


@dataclass(frozen=True, slots=True)
class Estimate:
    """One relation: its rates, when autovacuum should take it and how long that takes."""

    thresholds: Thresholds
    table: Table
    name: str
    rates: Rates | None
    to_vacuum: float | None  # seconds until it passes a threshold; 0 once past
    trigger: str | None
    duration: Duration | None

    @property
    def cycle(self) -> float | None:
        """Seconds the relation takes to gather a whole vacuum threshold of dead tuples."""
        rate = self.rates.dead_per_second if self.rates else None
        enabled = self.thresholds.effective.enabled
        if not rate or rate <= 0 or not enabled or self.thresholds.vacuum <= 0:
            return None
        return self.thresholds.vacuum / rate

    @property
    def vacuum_seconds(self) -> float | None:
        """The throttled sleep of the next vacuum, every visited page dirtied."""
        d = self.duration
        return d.seconds(d.cost_dirtied) if d is not None and d.throttled else None

    @property
    def active(self) -> bool:
        r = self.rates
        return r is not None and ((r.dead_per_second or 0) > 0 or (r.inserts_per_second or 0) > 0)


# -- the module's API ---------------------------------------------------------------------------


def findings(ctx: Context) -> list[Finding]:
    if ctx.later is None or not ctx.seconds or ctx.seconds <= 0:
        return [_no_interval()]
    active = [e for e in estimates(ctx) if e.active]
    if not active:
        return [_quiet(ctx.seconds)]
    naptime = ctx.setting("autovacuum_naptime", 60)
    fastest = _fastest_queue(active, naptime)
    return [_finding(ctx, e, naptime, with_naptime=e is fastest) for e in active]


def table_rates(ctx: Context) -> dict[int, tuple[float | None, float | None, float | None]]:
    """oid -> (dead tuples per second, seconds until autovacuum should take it — the earliest,
    before up to one naptime for the launcher —, the next vacuum's estimated seconds)."""
    result: dict[int, tuple[float | None, float | None, float | None]] = {}
    for e in estimates(ctx):
        dead = e.rates.dead_per_second if e.rates else None
        result[e.thresholds.relation.oid] = (dead, e.to_vacuum, e.vacuum_seconds)
    return result


def estimates(ctx: Context) -> list[Estimate]:
    by_oid = {t.relation.oid: t for t in ctx.thresholds}
    found = []
    for table in ctx.tables():
        for rel in (table.heap, table.toast):
            t = by_oid.get(rel.oid) if rel is not None else None
            if t is not None:
                found.append(_estimate(ctx, table, t))
    return found


def running_autovacuums(ctx: Context) -> int:
    return sum(1 for v in ctx.now.vacuums if v.is_autovacuum)


def autovacuum_cost(ctx: Context) -> cm.CostSettings | None:
    """The server's autovacuum cost settings, None when the snapshot lacks them."""
    try:
        return cm.CostSettings.for_autovacuum(ctx.settings)
    except VacuumlabError:
        return None


def duration_text(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def rate_text(per_second: float) -> str:
    return f"{per_second:,.1f}/s" if per_second < 100 else f"{per_second:,.0f}/s"


# -- estimating ---------------------------------------------------------------------------------


def _estimate(ctx: Context, table: Table, t: Thresholds) -> Estimate:
    rates = relation_rates(ctx, t.relation)
    to_vacuum, trigger = _to_vacuum(t, rates)
    dead_then = _dead_at_vacuum(t, rates, to_vacuum, trigger)
    return Estimate(
        thresholds=t,
        table=table,
        name=label(t.relation, table.heap),
        rates=rates,
        to_vacuum=to_vacuum,
        trigger=trigger,
        duration=_duration(ctx, table, t, dead_then),
    )


def relation_rates(ctx: Context, rel: Relation) -> Rates | None:
    seconds = ctx.seconds
    before = ctx.earlier(rel)
    if before is None or not seconds or seconds <= 0:
        return None
    dead = _dead_rate(before, rel, seconds)
    inserts = _delta(before.n_tup_ins, rel.n_tup_ins)
    return Rates(
        dead_per_second=dead[0] if dead else None,
        inserts_per_second=None if inserts is None else inserts / seconds,
        dead_source=dead[1] if dead else None,
    )


def _dead_rate(before: Relation, after: Relation, seconds: float) -> tuple[float, str] | None:
    """Net growth of n_dead_tup when nothing vacuumed the relation in between; otherwise every
    dead version made (updates + deletes), since the vacuum reset the count."""
    vacuumed = _vacuums(after) != _vacuums(before)
    if not vacuumed and before.n_dead_tup is not None and after.n_dead_tup is not None:
        return max(after.n_dead_tup - before.n_dead_tup, 0) / seconds, "n_dead_tup"
    updates = _delta(before.n_tup_upd, after.n_tup_upd)
    deletes = _delta(before.n_tup_del, after.n_tup_del)
    if updates is None or deletes is None:
        return None
    return (updates + deletes) / seconds, "n_tup_upd + n_tup_del"


def _vacuums(rel: Relation) -> int:
    return (rel.vacuum_count or 0) + (rel.autovacuum_count or 0)


def _delta(before: int | None, after: int | None) -> int | None:
    """Growth of a cumulative counter; None when unknown or reset in between."""
    if before is None or after is None or after < before:
        return None
    return after - before


def _to_vacuum(t: Thresholds, rates: Rates | None) -> tuple[float | None, str | None]:
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


def _dead_at_vacuum(
    t: Thresholds, rates: Rates | None, to_vacuum: float | None, trigger: str | None
) -> float:
    """Dead tuples when the vacuum starts: the threshold, or what accrues until the inserts
    trigger it."""
    if trigger == "inserts" and rates is not None and to_vacuum is not None:
        return t.dead + (rates.dead_per_second or 0) * to_vacuum
    if trigger == "past its threshold":
        return float(t.dead)
    return max(t.vacuum, float(t.dead))


def _duration(ctx: Context, table: Table, t: Thresholds, dead: float) -> Duration | None:
    base = autovacuum_cost(ctx)
    if base is None:
        return None
    options = toast_options.autovacuum_options(table, is_toast=t.is_toast)
    settings, balanced = _own_cost(base, options)
    rel = t.relation
    block = ctx.now.server.block_size
    pages = rel.heap_bytes // block if rel.heap_bytes is not None else rel.relpages
    heap_pages = max(pages - min(rel.relallvisible, pages), 0)
    index_pages = (rel.index_bytes or 0) // block
    scan, reason = _index_scan(rel, dead, pages, ctx.version)
    visited = heap_pages + (index_pages if scan else 0)
    return Duration(
        heap_pages=heap_pages,
        index_pages=index_pages,
        index_scan=scan,
        index_reason=reason,
        cost_clean=visited * settings.page_hit,
        cost_dirtied=visited * (settings.page_hit + settings.page_dirty),
        settings=settings,
        workers=max(1, running_autovacuums(ctx)) if balanced else 1,
        balanced=balanced,
    )


def _own_cost(base: cm.CostSettings, options: dict[str, str]) -> tuple[cm.CostSettings, bool]:
    """A relation's own cost limit (> 0) or delay (>= 0) replaces the server's and takes it out
    of the balancing (table_recheck_autovac() sets at_dobalance in autovacuum.c)."""
    limit = _number(options.get("autovacuum_vacuum_cost_limit"))
    delay = _number(options.get("autovacuum_vacuum_cost_delay"))
    own_limit = limit is not None and limit > 0 and limit.is_integer()
    own_delay = delay is not None and delay >= 0
    settings = replace(
        base,
        limit=int(limit) if own_limit and limit is not None else base.limit,
        delay_ms=delay if own_delay and delay is not None else base.delay_ms,
    )
    return settings, not (own_limit or own_delay)


def _index_scan(rel: Relation, dead: float, pages: int, version: int) -> tuple[bool, str]:
    """Whether the next vacuum reads every index page (lazy_vacuum() in vacuumlazy.c)."""
    if rel.n_indexes == 0:
        return False, "no indexes"
    cleanup = rel.reloptions.get("vacuum_index_cleanup", "auto").lower()
    if cleanup in ("off", "false", "no", "0"):
        return False, "vacuum_index_cleanup is off"
    if version < 140000 or cleanup in ("on", "true", "yes", "1"):
        return True, "index vacuuming is never bypassed here"
    if dead < BYPASS_THRESHOLD_PAGES * pages:
        return False, (
            f"bypassed: {dead:,.0f} dead tuples can fill fewer than 2 % of {pages:,} pages"
        )
    return True, "dead tuples may sit on 2 % of the pages or more: no bypass assumed"


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


# -- findings -----------------------------------------------------------------------------------


def _finding(ctx: Context, e: Estimate, naptime: float, *, with_naptime: bool) -> Finding:
    slow = _slow(e)
    recommendations = _faster_vacuum(ctx, e) if slow else []
    if with_naptime:
        recommendations.append(_naptime(ctx, e, naptime))
    severity: Severity = "warning" if slow or with_naptime else "info"
    return Finding(
        question="timing",
        severity=severity,
        relation=e.name,
        title=_title(e, naptime),
        detail=_detail(e, naptime, slow=slow),
        evidence=_evidence(e, naptime),
        recommendations=recommendations,
    )


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


def _title(e: Estimate, naptime: float) -> str:
    rate = e.rates.dead_per_second if e.rates else None
    if e.trigger == "autovacuum is off":
        title = f"autovacuum is off for it; dead tuples grow by {rate_text(rate or 0)}"
    elif e.to_vacuum == 0:
        title = f"past its threshold: autovacuum is due within {duration_text(naptime)}"
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
    pages = f"{d.heap_pages:,} heap pages" + (
        f" and {d.index_pages:,} index pages" if d.index_scan else ""
    )
    if not d.throttled:
        return f"The vacuum reads {pages} unthrottled (cost delay 0): its I/O sets the pace."
    clean = duration_text(d.seconds(d.cost_clean))
    dirtied = duration_text(d.seconds(d.cost_dirtied))
    share = f", shared by {d.workers} workers" if d.workers > 1 else ""
    return (
        f"The vacuum visits {pages} (index pass: {d.index_reason}). At a cost limit of "
        f"{d.settings.limit}{share} and a {d.settings.delay_ms:g} ms delay it sleeps "
        f"{clean} if every page stays clean and {dirtied} if it dirties every one."
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


def _duration_evidence(d: Duration) -> dict[str, Value]:
    return {
        "heap_pages_to_visit": d.heap_pages,
        "index_pages": d.index_pages,
        "index_scan": d.index_scan,
        "index_scan_reason": d.index_reason,
        "cost_clean": d.cost_clean,
        "cost_dirtied": d.cost_dirtied,
        "cost_limit": d.settings.limit,
        "cost_delay_ms": d.settings.delay_ms,
        "workers_sharing_limit": d.workers,
        "own_cost_settings": not d.balanced,
        "estimated_vacuum_seconds": _round(d.seconds(d.cost_dirtied)) if d.throttled else None,
        "estimated_vacuum_seconds_clean": _round(d.seconds(d.cost_clean)) if d.throttled else None,
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
    needed = d.cost_dirtied * d.settings.delay_ms / 1000 / (cycle / 2)
    limit = max(100, math.ceil(needed / 100) * 100)
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
        impact=min(1.0, 0.4 + 0.1 * (e.vacuum_seconds or 0) / cycle),
        evidence=CHURN_MEASUREMENT,
        reason=(
            f"a vacuum of {e.name} sleeps about {duration_text(e.vacuum_seconds or 0)} but the "
            f"relation gathers a threshold of dead tuples every {duration_text(cycle)}; with "
            f"{setting} = {value} of its own it finishes within half of that, and it leaves the "
            "shared budget to the other workers (autovac_balance_cost in autovacuum.c)"
        ),
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
            "needs two snapshots some time apart. The table status still shows each "
            "relation's estimated vacuum duration."
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
