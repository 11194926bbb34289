"""What ``vacuumlab advise --verify`` found: the advice, the changes it applied and put back,
each watched table measured before and after beside the simulator's prediction, and a verdict
per recommendation. Round-trips through JSON like a snapshot."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from vacuumlab.records.advice import Advice, Scope
from vacuumlab.records.snapshot import Record, load_record

SCHEMA_VERSION = 1
KIND: Final = "vacuumlab.verification"

Verdict = Literal["moved as advised", "did not move", "not measurable here"]
#: What a recommendation promises, in the terms the lab can measure in minutes.
Direction = Literal["peak dead tuples down", "vacuums more often", "bloat growth not up"]


class WindowFigures(Record):
    """One relation over one measuring window, sampled at 1 Hz."""

    seconds: float
    samples: int
    peak_dead: int | None = Field(description="n_dead_tup at its highest over the window")
    mean_dead: float | None
    start_bytes: int | None = Field(description="pg_relation_size (main fork) at the start")
    end_bytes: int | None
    vacuums: int | None = Field(description="autovacuum_count at the end less at the start")

    @property
    def growth_bytes(self) -> int | None:
        if self.start_bytes is None or self.end_bytes is None:
            return None
        return self.end_bytes - self.start_bytes

    @property
    def vacuums_per_hour(self) -> float | None:
        if self.vacuums is None or self.seconds <= 0:
            return None
        return self.vacuums * 3600.0 / self.seconds


class Prediction(Record):
    """The simulator from the advice's snapshots, without and with the changes: the peaks over
    the windows the measurement takes, the rates over a longer run (``rates_over_s``)."""

    peak_dead_without: int = Field(
        description="n_dead_tup at its highest over a simulated window as long as the measured "
        "ones, starting at the advice's later snapshot, without the changes"
    )
    peak_dead_with: int = Field(
        description="the same with the changes, over the window that starts once every watched "
        "relation has had its first vacuum under them (settle_s), as the after window does"
    )
    vacuums_per_hour_without: float = Field(
        description="vacuums over a simulation of rates_over_s seconds, per hour, without the "
        "changes (a window shorter than the naptime may hold no launch: no rate)"
    )
    vacuums_per_hour_with: float = Field(description="the same, with the changes")
    rates_over_s: float | None = Field(
        default=None,
        description="how long the simulation the rates come from ran: at least an hour and five "
        "launch intervals; None in records written when it was the window's length",
    )
    settle_s: float | None = Field(
        default=None,
        description="seconds from the changes to the end of the first vacuum of the last "
        "watched relation under them, at most one window: where the predicted window with the "
        "changes starts; None in records written when it started with the changes",
    )


class TableResult(Record):
    """A watched relation: measured before and after the changes, and predicted."""

    relation: str = Field(description="schema.table, '(TOAST)' appended for its TOAST relation")
    before: WindowFigures
    after: WindowFigures
    prediction: Prediction | None = None


class AppliedChange(Record):
    """A setting the verification changed, what it was, and whether it read so again after."""

    scope: Scope
    relation: str | None = Field(description="the table (or its TOAST) for a table setting")
    setting: str
    value: str
    previous: str | None = Field(description="as it read before; None: not set on the table")
    sql: str = Field(description="the statement that applied it")
    restored: bool = Field(default=False, description="read back as before after the restore")


class SkippedChange(Record):
    """A recommendation the verification left alone, and why."""

    relation: str | None
    setting: str
    sql: str
    reason: str


class Outcome(Record):
    """One applied recommendation: what it promised and whether the measurement moved so."""

    relation: str | None
    setting: str
    value: str
    promised: list[Direction]
    verdict: Verdict
    detail: str


class Verification(Record):
    kind: Literal["vacuumlab.verification"] = KIND
    schema_version: int = SCHEMA_VERSION
    vacuumlab_version: str
    advice: Advice
    window_s: float = Field(description="the length of each measuring window")
    settle_s: float = Field(description="waited after applying, before the after window")
    applied: list[AppliedChange] = Field(default_factory=list)
    skipped: list[SkippedChange] = Field(default_factory=list)
    tables: list[TableResult] = Field(default_factory=list)
    outcomes: list[Outcome] = Field(default_factory=list)
    restored: bool = Field(description="every change read back as it was before")
    finished_at: datetime
    notes: list[str] = Field(default_factory=list)

    def table(self, relation: str) -> TableResult | None:
        return next((t for t in self.tables if t.relation == relation), None)

    def dump_json(self) -> str:
        return self.model_dump_json(indent=2)


def load_verification(path: Path) -> Verification:
    return load_record(path, Verification, KIND, "a vacuumlab verification")
