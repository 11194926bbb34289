"""From snapshots to one refresh of the live view. Pure, records and model only: the terminal
view, the exporter and the tests build the same picture from the same snapshots.

- Thresholds and their progress are the model's (model/thresholds.py), as the advisor's are.
- Rates need the previous snapshot (model/rates.py); without one a refresh shows no rates
  and no predicted starts.
- The queue is in the order autovacuum would take the relations: those being vacuumed, then
  those that need a vacuum now in a worker's order (heaps in ``pg_class`` order, then TOAST
  relations: do_autovacuum() in autovacuum.c), then the others by the start the simulator
  predicts (model/simulator/) and by how close they are to a threshold.
- The simulation leaves out relations that cannot be vacuumed within its window (nothing due,
  no dead tuples or inserts coming, no freeze limit within reach): they take no worker, so
  the others' starts are the same without them, and 10,000 quiet tables cost nothing.
- The counts (relations, those due, dead tuples, those past each threshold, the oldest ages)
  cover every relation, those a :class:`Pick` leaves out too: the exporter's per-table
  series stop at ``--max-tables``, its totals do not.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from pydantic import TypeAdapter

from vacuumlab.model import forecast, rates, time_left
from vacuumlab.model import thresholds as th
from vacuumlab.model.simulator import first_starts
from vacuumlab.records.live import LiveView, PastThreshold, RunningVacuum, TableLive
from vacuumlab.records.snapshot import Relation, Snapshot, Table, VacuumProgress
from vacuumlab.watch import cluster
from vacuumlab.watch.quiet import QUIET_FROM, Quiet, older, split, xid_rate

#: How far ahead the simulator looks for each relation's next vacuum.
HORIZON_S: Final = 3600.0
_ROWS: Final = TypeAdapter(list[TableLive])
#: The sort key of the queue (see queue_key).
Key = tuple[int, float, bool, float, int]


@dataclass(frozen=True, slots=True)
class Pick:
    """Which relations get a row: those of ``schemas`` (every schema when empty), the first
    ``limit`` of them in queue order (all when None). The view's counts cover them all."""

    schemas: frozenset[str] = frozenset()
    limit: int | None = None

    def wants(self, schema: str) -> bool:
        return not self.schemas or schema in self.schemas


@dataclass(frozen=True, slots=True)
class Now:
    """One refresh's inputs, worked out once: the model's view of the current snapshot."""

    previous: Snapshot | None
    current: Snapshot
    server: dict[str, str]
    standings: list[th.Standing]  # every relation ranked, in order (th.standings())
    running: set[int]  # the relations of this database being vacuumed
    seconds: float | None  # since the previous snapshot
    quiet: Quiet  # the relations counted, not ranked (watch/quiet.py)

    @property
    def version(self) -> int:
        return self.current.server.version_num

    def standing_of(self, table: Table) -> list[th.Standing]:
        return th.standings([table], self.server, self.version, in_recovery=self.in_recovery)

    @property
    def in_recovery(self) -> bool:
        return self.current.server.in_recovery

    def earlier(self) -> Mapping[int, Relation]:
        if self.previous is None or self.seconds is None:
            return {}
        return relations_of(self.previous)

    def thresholds(self, standing: th.Standing) -> th.Thresholds:
        """The model's full record of one relation (what of_tables() gives it)."""
        table, rel, settings, _, _ = standing
        return th.thresholds(
            rel,
            settings,
            is_toast=rel is table.toast,
            version_num=self.version,
            in_recovery=self.current.server.in_recovery,
        )


@dataclass(slots=True)
class Survey:
    """What one pass over every relation finds (survey()): the queue's count, the dead tuples
    and the relations past each threshold, the relations the simulation needs, those ``pick``
    wants, the oldest of each counter and the tables of the relations being vacuumed."""

    due: int = 0
    dead: int = 0
    past: PastThreshold = field(default_factory=PastThreshold)
    moving: set[int] = field(default_factory=set)  # heaps of the relations that may start
    picked: list[th.Standing] = field(default_factory=list)
    oldest_xid: th.Standing | None = None
    oldest_mxid: th.Standing | None = None
    owners: dict[int, Table] = field(default_factory=dict)  # of the relations being vacuumed


def live_view(
    previous: Snapshot | None,
    current: Snapshot,
    *,
    durations: Mapping[int, float] | None = None,
    horizon_s: float = HORIZON_S,
    pick: Pick | None = None,
    named: bool = False,
) -> LiveView:
    """The refresh of ``current``; ``previous`` gives rates and predicted starts, and
    ``durations`` the last vacuum lengths seen by earlier refreshes (oid → seconds).
    ``named``: each row names its database (for a view of several: watch/merged.py)."""
    now = prepare(previous, current, horizon_s)
    shared = cluster.sharing(current)
    found = survey(now, horizon_s, pick or Pick())
    oldest: dict[cluster.Counter, cluster.Oldest | None] = {
        "xid": _oldest(older(now.standing_of, found.oldest_xid, now.quiet.oldest_xid, xid=True)),
        "mxid": _oldest(
            older(now.standing_of, found.oldest_mxid, now.quiet.oldest_mxid, xid=False)
        ),
    }
    return LiveView(
        taken_at=current.taken_at,
        database=current.server.database,
        version_num=now.version,
        interval_s=now.seconds,
        horizon_s=horizon_s,
        vacuums=[running_vacuum(now, v, shared, found.owners) for v in current.vacuums],
        tables=tables(
            now,
            found,
            durations or {},
            horizon_s,
            pick or Pick(),
            database=current.server.database if named else None,
        ),
        relations=len(now.standings) + now.quiet.count + current.quiet,
        quiet=now.quiet.count + current.quiet,
        due=found.due,
        dead_tuples=found.dead,
        past_threshold=found.past,
        workers=cluster.workers(current, now.server, shared),
        holders=cluster.holders(current),
        wraparound=cluster.wraparound(current, now.server, oldest),
        notes=list(current.notes),
    )


def prepare(previous: Snapshot | None, current: Snapshot, horizon_s: float = HORIZON_S) -> Now:
    server = th.server_settings(current)
    seconds = None
    if previous is not None:
        seconds = (current.taken_at - previous.taken_at).total_seconds()
    if not seconds or seconds <= 0:
        previous, seconds = None, None
    here = current.server.database
    running = {v.relid for v in current.vacuums if v.database == here}
    version = current.server.version_num
    limits = th.effective(server, {}, version_num=version).freeze
    reach = xid_rate(previous, current, seconds) * horizon_s
    ranked, quiet = current.tables, Quiet()
    if len(ranked) > QUIET_FROM:
        earlier = relations_of(previous) if previous is not None else {}
        ranked, quiet = split(ranked, earlier, limits, reach, running)
    return Now(
        previous=previous,
        current=current,
        server=server,
        standings=th.standings(ranked, server, version, in_recovery=current.server.in_recovery),
        running=running,
        seconds=seconds,
        quiet=quiet,
    )


def survey(now: Now, horizon_s: float, pick: Pick) -> Survey:
    """One pass over every relation for what the view counts or ranks: nothing here builds a
    record per relation, so 20,000 relations cost a few hundredths of a second (400,000 with
    2 % past a threshold: 0.37 s, 0.17 s of it the totals)."""
    found = Survey()
    running, moving, picked, owners = now.running, found.moving, found.picked, found.owners
    earlier, seconds = now.earlier(), now.seconds or 0.0
    taken_at = now.current.taken_at
    reach = _xids_per_second(now) * horizon_s
    simulated = bool(earlier)  # predicted_starts() simulates only with a previous snapshot
    schemas = pick.schemas
    due_count, oldest_xid, oldest_mxid = 0, -1, -1
    dead_total, past_vacuum, past_insert, past_analyze = 0, 0, 0, 0
    version = now.version
    for standing in now.standings:
        table, rel, settings, due, share = standing
        oid = rel.oid
        if oid in running:
            owners[oid] = table
        elif due:
            due_count += 1
        dead_total += rel.n_dead_tup or 0
        # Past its vacuum or insert threshold, a relation's share is 1 or more; past its
        # analyze threshold, its changes since the last analyze exceed the threshold's base
        # (the scale term only adds). Only those are worked out: most relations fail both.
        if share >= 1.0 or (
            (rel.n_mod_since_analyze or 0) > settings.analyze_threshold and rel is table.heap
        ):
            vacuum, insert, analyze = _past(rel, settings, version, is_heap=rel is table.heap)
            past_vacuum += vacuum
            past_insert += insert
            past_analyze += analyze
        xid_age, mxid_age = rel.frozenxid_age or 0, rel.minmxid_age or 0
        if xid_age > oldest_xid:  # the first of the oldest, as max() takes it
            oldest_xid, found.oldest_xid = xid_age, standing
        if mxid_age > oldest_mxid:
            oldest_mxid, found.oldest_mxid = mxid_age, standing
        if simulated and (
            due
            or xid_age + reach > settings.freeze.xid
            or (
                (before := earlier.get(oid)) is not None
                and _gathering(before, rel, seconds, taken_at)
            )
        ):
            moving.add(table.heap.oid)
        if not schemas or table.heap.schema_name in schemas:
            picked.append(standing)
    found.due, found.dead = due_count, dead_total
    found.past = PastThreshold(vacuum=past_vacuum, insert=past_insert, analyze=past_analyze)
    return found


# -- running vacuums ----------------------------------------------------------------------------


def running_vacuum(
    now: Now, v: VacuumProgress, shared: int, owners: Mapping[int, Table]
) -> RunningVacuum:
    """One vacuum under way, with its time left by the cost model when its relation is here
    (``owners``: the tables of this database's relations being vacuumed)."""
    here = v.database == now.current.server.database
    table = owners.get(v.relid) if here else None
    rel = _relation(table, v.relid) if table is not None else None
    eta = None
    if table is not None and rel is not None:
        eta = time_left.eta_seconds(
            v,
            rel,
            server=now.server,
            options=th.options_of(table, rel),
            version_num=now.version,
            block_size=now.current.server.block_size,
            sharing=shared,
        )
    started = v.started
    return RunningVacuum(
        pid=v.pid,
        database=v.database,
        relation=(
            _label(table, rel)
            if table is not None and rel is not None
            else (v.relation or f"oid {v.relid}")
        ),
        is_autovacuum=v.is_autovacuum,
        phase=v.phase,
        heap_blks_total=v.heap_blks_total,
        heap_blks_scanned=v.heap_blks_scanned,
        heap_blks_vacuumed=v.heap_blks_vacuumed,
        index_vacuum_count=v.index_vacuum_count,
        indexes_total=v.indexes_total,
        indexes_processed=v.indexes_processed,
        dead_items=v.dead_tuples,
        dead_items_share=v.dead_items_share,
        elapsed_s=None if started is None else (now.current.taken_at - started).total_seconds(),
        delay_s=None if v.delay_time_ms is None else v.delay_time_ms / 1000.0,
        eta_s=eta,
    )


# -- the queue ----------------------------------------------------------------------------------


def tables(
    now: Now,
    found: Survey,
    durations: Mapping[int, float],
    horizon_s: float,
    pick: Pick,
    *,
    database: str | None = None,
) -> list[TableLive]:
    """The relations ``pick`` wants, in the order autovacuum would take them (queue_key); rows
    and the model's records are built for the first ``pick.limit`` only, each naming
    ``database`` when given."""
    starts = predicted_starts(now, found.moving, horizon_s)
    running = now.running
    keyed = [
        (
            queue_key(
                running=rel.oid in running,
                due=due,
                is_toast=rel is table.toast,
                oid=rel.oid,
                start=starts.get(rel.oid),
                progress=share,
            ),
            standing,
        )
        for standing in found.picked
        for table, rel, _, due, share in (standing,)
    ]
    limit = pick.limit
    if limit is not None and 0 <= limit < len(keyed):
        head = heapq.nsmallest(limit, keyed, key=_first)  # sorted, as sorted()[:limit]
    else:
        head = sorted(keyed, key=_first)[:limit]  # keys end with the oid: no two are equal
    earlier = now.earlier()
    here = now.current.server.database
    seen = {v.relid: v for v in now.previous.vacuums if v.database == here} if now.previous else {}
    taken_at, seconds = now.current.taken_at, now.seconds
    rows = []
    for _, standing in head:
        table, rel = standing[0], standing[1]
        oid, before = rel.oid, earlier.get(rel.oid)
        rate = (
            rates.between(before, rel, seconds, taken_at)
            if before is not None and seconds
            else None
        )
        last = time_left.last_duration(rel, before, seen.get(oid)) or durations.get(oid)
        row = _row(table, now.thresholds(standing), rate, oid in running, starts.get(oid), last)
        if database is not None:
            row["database"] = database
        rows.append(row)
    # All rows validated in one call, as the snapshot's are (pg/connect.py): at 20,000 rows
    # (the terminal view's) about 0.01 s less than one call each.
    return _ROWS.validate_python(rows)


def _first(pair: tuple[Key, th.Standing]) -> Key:
    return pair[0]


def queue_key(
    *, running: bool, due: bool, is_toast: bool, oid: int, start: float | None, progress: float
) -> Key:
    """Being vacuumed; then due, in a worker's order (heaps by oid, then TOAST relations);
    then by predicted start, the nearest to a threshold first."""
    if running:
        return 0, 0.0, is_toast, 0.0, oid
    if due:
        return 1, 0.0, is_toast, 0.0, oid
    return 2, math.inf if start is None else start, False, -progress, oid


def row_key(row: TableLive) -> Key:
    """A row's place in the queue: what the view sorted it by."""
    return queue_key(running=row.running, due=row.due, is_toast=row.is_toast, oid=row.oid,
                     start=row.predicted_start_s, progress=row.progress)  # fmt: skip


def _row(
    table: Table,
    t: th.Thresholds,
    rate: rates.Rates | None,
    running: bool,
    start: float | None,
    last: float | None,
) -> dict[str, object]:
    """A row's fields. From a mapping: pydantic's validator (compiled) takes a third less
    time than the keywords of model_construct (Python), which counts at 20,000 relations."""
    rel = t.relation
    owner = table.heap
    return {
        "oid": rel.oid,
        "schema_name": owner.schema_name,
        "table": owner.name,
        "is_toast": t.is_toast,
        "autovacuum_enabled": t.effective.enabled,
        "dead": t.dead,
        "vacuum_threshold": t.vacuum,
        "vacuum_progress": t.vacuum_progress,
        "inserted": t.inserted,
        "insert_threshold": t.insert,
        "insert_progress": t.insert_progress,
        "dead_per_second": rate.dead_per_second if rate is not None else None,
        "due": t.needs_vacuum,
        "forced": t.forced,
        "running": running,
        "predicted_start_s": 0.0 if running else start,
        "last_vacuum_s": last,
    }


def predicted_starts(now: Now, moving: set[int], horizon_s: float) -> dict[int, float]:
    """Seconds from the current snapshot to the first simulated vacuum of each relation of
    the tables whose heaps are in ``moving``, by oid; empty without a previous snapshot."""
    if now.previous is None or now.seconds is None or not moving:
        return {}
    # The previous snapshot is cut down as well: the simulator's inputs read only the rates
    # of the relations simulated, and its launcher only the snapshots' transaction ids.
    given = forecast.inputs(_only(now.previous, moving), _only(now.current, moving))
    return first_starts(given.subjects, given.launcher, horizon_s)


def _only(snapshot: Snapshot, heaps: set[int]) -> Snapshot:
    """``snapshot`` with the tables whose heap is in ``heaps`` only."""
    return snapshot.model_copy(
        update={"tables": [t for t in snapshot.tables if t.heap.oid in heaps]}
    )


def _past(
    rel: Relation, e: th.Effective, version_num: int, *, is_heap: bool
) -> tuple[bool, bool, bool]:
    """Whether ``rel`` is past its vacuum, insert and analyze thresholds: th.thresholds()'s
    functions without building its record. With 400,000 relations all past their
    thresholds, survey() took 0.7 s so and 2.2 s with the records (0.2 s without counting);
    the tests hold the two to the same answers."""
    reltuples = max(rel.reltuples, 0.0)
    vacuum = (rel.n_dead_tup or 0) > th.vacuum_threshold(e, reltuples)
    insert = th.insert_threshold(e, rel, version_num)
    analyze = is_heap and (rel.n_mod_since_analyze or 0) > th.analyze_threshold(e, reltuples)
    return vacuum, insert is not None and (rel.n_ins_since_vacuum or 0) > insert, analyze


def _gathering(before: Relation, after: Relation, seconds: float, taken_at: datetime) -> bool:
    """Whether the relation gathered dead tuples or inserts since ``before``: it may pass a
    threshold within the window (with being due now, or ``reach`` transaction ids from its
    freeze limit: survey())."""
    if rates.still(before, after):
        return False  # rates.between() gives none of either: most relations, at each refresh
    rate = rates.between(before, after, seconds, taken_at)
    return rate is not None and (
        (rate.dead_per_second or 0) > 0 or (rate.inserts_per_second or 0) > 0
    )


def _xids_per_second(now: Now) -> float:
    return xid_rate(now.previous, now.current, now.seconds)


def _oldest(standing: th.Standing | None) -> cluster.Oldest | None:
    """The oldest relation of a counter, named, with its freeze limits."""
    if standing is None:
        return None
    table, rel, settings, _, _ = standing
    return cluster.Oldest(rel, _label(table, rel), settings.freeze)


def relations_of(snapshot: Snapshot) -> Mapping[int, Relation]:
    """Every relation of ``snapshot`` by oid. The last one asked is kept: each refresh asks
    for its previous snapshot's, the current one of the refresh before (watch/source.py),
    and at 20,000 relations building it took a hundredth of a second."""
    global _LAST
    cached = _LAST
    if cached is not None and cached[0] is snapshot:
        return cached[1]
    found = {r.oid: r for t in snapshot.tables for r in (t.heap, t.toast) if r is not None}
    _LAST = snapshot, found
    return found


#: The snapshot relations_of() saw last and its answer (snapshots are immutable).
_LAST: tuple[Snapshot, dict[int, Relation]] | None = None


def _relation(table: Table, oid: int) -> Relation | None:
    if table.heap.oid == oid:
        return table.heap
    return table.toast if table.toast is not None and table.toast.oid == oid else None


def _label(table: Table, rel: Relation) -> str:
    """``schema.table``, or ``schema.table (TOAST)`` for its TOAST relation."""
    if rel.kind == "t":
        return f"{table.heap.qualified_name} (TOAST)"
    return rel.qualified_name
