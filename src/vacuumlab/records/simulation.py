"""What ``vacuumlab simulate`` predicts: per relation, the autovacuums of a time window; per
server, which worker vacuumed what and when. Round-trips through JSON like a snapshot."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final, Literal, NamedTuple

from pydantic import Field

from vacuumlab.records.snapshot import Record, ServerInfo, load_record

SCHEMA_VERSION = 1
KIND: Final = "vacuumlab.simulation"


class RelationForecast(Record):
    """One heap or TOAST relation over the simulated window."""

    relation: str = Field(description="schema.table, '(TOAST)' appended for its TOAST relation")
    is_toast: bool
    dead_per_second: float
    inserts_per_second: float
    vacuums: int
    forced: int = Field(description="of those, vacuums forced for wraparound")
    first_start_s: float | None = Field(description="seconds from the start of the window")
    mean_interval_s: float | None = Field(description="between the starts of its vacuums")
    mean_duration_s: float | None
    max_duration_s: float | None
    peak_dead: int = Field(description="n_dead_tup at its highest, just before a vacuum ends")
    dead_at_start: int | None = Field(
        default=None, description="n_dead_tup when the window starts (None in older files)"
    )
    waited_s: float = Field(description="past its threshold with no worker on it, in total")
    max_wait_s: float
    waited_full_s: float = Field(
        default=0.0,
        description="of waited_s, the seconds every worker slot was busy; the rest it waited "
        "with a slot free, for the launcher's next worker or behind other relations",
    )


class WorkerSpan(NamedTuple):
    """One vacuum: the worker slot that ran it, from when to when (seconds into the window)."""

    worker: int
    relation: str
    start_s: float
    end_s: float
    forced: bool


class WorkerTimeline(Record):
    """Every vacuum one worker slot ran, column by column: a day can hold tens of thousands."""

    worker: int
    relations: list[str] = Field(default_factory=list)
    starts_s: list[float] = Field(default_factory=list)
    ends_s: list[float] = Field(default_factory=list)
    forced: list[bool] = Field(default_factory=list)


class Simulation(Record):
    kind: Literal["vacuumlab.simulation"] = KIND
    schema_version: int = SCHEMA_VERSION
    vacuumlab_version: str
    taken_at: datetime = Field(description="the later snapshot: the window starts there")
    server: ServerInfo
    interval_s: float = Field(description="between the two snapshots the rates come from")
    hours: float
    changes: list[str] = Field(default_factory=list, description="the what-ifs applied (--set)")
    naptime_s: float
    launch_every_s: float = Field(description="how often the launcher sends a worker here")
    workers: int
    launches: int
    quiet: int = Field(default=0, description="relations with no activity, left out")
    relations: list[RelationForecast] = Field(default_factory=list)
    timelines: list[WorkerTimeline] = Field(default_factory=list)
    assumptions: list[str] = Field(default_factory=list)

    @property
    def spans(self) -> list[WorkerSpan]:
        """Every vacuum, by worker slot then start."""
        return [
            WorkerSpan(t.worker, *row)
            for t in self.timelines
            for row in zip(t.relations, t.starts_s, t.ends_s, t.forced, strict=True)
        ]

    @property
    def seconds(self) -> float:
        return self.hours * 3600.0

    @property
    def busy_share(self) -> float:
        """Worker-seconds spent vacuuming over the worker-seconds the window offers."""
        busy = sum(min(s.end_s, self.seconds) - s.start_s for s in self.spans)
        return busy / (self.seconds * self.workers) if self.seconds > 0 else 0.0

    def relation(self, name: str) -> RelationForecast | None:
        return next((r for r in self.relations if r.relation == name), None)

    def dump_json(self) -> str:
        return self.model_dump_json(indent=2)


def load_simulation(path: Path) -> Simulation:
    return load_record(path, Simulation, KIND, "a vacuumlab simulation")
