"""From snapshots to one refresh of the live view. Pure, records and model only: the terminal
view, the exporter and the tests build the same picture from the same snapshots.

- Thresholds and their progress are the model's (model/thresholds.py), as the advisor's are.
- Rates need the previous snapshot (model/rates.py); without one a refresh shows no rates
  and no predicted starts.
- The queue is in the order autovacuum would take the relations: those being vacuumed, then
  those that need a vacuum now in a worker's order (heaps in ``pg_class`` order, then TOAST
  relations: do_autovacuum() in autovacuum.c), then the others by the start the simulator
  predicts (model/simulator.py) and by how close they are to a threshold.
- The simulation leaves out relations that cannot be vacuumed within its window (nothing due,
  no dead tuples or inserts coming, no freeze limit within reach): they take no worker, so
  the others' starts are the same without them, and 10,000 quiet tables cost nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from pydantic import TypeAdapter

from vacuumlab.model import forecast, progress, rates
from vacuumlab.model import thresholds as th
from vacuumlab.model.simulator import simulate
from vacuumlab.records.live import LiveView, RunningVacuum, TableLive
from vacuumlab.records.snapshot import Relation, Snapshot, Table, VacuumProgress
from vacuumlab.watch import cluster

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
    thresholds: list[th.Thresholds]
    due: list[bool]  # each threshold's needs_vacuum, worked out once: the view asks it thrice
    owners: dict[int, Table]  # each table under the oid of its heap and of its TOAST relation
    seconds: float | None  # since the previous snapshot

    @property
    def version(self) -> int:
        return self.current.server.version_num

    def earlier(self) -> dict[int, Relation]:
        if self.previous is None or self.seconds is None:
            return {}
        return {r.oid: r for t in self.previous.tables for r in (t.heap, t.toast) if r is not None}


def live_view(
    previous: Snapshot | None,
    current: Snapshot,
    *,
    durations: Mapping[int, float] | None = None,
    horizon_s: float = HORIZON_S,
    pick: Pick | None = None,
) -> LiveView:
    """The refresh of ``current``; ``previous`` gives rates and predicted starts, and
    ``durations`` the last vacuum lengths seen by earlier refreshes (oid → seconds)."""
    now = prepare(previous, current)
    shared = cluster.sharing(current)
    running = _running(now)
    return LiveView(
        taken_at=current.taken_at,
        database=current.server.database,
        version_num=now.version,
        interval_s=now.seconds,
        horizon_s=horizon_s,
        vacuums=[running_vacuum(now, v, shared) for v in current.vacuums],
        tables=tables(now, durations or {}, horizon_s, pick or Pick()),
        relations=len(now.thresholds),
        due=sum(
            1
            for t, due in zip(now.thresholds, now.due, strict=True)
            if due and t.relation.oid not in running
        ),
        workers=cluster.workers(current, now.server, shared),
        holders=cluster.holders(current),
        wraparound=cluster.wraparound(
            current, now.server, now.thresholds, lambda rel: _label(now, rel)
        ),
        notes=list(current.notes),
    )


def prepare(previous: Snapshot | None, current: Snapshot) -> Now:
    server = th.server_settings(current)
    in_recovery = current.server.in_recovery
    owners: dict[int, Table] = {}
    for table in current.tables:
        owners[table.heap.oid] = table
        if table.toast is not None:
            owners[table.toast.oid] = table
    seconds = None
    if previous is not None:
        seconds = (current.taken_at - previous.taken_at).total_seconds()
    thresholds = th.of_tables(
        current.tables, server, current.server.version_num, in_recovery=in_recovery
    )
    return Now(
        previous=previous if seconds and seconds > 0 else None,
        current=current,
        server=server,
        thresholds=thresholds,
        due=[t.needs_vacuum for t in thresholds],
        owners=owners,
        seconds=seconds if seconds and seconds > 0 else None,
    )


# -- running vacuums ----------------------------------------------------------------------------


def running_vacuum(now: Now, v: VacuumProgress, shared: int) -> RunningVacuum:
    """One vacuum under way, with its time left by the cost model when its relation is here."""
    here = v.database == now.current.server.database
    table = now.owners.get(v.relid) if here else None
    rel = _relation(table, v.relid) if table is not None else None
    eta = None
    if table is not None and rel is not None:
        eta = progress.eta_seconds(
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
        relation=_label(now, rel) if rel is not None else (v.relation or f"oid {v.relid}"),
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
    now: Now, durations: Mapping[int, float], horizon_s: float, pick: Pick
) -> list[TableLive]:
    """The relations ``pick`` wants, in the order autovacuum would take them (queue_key); rows
    are built for the first ``pick.limit`` only."""
    earlier = now.earlier()
    found = {
        t.relation.oid: rates.between(b, t.relation, now.seconds, now.current.taken_at)
        for t in now.thresholds
        if now.seconds and (b := earlier.get(t.relation.oid)) is not None
    }
    starts = predicted_starts(now, found, horizon_s)
    running = _running(now)
    keyed = [
        (_key(t, due, t.relation.oid in running, starts.get(t.relation.oid)), t)
        for t, due in zip(now.thresholds, now.due, strict=True)
        if not pick.schemas or pick.wants(now.owners[t.relation.oid].heap.schema_name)
    ]
    keyed.sort(key=lambda pair: pair[0])  # keys end with the oid: no two are equal
    here = now.current.server.database
    seen = {v.relid: v for v in now.previous.vacuums if v.database == here} if now.previous else {}
    # All rows validated in one call, as the snapshot's are (pg/connect.py): at 20,000 rows
    # (the terminal view's) about 0.01 s less than one call each.
    return _ROWS.validate_python([
        _row(now, t, found.get(oid), oid in running, starts.get(oid),
             progress.last_duration(t.relation, earlier.get(oid), seen.get(oid))
             or durations.get(oid))
        for _, t in keyed[: pick.limit]
        for oid in (t.relation.oid,)
    ])  # fmt: skip


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


def _key(t: th.Thresholds, due: bool, running: bool, start: float | None) -> Key:
    # The progress counts only for the relations neither running nor due (queue_key()).
    share = 0.0 if running or due else max(t.vacuum_progress, t.insert_progress or 0.0)
    return queue_key(running=running, due=due, is_toast=t.is_toast,
                     oid=t.relation.oid, start=start, progress=share)  # fmt: skip


def _running(now: Now) -> set[int]:
    """The relations of this database being vacuumed."""
    here = now.current.server.database
    return {v.relid for v in now.current.vacuums if v.database == here}


def _row(
    now: Now,
    t: th.Thresholds,
    rate: rates.Rates | None,
    running: bool,
    start: float | None,
    last: float | None,
) -> dict[str, object]:
    """A row's fields. From a mapping: pydantic's validator (compiled) takes a third less
    time than the keywords of model_construct (Python), which counts at 20,000 relations."""
    rel = t.relation
    owner = now.owners[rel.oid].heap
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


def predicted_starts(
    now: Now, found: Mapping[int, rates.Rates | None], horizon_s: float
) -> dict[int, float]:
    """Seconds from the current snapshot to each relation's first simulated vacuum, by oid;
    empty without a previous snapshot."""
    if now.previous is None or now.seconds is None:
        return {}
    reach = _xids_per_second(now) * horizon_s
    moving = {
        now.owners[t.relation.oid].heap.oid
        for t, due in zip(now.thresholds, now.due, strict=True)
        if _may_start(due, t, found.get(t.relation.oid), reach)
    }
    # The previous snapshot is cut down as well: the simulator's inputs read only the rates
    # of the relations simulated, and its launcher only the snapshots' transaction ids.
    given = forecast.inputs(_only(now.previous, moving), _only(now.current, moving))
    outcome = simulate(given.subjects, given.launcher, horizon_s)
    return {
        s.order: tally.starts[0]
        for s, tally in zip(outcome.subjects, outcome.tallies, strict=True)
        if tally.starts
    }


def _only(snapshot: Snapshot, heaps: set[int]) -> Snapshot:
    """``snapshot`` with the tables whose heap is in ``heaps`` only."""
    return snapshot.model_copy(
        update={"tables": [t for t in snapshot.tables if t.heap.oid in heaps]}
    )


def _may_start(due: bool, t: th.Thresholds, rate: rates.Rates | None, reach: float) -> bool:
    """Whether the relation could be vacuumed within the window: ``due`` now (its
    needs_vacuum), gathering dead tuples or inserts, or ``reach`` transaction ids from its
    freeze limit."""
    if due:
        return True
    if rate is not None and ((rate.dead_per_second or 0) > 0 or (rate.inserts_per_second or 0) > 0):
        return True
    age = t.relation.frozenxid_age or 0
    return age + reach > t.effective.freeze.xid


def _xids_per_second(now: Now) -> float:
    before, after = now.previous, now.current
    if before is None or before.xids is None or after.xids is None or not now.seconds:
        return 0.0
    return max(after.xids.next_xid - before.xids.next_xid, 0) / now.seconds


def _relation(table: Table, oid: int) -> Relation | None:
    if table.heap.oid == oid:
        return table.heap
    return table.toast if table.toast is not None and table.toast.oid == oid else None


def _label(now: Now, rel: Relation) -> str:
    """``schema.table``, or ``schema.table (TOAST)`` for its TOAST relation."""
    table = now.owners.get(rel.oid)
    if table is not None and rel.kind == "t":
        return f"{table.heap.qualified_name} (TOAST)"
    return rel.qualified_name
