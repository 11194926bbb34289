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
from typing import Literal

from vacuumlab import __version__
from vacuumlab.errors import VacuumlabError
from vacuumlab.model import balance, forcing, rates, whatif
from vacuumlab.model import duration as work
from vacuumlab.model import thresholds as th
from vacuumlab.model.cost import CostSettings
from vacuumlab.model.pages import page_changes
from vacuumlab.model.simulator import Launcher, Outcome, Subject, Tally, dead_after_vacuum, simulate
from vacuumlab.model.simulator.records import ClusterDatabase
from vacuumlab.records.simulation import RelationForecast, Simulation, WorkerTimeline
from vacuumlab.records.snapshot import Database, Relation, Snapshot, Table

#: What the simulation of one database takes as given of the others.
_OTHERS = "other databases' workers take no time; analyze-only visits are not simulated"
#: What the simulation takes as given; shown with every forecast.
ASSUMPTIONS = (
    "rates stay as measured between the two snapshots",
    "nothing holds the xmin horizon back: each vacuum removes the dead tuples it finds",
    "pages are in shared buffers; a vacuum reads and dirties each heap page that is not "
    "all-visible, and runs of fewer than 32 all-visible pages; inserts fill new pages at the "
    "end, updates and deletes reach pages at random unless the table is append-mostly",
    _OTHERS,
    "an aggressive vacuum brings relfrozenxid's age back to vacuum_freeze_min_age (the most "
    "it can be), and so does a normal one from PostgreSQL 15 unless it skips an all-visible "
    "page that is not all-frozen; before 18 no page is known to be all-frozen",
)
#: The same for every database of a server simulated together (advise --all-databases).
CLUSTER_ASSUMPTIONS = tuple(
    "every database read twice is simulated with its relations, one launcher, worker slots "
    "and cost balance for them all; a database not read (a template, one the role may not "
    "connect to) has nothing to vacuum; analyze-only visits are not simulated"
    if assumption == _OTHERS
    else assumption
    for assumption in ASSUMPTIONS
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


def cluster_databases(given: Mapping[str, Inputs], listed: list[Database]) -> list[ClusterDatabase]:
    """The databases of the launcher's round for simulate_cluster(): ``listed`` (a snapshot's
    pg_database rows) that accept connections, each with its ages and, where ``given`` has
    its inputs, its relations; one not read has none. Then any of ``given`` not listed."""
    names = {d.name for d in listed}
    found = [
        ClusterDatabase(d.name, given[d.name].subjects if d.name in given else [],
                        d.frozenxid_age, d.minmxid_age)
        for d in listed
        if d.allow_connections or d.name in given
    ]  # fmt: skip
    return found + [ClusterDatabase(n, i.subjects) for n, i in given.items() if n not in names]


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


def index_of(outcome: Outcome, label: str) -> int | None:
    """Where the relation labelled ``label`` stands among the outcome's subjects."""
    return next((i for i, s in enumerate(outcome.subjects) if s.label == label), None)


def first_ends(outcome: Outcome, indexes: list[int]) -> dict[int, float]:
    """When the first vacuum of each of ``indexes`` ended, for those vacuumed in the run."""
    found: dict[int, float] = {}
    wanted = set(indexes)
    for subject, end in zip(outcome.columns.subjects, outcome.columns.ends, strict=True):
        if subject in wanted and subject not in found:
            found[subject] = end  # the columns are in the order the vacuums ended
    return found


def dead_between(outcome: Outcome, index: int, start: float, end: float) -> float:
    """``n_dead_tup`` of ``subjects[index]`` at its highest from ``start`` to ``end`` seconds
    into the run, as the simulator counts it: growing at its rate from the snapshot's count,
    and down to what is left when a vacuum ends (``dead_after_vacuum()``, from 14). The
    highest is just before a vacuum ends, or at either end of the stretch, where a window
    sampled at 1 Hz sees it too."""
    subject = outcome.subjects[index]
    rate, level, since = subject.dead_per_second, subject.dead, 0.0
    seen: list[float] = []  # the count at ``start``, then just before each vacuum ends
    columns = outcome.columns
    for who, began, ended in zip(columns.subjects, columns.starts, columns.ends, strict=True):
        if who != index or ended > end:
            continue
        if ended > start:
            if not seen:
                seen.append(level + rate * (start - since))
            seen.append(level + rate * (ended - since))
        level, since = dead_after_vacuum(rate, ended - began), ended
    if not seen:
        seen.append(level + rate * (start - since))
    return max(*seen, level + rate * (end - since))


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
        waited_full_s=t.waited_full,
    )


@dataclass(frozen=True, slots=True)
class _Settings:
    """What a relation's reloptions resolve to; most relations share the server's."""

    effective: th.Effective
    cost: CostSettings
    balanced: bool
    aggressive_age: float
    freeze_min_age: float
    mxid_aggressive_age: float
    mxid_freeze_min_age: float


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
    mxid_failsafe_age: float = field(init=False)
    here: Database | None = field(init=False)

    def __post_init__(self) -> None:
        name = self.after.server.database
        self.here = next((d for d in self.after.databases if d.name == name), None)
        # The server's failsafe ages: the same for every relation, computed once.
        self.failsafe_age = forcing.failsafe_age(self.server, version_num=self.version)
        self.mxid_failsafe_age = forcing.failsafe_age(
            self.server, multixact=True, version_num=self.version
        )

    def settings(self, options: Mapping[str, str]) -> _Settings:
        """Resolved once per distinct set of reloptions."""
        key = tuple(sorted(options.items()))
        found = self.resolved.get(key)
        if found is None:
            cost, balanced = balance.own_cost(self.base, options)
            aggressive, mxid_aggressive = work.aggressive_ages(self.server, options)
            found = self.resolved[key] = _Settings(
                effective=th.effective(self.server, options, version_num=self.version),
                cost=cost,
                balanced=balanced,
                aggressive_age=aggressive,
                # vacuum_get_cutoffs() (vacuum.c) caps each at half the forcing limit.
                freeze_min_age=min(
                    _age(options, self.server, "freeze_min_age", 50_000_000),
                    forcing.setting(self.server, "autovacuum_freeze_max_age") / 2,
                ),
                mxid_aggressive_age=mxid_aggressive,
                mxid_freeze_min_age=min(
                    _age(options, self.server, "multixact_freeze_min_age", 5_000_000),
                    forcing.member_freeze_threshold(
                        forcing.setting(self.server, "autovacuum_multixact_freeze_max_age")
                    )
                    / 2,
                ),
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
            position=rel.catalog_position,
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
            xid_limit=float("inf") if in_recovery else self._limit(eff, rel, "xid"),
            aggressive_age=resolved.aggressive_age,
            freeze_min_age=resolved.freeze_min_age,
            failsafe_age=self.failsafe_age,
            pages=pages,
            all_visible=float(min(rel.relallvisible, pages)),
            all_frozen=float(min(rel.relallfrozen or 0, rel.relallvisible, pages)),
            # Member space is not collected (PostgreSQL 13-18 expose no member count to SQL):
            # the limit is the setting's, as forcing.member_freeze_threshold() gives it
            # without members.
            mxid_age=float(rel.minmxid_age or 0),
            mxid_limit=float("inf") if in_recovery else self._limit(eff, rel, "mxid"),
            mxid_aggressive_age=resolved.mxid_aggressive_age,
            mxid_freeze_min_age=resolved.mxid_freeze_min_age,
            mxid_failsafe_age=self.mxid_failsafe_age,
            counted_pages=float(rel.relpages),
            touched=page_changes(rel).touched,
            tuples_per_page=rel.reltuples / rel.relpages
            if rel.relpages and rel.reltuples > 0
            else 1.0,
            index_pages=float((rel.index_bytes or 0) // block),
            n_indexes=rel.n_indexes,
            page_hit=cost.page_hit,
            page_dirty=cost.page_dirty,
            own_limit=None if resolved.balanced else float(cost.limit),
            own_delay_ms=None if resolved.balanced else cost.delay_ms,
        )

    def _limit(self, eff: th.Effective, rel: Relation, kind: Literal["xid", "mxid"]) -> float:
        """The age past which the relation is forced. With autovacuum off (or track_counts)
        its own limit applies only once the postmaster sends emergency workers, when the
        database's age passes the server's limit (forcing.emergency()): both ages grow with
        the same ids, so that moment is the relation's age plus what the database lacks."""
        own = eff.freeze.xid if kind == "xid" else eff.freeze.mxid
        if eff.active or self.here is None:
            return own
        if kind == "xid":
            server = forcing.setting(self.server, "autovacuum_freeze_max_age")
            age, here = rel.frozenxid_age, self.here.frozenxid_age
        else:
            server = forcing.member_freeze_threshold(
                forcing.setting(self.server, "autovacuum_multixact_freeze_max_age")
            )
            age, here = rel.minmxid_age, self.here.minmxid_age
        return max(own, (age or 0) + server - here)

    def _rates(self, rel: Relation) -> tuple[float, float, float]:
        """Dead tuples, inserts and live tuples per second; 0 where unknown."""
        before = self.earlier.get(rel.oid)
        if before is None:
            return 0.0, 0.0, 0.0
        found = rates.between(before, rel, self.seconds, self.after.taken_at)
        if found is None:
            return 0.0, 0.0, 0.0
        dead, inserts, live = found.dead_per_second, found.inserts_per_second, found.live_per_second
        return dead or 0.0, inserts or 0.0, live or 0.0


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
    mxids = _multixact_rate(before, after, seconds)
    return Launcher(
        naptime_s=_number(server, "autovacuum_naptime", 60.0),
        workers=balance.available_workers(server, version),
        databases=max(len(databases), 1),
        in_danger=forcing.emergency(here, server) is not None,
        danger_in_s=_danger_in(here, server, xids, mxids),
        cost_limit=float(base.limit),
        cost_delay_ms=base.delay_ms,
        xids_per_second=xids,
        mxids_per_second=mxids,
        normal_advances=version >= 150000,
        prunes_during=version >= 140000,
        # Read when several databases are simulated together (simulate_cluster()).
        freeze_max_age=forcing.setting(server, "autovacuum_freeze_max_age"),
        multixact_freeze_max_age=forcing.member_freeze_threshold(
            forcing.setting(server, "autovacuum_multixact_freeze_max_age")
        ),
    )


def _danger_in(
    here: Database | None, server: Mapping[str, str], xids: float, mxids: float
) -> float | None:
    """Seconds until the database's datfrozenxid or datminmxid age passes the server's limit
    (the launcher's do_start_worker() then favours it), at the measured rates; None if
    neither rate brings it there. Its age is taken to stay the oldest relation's: a vacuum
    that moves datfrozenxid back is not followed."""
    if here is None:
        return None
    xid_limit = forcing.setting(server, "autovacuum_freeze_max_age")
    mxid_limit = forcing.member_freeze_threshold(
        forcing.setting(server, "autovacuum_multixact_freeze_max_age")
    )
    times = [
        (limit - age) / rate
        for limit, age, rate in (
            (xid_limit, here.frozenxid_age, xids),
            (mxid_limit, here.minmxid_age, mxids),
        )
        if rate > 0
    ]
    return max(min(times), 0.0) if times else None


def _multixact_rate(before: Snapshot, after: Snapshot, seconds: float) -> float:
    """Multixact ids used per second. The snapshot has no next multixact id, but every
    relminmxid and datminmxid that no vacuum moved ages by exactly the ids used: the largest
    growth of any of them is the rate (one that a vacuum moved grows less, or shrinks)."""
    then: dict[tuple[str, str | int], int] = {
        ("db", d.name): d.minmxid_age for d in before.databases
    }
    then |= {
        ("rel", rel.oid): rel.minmxid_age
        for t in before.tables
        for rel in (t.heap, t.toast)
        if rel is not None and rel.minmxid_age is not None
    }
    now: dict[tuple[str, str | int], int] = {("db", d.name): d.minmxid_age for d in after.databases}
    now |= {
        ("rel", rel.oid): rel.minmxid_age
        for t in after.tables
        for rel in (t.heap, t.toast)
        if rel is not None and rel.minmxid_age is not None
    }
    growth = max((age - then[key] for key, age in now.items() if key in then), default=0)
    return max(growth, 0) / seconds


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
