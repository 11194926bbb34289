"""How fast each relation gathers dead tuples and inserts, when autovacuum should next take
it, and how long that vacuum should take under the cost-based delay: the arithmetic behind
the timing and workers questions (their text is in timing.py and workers.py).

- Rates need two snapshots; they, and the time to the next threshold, come from the model
  (model/rates.py): dead tuples from ``n_dead_tup``, never ``n_tup_upd + n_tup_del``.
- The duration is the cost model's sleep (model/cost.py) for the pages the vacuum visits:
  the heap pages it reads (model/duration.py: all but runs of 32 or more all-visible pages,
  counted from the visibility map where pg_visibility allowed, else estimated from the
  changes since the last vacuum) and, unless the index-vacuuming bypass applies, every
  index page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

from vacuumlab.advise import toast as toast_options
from vacuumlab.advise.context import Context
from vacuumlab.errors import VacuumlabError
from vacuumlab.model import balance, charges
from vacuumlab.model import cost as cm
from vacuumlab.model import duration as vacuum_work
from vacuumlab.model import rates as rates_model
from vacuumlab.model.rates import Rates
from vacuumlab.model.thresholds import Thresholds
from vacuumlab.records.snapshot import Relation, Table

BYPASS_THRESHOLD_PAGES = vacuum_work.BYPASS_THRESHOLD_PAGES


@dataclass(frozen=True, slots=True)
class Duration:
    """What the next vacuum of a relation reads, and what throttling makes it sleep."""

    heap_pages: int
    index_pages: int
    index_scan: bool
    index_reason: str
    cost: float  # the best estimate (model.charges.vacuum_cost())
    cost_low: float  # every changed page found in shared buffers still dirty
    cost_high: float  # every changed page found clean
    missed: float  # the share of unchanged pages read in (model.cost.missed_share())
    cached: bool  # the pages in shared buffers counted by pg_buffercache, not estimated
    clean: float  # the share of changed pages found clean
    work_s: float  # unthrottled: model.cost.work_seconds(), as the simulator takes it
    settings: cm.CostSettings
    workers: int  # workers sharing the cost limit
    balanced: bool  # False: the relation has its own cost settings
    work: vacuum_work.VacuumWork  # the model's view: passes, aggressive, failsafe

    @property
    def throttled(self) -> bool:
        """The failsafe turns the cost-based delay off (lazy_check_wraparound_failsafe())."""
        return self.settings.delay_ms > 0 and not self.work.failsafe

    def seconds(self, cost: float) -> float:
        """The vacuum's length at ``cost``: its unthrottled work and its sleeps."""
        return self.work_s + cm.throttle_seconds(cost, self.settings, workers=self.workers)


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
        """How long the next vacuum takes, throttled: the best estimate."""
        d = self.duration
        return d.seconds(d.cost) if d is not None and d.throttled else None

    @property
    def active(self) -> bool:
        r = self.rates
        return r is not None and ((r.dead_per_second or 0) > 0 or (r.inserts_per_second or 0) > 0)


def quiet(t: Thresholds, rates: Rates | None) -> bool:
    """Whether nothing moves a relation toward autovacuum: no dead tuple, insert or change
    counted, no options of its own, no freeze limit passed, and, over an interval, nothing
    counted between the two snapshots (``model.rates.still()``). Its next vacuum is as far as
    it can be, and its status row would say nothing but its thresholds: at scale most
    relations (a tenant's idle tables), so the status table counts them instead of listing
    them, and their next vacuum is not priced."""
    if t.dead or t.inserted or t.modified or t.forced is not None or t.effective.overridden:
        return False
    return rates is None or not (
        rates.dead_per_second or rates.inserts_per_second or rates.live_per_second
    )


def table_rates(
    ctx: Context, *, every: bool = False
) -> dict[int, tuple[float | None, float | None, float | None]]:
    """oid -> (dead tuples per second, seconds until autovacuum should take it — the earliest,
    before up to one naptime for the launcher —, the next vacuum's estimated seconds). A
    :func:`quiet` relation has its rate alone, and its oid is in ``ctx.memo["quiet"]``; with
    ``every``, none is taken for quiet."""
    result: dict[int, tuple[float | None, float | None, float | None]] = {}
    still: set[int] = set()
    ctx.memo["quiet"] = still
    if "estimates" in ctx.memo:  # the questions needed them whole (rates: two snapshots)
        for e in estimates(ctx):
            dead = e.rates.dead_per_second if e.rates else None
            oid = e.thresholds.relation.oid
            if not every and quiet(e.thresholds, e.rates):
                still.add(oid)
                result[oid] = (dead, None, None)
            else:
                result[oid] = (dead, e.to_vacuum, e.vacuum_seconds)
        return result
    # The same figures without an Estimate and a Duration per relation: at 20,000 relations
    # building them was a third of the status rows' cost.
    by_oid = ctx.thresholds_by_oid
    costing = _costing(ctx)
    interval = ctx.later is not None  # one snapshot: no relation has rates
    for table in ctx.tables():
        for rel in (table.heap, table.toast):
            t = by_oid.get(rel.oid) if rel is not None else None
            if t is None:
                continue
            rates = relation_rates(ctx, t.relation) if interval else None
            if not every and quiet(t, rates):
                still.add(t.relation.oid)
                result[t.relation.oid] = (rates.dead_per_second if rates else None, None, None)
                continue
            to_vacuum, trigger = rates_model.to_vacuum(t, rates)
            seconds = None
            if costing is not None:
                dead = rates_model.dead_at_vacuum(t, rates, to_vacuum, trigger)
                w, settings, _balanced, workers = costing.cost(table, t, dead)
                if settings.delay_ms > 0 and not w.failsafe:  # Duration.throttled
                    pages, missed, clean = costing.charges(t.relation, w, to_vacuum, rates)
                    spent = charges.vacuum_cost(
                        w,
                        t.relation,
                        pages=pages,
                        dead=dead,
                        settings=settings,
                        missed=missed,
                        clean=clean,
                        cached=costing.cached.get(t.relation.oid),
                    )
                    work = charges.work_seconds(
                        w,
                        t.relation,
                        pages=pages,
                        dead=dead,
                        missed=missed,
                        clean=clean,
                        cached=costing.cached.get(t.relation.oid),
                    )
                    seconds = work + cm.throttle_seconds(spent, settings, workers=workers)
            dead = rates.dead_per_second if rates else None
            result[t.relation.oid] = (dead, to_vacuum, seconds)
    return result


def estimates(ctx: Context) -> list[Estimate]:
    """Every relation's estimate, computed once per advice: three questions read them."""
    if "estimates" not in ctx.memo:
        ctx.memo["estimates"] = _estimates(ctx)
    return cast(list[Estimate], ctx.memo["estimates"])


def _estimates(ctx: Context) -> list[Estimate]:
    by_oid = ctx.thresholds_by_oid
    found = []
    for table in ctx.tables():
        for rel in (table.heap, table.toast):
            t = by_oid.get(rel.oid) if rel is not None else None
            if t is not None:
                found.append(_estimate(ctx, table, t))
    return found


def autovacuum_cost(ctx: Context) -> cm.CostSettings | None:
    """The server's autovacuum cost settings, None when the snapshot lacks them."""
    if "cost" not in ctx.memo:
        try:
            ctx.memo["cost"] = cm.CostSettings.for_autovacuum(ctx.settings)
        except VacuumlabError:
            ctx.memo["cost"] = None
    return cast(cm.CostSettings | None, ctx.memo["cost"])


def _estimate(ctx: Context, table: Table, t: Thresholds) -> Estimate:
    rates = relation_rates(ctx, t.relation)
    to_vacuum, trigger = rates_model.to_vacuum(t, rates)
    dead_then = rates_model.dead_at_vacuum(t, rates, to_vacuum, trigger)
    return Estimate(
        thresholds=t,
        table=table,
        name=ctx.names[t.relation.oid],
        rates=rates,
        to_vacuum=to_vacuum,
        trigger=trigger,
        duration=_duration(ctx, table, t, dead_then, to_vacuum, rates),
    )


def relation_rates(ctx: Context, rel: Relation) -> Rates | None:
    """The model's rates of ``rel`` between the two snapshots (None without --interval)."""
    before = ctx.earlier(rel)
    if before is None or not ctx.seconds:
        return None
    return rates_model.between(before, rel, ctx.seconds, ctx.now.taken_at)


def _duration(
    ctx: Context,
    table: Table,
    t: Thresholds,
    dead: float,
    to_vacuum: float | None,
    rates: Rates | None,
) -> Duration | None:
    costing = _costing(ctx)
    if costing is None:
        return None
    w, settings, balanced, workers = costing.cost(table, t, dead)
    pages, missed, clean = costing.charges(t.relation, w, to_vacuum, rates)
    cached = costing.cached.get(t.relation.oid)

    def spent(share: float) -> float:
        return charges.vacuum_cost(
            w,
            t.relation,
            pages=pages,
            dead=dead,
            settings=settings,
            missed=missed,
            clean=share,
            cached=cached,
        )

    return Duration(
        heap_pages=w.heap_pages,
        index_pages=w.index_pages,
        index_scan=w.index_passes > 0,
        index_reason=w.index_reason,
        cost=spent(clean),
        cost_low=spent(0.0),
        cost_high=spent(1.0),
        missed=missed,
        cached=cached is not None,
        clean=clean,
        work_s=charges.work_seconds(
            w, t.relation, pages=pages, dead=dead, missed=missed, clean=clean, cached=cached
        ),
        settings=settings,
        workers=workers,
        balanced=balanced,
        work=w,
    )


_Resolved = tuple[cm.CostSettings, bool, vacuum_work.Limits, int]
_NO_OPTIONS: dict[str, str] = {}
_NO_KEY: frozenset[tuple[str, str]] = frozenset()
_Cost = tuple[vacuum_work.VacuumWork, cm.CostSettings, bool, int]


class _Costing:
    """What every relation's vacuum cost reads from the advice (the server's cost settings,
    block size, version) looked up once, and each set of options resolved once."""

    __slots__ = (
        "base",
        "block",
        "buffers",
        "cached",
        "checkpoint_s",
        "now",
        "resolved",
        "scanned",
        "server",
        "version",
        "workers",
    )

    def __init__(self, ctx: Context, base: cm.CostSettings) -> None:
        self.base = base
        self.block = ctx.now.server.block_size
        # pg_settings gives shared_buffers in blocks and checkpoint_timeout in seconds.
        buffers = ctx.setting("shared_buffers", -1.0)
        self.buffers = buffers if buffers > 0 else None
        self.checkpoint_s = ctx.setting("checkpoint_timeout", cm.CHECKPOINT_S)
        self.now = ctx.now.taken_at
        self.scanned = ctx.scanned
        self.cached = ctx.cached
        self.server = ctx.settings
        self.version = ctx.version
        self.workers = max(1, ctx.balanced_autovacuums)  # for relations in the balance
        self.resolved: dict[frozenset[tuple[str, str]], _Resolved] = {}

    def cost(self, table: Table, t: Thresholds, dead: float) -> _Cost:
        """The next vacuum's work, its cost settings, whether it joins the balance and the
        workers sharing its limit."""
        rel = t.relation
        if rel.reloptions or table.heap.reloptions:
            options = toast_options.autovacuum_options(table, is_toast=t.is_toast)
            key = frozenset(options.items())
        else:
            options, key = _NO_OPTIONS, _NO_KEY  # most relations: no options, theirs or table's
        found = self.resolved.get(key)
        if found is None:
            found = self.resolved[key] = self._resolve(options)
        settings, balanced, limits, workers = found
        block = self.block
        w = vacuum_work.work(
            rel,
            dead=dead,
            pages=self.pages(rel),
            index_pages=(rel.index_bytes or 0) // block,
            server=self.server,
            options=options,
            version_num=self.version,
            resolved=limits,
            scanned=self.scanned.get(rel.oid),
        )
        return w, settings, balanced, workers

    def pages(self, rel: Relation) -> int:
        return rel.heap_bytes // self.block if rel.heap_bytes is not None else rel.relpages

    def charges(
        self, rel: Relation, w: vacuum_work.VacuumWork, to_vacuum: float | None, rates: Rates | None
    ) -> tuple[int, float, float]:
        """The relation's pages, the share of them the vacuum reads in (its heap and indexes
        against shared_buffers), and the share of the changed pages it finds in shared
        buffers that are clean: the changes go back to the last vacuum, or, before the
        first, as long as the dead tuples took to accrue at their rate."""
        pages = self.pages(rel)
        found = self.cached.get(rel.oid)
        if found is not None:  # counted: the share of its pages not in shared buffers
            size = pages + w.index_pages
            missed = 1.0 - min((found.heap + found.indexes) / size, 1.0) if size > 0 else 0.0
        else:
            missed = cm.missed_share(pages + w.index_pages, self.buffers)
        last = rel.last_autovacuum
        if rel.last_vacuum is not None and (last is None or rel.last_vacuum > last):
            last = rel.last_vacuum
        ahead = to_vacuum or 0.0
        if last is not None:
            age = (self.now - last).total_seconds() + ahead
        elif rates is not None and rates.dead_per_second and rates.dead_per_second > 0:
            age = (rel.n_dead_tup or 0) / rates.dead_per_second + ahead
        else:
            age = math.inf
        return pages, missed, cm.clean_share(age, self.checkpoint_s)

    def _resolve(self, options: dict[str, str]) -> _Resolved:
        """A relation's cost settings, whether it joins the balance, the model's limits and
        the workers sharing its cost limit: they depend on its options alone, so relations
        with the same options (most have none) share them."""
        settings, balanced = balance.own_cost(self.base, options)
        limits = vacuum_work.limits(self.server, options, self.version)
        return settings, balanced, limits, self.workers if balanced else 1


def _costing(ctx: Context) -> _Costing | None:
    """None when the snapshot lacks the server's cost settings: no duration estimates."""
    if "costing" not in ctx.memo:
        base = autovacuum_cost(ctx)
        ctx.memo["costing"] = None if base is None else _Costing(ctx, base)
    return cast(_Costing | None, ctx.memo["costing"])
