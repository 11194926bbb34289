"""What one refresh of the live view shows: the vacuums running, the queue of relations in the
order autovacuum would take them, the workers, who holds the horizon back and how close the
cluster is to wraparound. Built by ``vacuumlab.watch.view`` from one or two snapshots; the
terminal view and the Prometheus exporter draw only from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Literal

from pydantic import Field

from vacuumlab.records.snapshot import ProbeNote, Record, Snapshot

SCHEMA_VERSION = 1
KIND: Final = "vacuumlab.live"


class RunningVacuum(Record):
    """One vacuum under way (``pg_stat_progress_vacuum``), by a worker or a manual VACUUM."""

    pid: int
    database: str
    relation: str = Field(description="schema.table, '(TOAST)' appended; the server's text else")
    is_autovacuum: bool
    phase: str
    heap_blks_total: int
    heap_blks_scanned: int
    heap_blks_vacuumed: int
    index_vacuum_count: int
    indexes_total: int | None = Field(default=None, description="PostgreSQL 17+")
    indexes_processed: int | None = Field(default=None, description="PostgreSQL 17+")
    dead_items: int | None = Field(default=None, description="dead item ids collected so far")
    dead_items_share: float | None = Field(
        default=None, description="of the dead-items memory; an index pass is due at 1"
    )
    elapsed_s: float | None = Field(default=None, description="since its transaction began")
    delay_s: float | None = Field(
        default=None, description="asleep in the cost-based delay (18+, track_cost_delay_timing)"
    )
    eta_s: float | None = Field(default=None, description="time left by the cost model")

    @property
    def scanned_share(self) -> float:
        total = self.heap_blks_total
        return min(self.heap_blks_scanned / total, 1.0) if total > 0 else 0.0

    @property
    def vacuumed_share(self) -> float:
        total = self.heap_blks_total
        return min(self.heap_blks_vacuumed / total, 1.0) if total > 0 else 0.0


class TableLive(Record):
    """A heap or TOAST relation against its thresholds, and when autovacuum should take it."""

    oid: int
    schema_name: str
    table: str = Field(description="the table's name, for its TOAST relation too")
    is_toast: bool
    autovacuum_enabled: bool
    dead: int
    vacuum_threshold: float
    vacuum_progress: float = Field(description="dead tuples over the vacuum threshold")
    inserted: int
    insert_threshold: float | None = Field(description="None: insert-triggered vacuum off")
    insert_progress: float | None
    dead_per_second: float | None = Field(default=None, description="None: one snapshot only")
    due: bool = Field(description="autovacuum would take it now: past a threshold, or forced")
    forced: str | None = Field(default=None, description='"xid" or "mxid": past a freeze limit')
    running: bool = False
    predicted_start_s: float | None = Field(
        default=None, description="seconds to the next vacuum the simulator predicts; 0 running"
    )
    last_vacuum_s: float | None = Field(default=None, description="the last vacuum's length")
    database: str | None = Field(
        default=None, description="its database, in a view of several (--all-databases)"
    )

    @property
    def label(self) -> str:
        """``schema.table``, ``database:schema.table`` in a view of several databases;
        `` (TOAST)`` after it for a TOAST relation."""
        name = f"{self.schema_name}.{self.table}"
        if self.database is not None:
            name = f"{self.database}:{name}"
        return f"{name} (TOAST)" if self.is_toast else name

    @property
    def progress(self) -> float:
        """The nearer of the two thresholds, as a share (1.0: at the threshold)."""
        return max(self.vacuum_progress, self.insert_progress or 0.0)


class Workers(Record):
    """Autovacuum workers: how many run, how many can, and the cost limit each gets."""

    busy: int = Field(description="autovacuum workers vacuuming, in every database")
    available: int = Field(description="min(autovacuum_max_workers, autovacuum_worker_slots)")
    sharing: int = Field(description="busy workers that split the cost limit")
    cost_limit: int | None = Field(description="autovacuum's cost limit, shared")
    cost_limit_each: float | None = Field(description="the share of it each balanced worker gets")
    cost_delay_ms: float | None


class Holder(Record):
    """Something that holds the xmin horizon back: a backend, a slot, a prepared transaction."""

    kind: str
    name: str = Field(description="pid N, the slot's name or the prepared transaction's gid")
    database: str | None
    user_name: str | None = None
    age_s: float | None = Field(default=None, description="since its transaction began")
    xid_age: int | None = Field(default=None, description="age of the horizon it pins")
    holds_here: bool = Field(description="holds back the user tables of this database")


class Wraparound(Record):
    """The oldest transaction-id (or multixact) age against the limits that force vacuums."""

    counter: Literal["xid", "mxid"]
    age: int | None = Field(description="the cluster's oldest database's age")
    database: str | None = Field(description="that database")
    forcing_age: float = Field(description="autovacuum_(multixact_)freeze_max_age")
    failsafe_age: float | None = Field(description="vacuum's failsafe age; None before 14")
    table: str | None = Field(default=None, description="this database's oldest relation")
    table_age: int | None = None
    table_forcing_age: float | None = Field(default=None, description="its own limit, if lower")

    @property
    def share(self) -> float | None:
        """The age as a share of the forcing limit (1.0: anti-wraparound vacuums are due)."""
        return None if self.age is None or not self.forcing_age else self.age / self.forcing_age


class PastThreshold(Record):
    """Relations past each of autovacuum's thresholds, counted over every relation of the
    database, not only those a view holds, whether autovacuum acts on them or not (a worker on
    them, autovacuum_enabled off). A relation past two thresholds counts under both."""

    vacuum: int = Field(default=0, description="n_dead_tup over the vacuum threshold")
    insert: int = Field(default=0, description="n_ins_since_vacuum over the insert threshold")
    analyze: int = Field(
        default=0, description="n_mod_since_analyze over the analyze threshold; heaps only"
    )


class DatabaseLive(Record):
    """One database's counts in a view of several (``--all-databases``): what a view of that
    database alone says in its ``relations``, ``due``, ``dead_tuples``, ``past_threshold`` and
    ``wraparound`` (its own oldest relation of each counter)."""

    database: str
    relations: int = 0
    due: int = 0
    dead_tuples: int = 0
    past_threshold: PastThreshold = Field(default_factory=PastThreshold)
    wraparound: list[Wraparound] = Field(default_factory=list)


class LiveView(Record):
    """One refresh: every relation in queue order, and the rest of the picture."""

    kind: Literal["vacuumlab.live"] = KIND
    schema_version: int = SCHEMA_VERSION
    taken_at: datetime
    database: str
    version_num: int
    interval_s: float | None = Field(description="since the previous snapshot, for rates")
    horizon_s: float = Field(description="how far ahead the simulator looked for starts")
    vacuums: list[RunningVacuum] = Field(default_factory=list)
    tables: list[TableLive] = Field(
        default_factory=list,
        description="in the order autovacuum would take them; those picked (schemas, a limit)",
    )
    relations: int = Field(default=0, description="heap and TOAST relations in the database")
    quiet: int = Field(
        default=0,
        description="of them, without a row: nothing counted toward a threshold, no options, "
        "no rates, ages far from their freeze limits (watch/quiet.py)",
    )
    due: int = Field(default=0, description="of them, past a threshold with no worker on them")
    dead_tuples: int = Field(default=0, description="n_dead_tup summed over all of them")
    past_threshold: PastThreshold = Field(
        default_factory=PastThreshold, description="of them, past each threshold"
    )
    workers: Workers
    holders: list[Holder] = Field(default_factory=list, description="oldest first")
    wraparound: list[Wraparound] = Field(default_factory=list)
    notes: list[ProbeNote] = Field(default_factory=list)
    databases: list[DatabaseLive] = Field(
        default_factory=list,
        description="--all-databases: each database read, in name order; empty for one database",
    )
    unread: dict[str, ProbeNote] = Field(
        default_factory=dict,
        description="--all-databases: the databases listed but not read, each with why",
    )

    def by_database(self) -> list[DatabaseLive]:
        """Each database's counts: those of ``databases``, or of the one database read."""
        if self.databases:
            return self.databases
        return [
            DatabaseLive(
                database=self.database,
                relations=self.relations,
                due=self.due,
                dead_tuples=self.dead_tuples,
                past_threshold=self.past_threshold,
                wraparound=self.wraparound,
            )
        ]

    def queue(self, limit: int | None = None) -> list[TableLive]:
        """The relations nearest autovacuum, first ``limit`` of them."""
        return self.tables if limit is None else self.tables[:limit]

    def oldest_holder(self) -> Holder | None:
        """The holder of this database's horizon with the oldest xid age."""
        here = [h for h in self.holders if h.holds_here and h.xid_age is not None]
        return max(here, key=lambda h: h.xid_age or 0, default=None)


@dataclass(frozen=True, slots=True)
class Refresh:
    """One refresh of the live view: the view, or why there is none; its wall time and its
    statements, and the snapshot it was built from. Taken by ``vacuumlab.watch.source``, drawn
    by the terminal view and kept by ``watch --record``; never saved as such."""

    view: LiveView | None
    error: str | None
    seconds: float
    statements: int
    snapshot: Snapshot | None = None
    #: --all-databases: each database's snapshot by name (``snapshot`` is then None).
    snapshots: Mapping[str, Snapshot] = field(default_factory=dict)

    def snapshot_of(self, database: str | None) -> Snapshot | None:
        """The snapshot a row of ``database`` came from (None: the one database's)."""
        return self.snapshot if database is None else self.snapshots.get(database)
