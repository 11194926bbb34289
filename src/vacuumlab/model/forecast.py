"""From two snapshots to a simulation: each relation's thresholds, rates, size and cost settings
become a :class:`~vacuumlab.model.simulator.Subject`, the server's settings the
:class:`~vacuumlab.model.simulator.Launcher`, and the outcome a
:class:`~vacuumlab.records.simulation.Simulation`.

Rates come from ``model.rates`` (``n_dead_tup`` and the vacuum counts, never
``n_tup_upd + n_tup_del``); the transaction rate from the two snapshots' next xid.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field

from vacuumlab import __version__
from vacuumlab.errors import VacuumlabError
from vacuumlab.model import balance, forcing, rates, whatif
from vacuumlab.model import duration as work
from vacuumlab.model import thresholds as th
from vacuumlab.model.cost import CostSettings
from vacuumlab.model.simulator import Launcher, Outcome, Subject, Tally, simulate
from vacuumlab.records.simulation import RelationForecast, Simulation, WorkerTimeline
from vacuumlab.records.snapshot import Relation, Snapshot, Table

#: What the simulation takes as given; shown with every forecast.
ASSUMPTIONS = (
    "rates stay as measured between the two snapshots",
    "nothing holds the xmin horizon back: each vacuum removes the dead tuples it finds",
    "pages are in shared buffers; a vacuum reads and dirties each heap page that is not "
    "all-visible, and changes reach pages at random",
    "other databases' workers take no time; analyze-only visits are not simulated",
    "a normal vacuum leaves relfrozenxid where it was; an aggressive one brings its age back "
    "to vacuum_freeze_min_age",
)
_COST_DEFAULTS = {
    "vacuum_cost_page_hit": "1",
    "vacuum_cost_page_miss": "2",
    "vacuum_cost_page_dirty": "20",
    "vacuum_cost_limit": "200",
    "vacuum_cost_delay": "0",
    "autovacuum_vacuum_cost_limit": "-1",
    "autovacuum_vacuum_cost_delay": "2",
}


@dataclass(frozen=True, slots=True)
class Inputs:
    """What one simulation runs on, built once from two snapshots."""

    subjects: list[Subject]
    launcher: Launcher
    interval_s: float
    builder: _Builder | None = field(default=None, compare=False, repr=False)

    def with_tables_changed(self, changes: list[whatif.Change]) -> Inputs | None:
        """The same inputs with changes to tables' settings made: only those tables' subjects
        are built again. None when a change is server-wide (everything is built again then)."""
        if self.builder is None or any(c.table is None for c in changes):
            return None
        builder = self.builder
        changed = whatif.apply(builder.after, changes)
        names = {c.table for c in changes}
        fresh = {
            subject.label: subject
            for table in changed.tables
            if table.heap.qualified_name in names
            for rel in (table.heap, table.toast)
            if rel is not None
            for subject in (builder.subject(table, rel),)
        }
        subjects = [fresh.get(s.label, s) for s in self.subjects]
        return Inputs(subjects, self.launcher, self.interval_s, builder)


def inputs(before: Snapshot, after: Snapshot, changes: list[whatif.Change] | None = None) -> Inputs:
    """The subjects and the launcher of ``after``, with rates over the interval since
    ``before``, and with ``changes`` made to both."""
    seconds = (after.taken_at - before.taken_at).total_seconds()
    if seconds <= 0:
        raise VacuumlabError("the second snapshot must be taken after the first")
    if changes:
        after = whatif.apply(after, changes)
    server = th.server_settings(after)
    version = after.server.version_num
    base = CostSettings.for_autovacuum({**_COST_DEFAULTS, **server})
    earlier = {rel.oid: rel for t in before.tables for rel in (t.heap, t.toast) if rel is not None}
    build = _Builder(server, version, base, seconds, after, earlier)
    subjects = [
        build.subject(table, rel)
        for table in after.tables
        for rel in (table.heap, table.toast)
        if rel is not None
    ]
    launcher = _launcher(before, after, server, version, base, seconds)
    return Inputs(subjects, launcher, seconds, build)


def forecast(
    before: Snapshot,
    after: Snapshot,
    *,
    hours: float,
    changes: list[whatif.Change] | None = None,
) -> Simulation:
    """Simulate the autovacuums of the ``hours`` after ``after``."""
    if hours <= 0:
        raise VacuumlabError("--hours must be positive")
    given = inputs(before, after, changes)
    outcome = simulate(given.subjects, given.launcher, hours * 3600.0)
    return to_record(outcome, given, after, hours=hours, changes=changes or [])


def run(given: Inputs, hours: float) -> Outcome:
    return simulate(given.subjects, given.launcher, hours * 3600.0)


def to_record(
    outcome: Outcome, given: Inputs, after: Snapshot, *, hours: float, changes: list[whatif.Change]
) -> Simulation:
    active = outcome.active
    forecasts = [
        _forecast(s, outcome.tally(index))
        for index, s in enumerate(outcome.subjects)
        if (index in active and active[index].vacuums)
        or s.dead_per_second > 0
        or s.inserts_per_second > 0
    ]
    columns: list[tuple[list[str], list[float], list[float], list[bool]]] = [
        ([], [], [], []) for _ in range(given.launcher.workers)
    ]
    labels = [s.label for s in outcome.subjects]
    spans = outcome.columns
    rows = zip(spans.workers, spans.subjects, spans.starts, spans.ends, spans.forced, strict=True)
    for worker, subject, start, end, was_forced in rows:
        relations, starts, ends, forced = columns[worker]
        relations.append(labels[subject])
        starts.append(start)
        ends.append(end)
        forced.append(was_forced)
    timelines = [
        WorkerTimeline(worker=slot, relations=r, starts_s=s, ends_s=e, forced=f)
        for slot, (r, s, e, f) in enumerate(columns)
    ]
    return Simulation(
        vacuumlab_version=__version__,
        taken_at=after.taken_at,
        server=after.server,
        interval_s=given.interval_s,
        hours=hours,
        changes=[str(c) for c in changes],
        naptime_s=given.launcher.naptime_s,
        launch_every_s=given.launcher.launch_every_s,
        workers=given.launcher.workers,
        launches=outcome.launches,
        quiet=len(outcome.subjects) - len(forecasts),
        relations=forecasts,
        timelines=timelines,
        assumptions=list(ASSUMPTIONS),
    )


def _forecast(s: Subject, t: Tally) -> RelationForecast:
    starts = t.starts
    return RelationForecast.model_construct(
        relation=s.label,
        is_toast=s.is_toast,
        dead_per_second=s.dead_per_second,
        inserts_per_second=s.inserts_per_second,
        vacuums=t.vacuums,
        forced=t.forced,
        first_start_s=starts[0] if starts else None,
        mean_interval_s=t.mean_interval,
        mean_duration_s=statistics.fmean(t.durations) if t.durations else None,
        max_duration_s=max(t.durations) if t.durations else None,
        peak_dead=round(t.peak_dead),
        dead_at_start=round(s.dead),
        waited_s=t.waited,
        max_wait_s=t.max_wait,
    )


@dataclass(frozen=True, slots=True)
class _Settings:
    """What a relation's reloptions resolve to; most relations share the server's."""

    effective: th.Effective
    cost: CostSettings
    balanced: bool
    aggressive_age: float
    freeze_min_age: float


@dataclass(slots=True)
class _Builder:
    server: Mapping[str, str]
    version: int
    base: CostSettings
    seconds: float
    after: Snapshot
    earlier: Mapping[int, Relation]
    resolved: dict[tuple[tuple[str, str], ...], _Settings] = field(default_factory=dict)
    failsafe_age: float = field(init=False)

    def __post_init__(self) -> None:
        # The server's failsafe age: the same for every relation, computed once.
        self.failsafe_age = forcing.failsafe_age(self.server, version_num=self.version)

    def settings(self, options: Mapping[str, str]) -> _Settings:
        """Resolved once per distinct set of reloptions."""
        key = tuple(sorted(options.items()))
        found = self.resolved.get(key)
        if found is None:
            cost, balanced = balance.own_cost(self.base, options)
            found = self.resolved[key] = _Settings(
                effective=th.effective(self.server, options, version_num=self.version),
                cost=cost,
                balanced=balanced,
                aggressive_age=work.aggressive_ages(self.server, options)[0],
                freeze_min_age=_age(options, self.server, "freeze_min_age", 50_000_000),
            )
        return found

    def subject(self, table: Table, rel: Relation) -> Subject:
        is_toast = rel is table.toast
        resolved = self.settings(th.options_of(table, rel))
        eff, cost = resolved.effective, resolved.cost
        dead_rate, insert_rate, live_rate = self._rates(rel)
        block = self.after.server.block_size
        in_recovery = self.after.server.in_recovery
        pages = float(rel.heap_bytes // block if rel.heap_bytes is not None else rel.relpages)
        return Subject(
            label=f"{table.heap.qualified_name} (TOAST)" if is_toast else rel.qualified_name,
            is_toast=is_toast,
            order=rel.oid,
            enabled=eff.enabled and not in_recovery,
            vacuum_base=eff.vacuum_threshold,
            vacuum_scale=eff.vacuum_scale_factor,
            vacuum_cap=eff.vacuum_max_threshold,
            insert_base=eff.insert_threshold,
            insert_scale=eff.insert_scale_factor,
            unfrozen=th.unfrozen(rel, self.version),
            reltuples=max(rel.reltuples, 0.0),
            live_per_second=live_rate,
            dead=float(rel.n_dead_tup or 0),
            dead_per_second=dead_rate,
            inserted=float(rel.n_ins_since_vacuum or 0),
            inserts_per_second=insert_rate,
            xid_age=float(rel.frozenxid_age or 0),
            xid_limit=float("inf") if in_recovery else eff.freeze.xid,
            aggressive_age=resolved.aggressive_age,
            freeze_min_age=resolved.freeze_min_age,
            failsafe_age=self.failsafe_age,
            pages=pages,
            all_visible=float(min(rel.relallvisible, pages)),
            index_pages=float((rel.index_bytes or 0) // block),
            n_indexes=rel.n_indexes,
            page_hit=cost.page_hit,
            page_dirty=cost.page_dirty,
            own_limit=None if resolved.balanced else float(cost.limit),
            own_delay_ms=None if resolved.balanced else cost.delay_ms,
        )

    def _rates(self, rel: Relation) -> tuple[float, float, float]:
        """Dead tuples, inserts and live tuples per second; 0 where unknown."""
        before = self.earlier.get(rel.oid)
        if before is None:
            return 0.0, 0.0, 0.0
        found = rates.between(before, rel, self.seconds, self.after.taken_at)
        live = ((rel.n_live_tup or 0) - (before.n_live_tup or 0)) / self.seconds
        if found is None:
            return 0.0, 0.0, live
        return found.dead_per_second or 0.0, found.inserts_per_second or 0.0, live


def _launcher(
    before: Snapshot,
    after: Snapshot,
    server: Mapping[str, str],
    version: int,
    base: CostSettings,
    seconds: float,
) -> Launcher:
    xids = 0.0
    if before.xids is not None and after.xids is not None:
        xids = max(after.xids.next_xid - before.xids.next_xid, 0) / seconds
    databases = [d for d in after.databases if d.allow_connections]
    here = next((d for d in after.databases if d.name == after.server.database), None)
    freeze_max = forcing.setting(server, "autovacuum_freeze_max_age")
    return Launcher(
        naptime_s=_number(server, "autovacuum_naptime", 60.0),
        workers=balance.available_workers(server, version),
        databases=max(len(databases), 1),
        in_danger=here is not None and here.frozenxid_age > freeze_max,
        cost_limit=float(base.limit),
        cost_delay_ms=base.delay_ms,
        xids_per_second=xids,
    )


def _age(options: Mapping[str, str], server: Mapping[str, str], name: str, default: float) -> float:
    for value in (options.get(f"autovacuum_{name}"), server.get(f"vacuum_{name}")):
        try:
            if value is not None and float(value) >= 0:
                return float(value)
        except ValueError:
            continue
    return default


def _number(server: Mapping[str, str], name: str, default: float) -> float:
    try:
        return float(server[name])
    except (KeyError, ValueError):
        return default
