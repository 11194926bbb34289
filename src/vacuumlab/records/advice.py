"""The advisor's versioned result: findings by DBA question, each with its evidence and, where
something should change, the SQL and the reason. Round-trips through JSON like a snapshot."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from vacuumlab.records.snapshot import ProbeNote, Record, ServerInfo, load_record

SCHEMA_VERSION = 1
KIND: Final = "vacuumlab.advice"

Question = Literal[
    "thresholds", "timing", "wraparound", "horizon", "bloat", "hot", "toast", "workers"
]
Severity = Literal["critical", "warning", "info"]
Scope = Literal["server", "table", "toast"]
Value = float | int | str | bool | None

#: The questions, in the order a DBA asks them, with their headings.
QUESTIONS: dict[str, str] = {
    "wraparound": "Wraparound",
    "horizon": "What holds vacuum back",
    "thresholds": "Thresholds",
    "timing": "When and how long",
    "workers": "Cost budget and workers",
    "bloat": "Bloat",
    "hot": "HOT and fillfactor",
    "toast": "TOAST",
}


class Recommendation(Record):
    """One change, as SQL, with why, checked against the setting's type, range and version."""

    sql: str
    reason: str
    scope: Scope
    setting: str
    value: str
    target: str | None = Field(default=None, description="schema.table for a table's setting")
    impact: float = Field(description="0 to 1, for ranking: how much it should help")
    evidence: str | None = Field(default=None, description="the measurement it rests on")
    simulated: str | None = Field(
        default=None, description="what the simulator predicts with the change, against without"
    )


class Finding(Record):
    """An answer to one question about one table (or the server)."""

    question: Question
    severity: Severity
    relation: str | None = Field(description="schema.table, '(TOAST)' for its TOAST relation")
    title: str
    detail: str
    evidence: dict[str, Value] = Field(default_factory=dict)
    recommendations: list[Recommendation] = Field(default_factory=list)


class TableStatus(Record):
    """Where a relation stands against its autovacuum thresholds."""

    relation: str
    is_toast: bool
    autovacuum_enabled: bool
    dead: int
    vacuum_threshold: float
    vacuum_progress: float
    inserted: int
    insert_threshold: float | None
    modified: int
    analyze_threshold: float | None
    overridden: list[str]
    dead_per_second: float | None = None
    seconds_to_vacuum: float | None = None
    estimated_vacuum_seconds: float | None = None
    needs_analyze: bool = False
    forced: str | None = Field(
        default=None, description='"xid" or "mxid": past a freeze limit, vacuumed regardless'
    )
    never_counted: bool = Field(
        default=False,
        description="reltuples -1: never vacuumed or analyzed, its thresholds count 0 rows",
    )
    partition_of: str | None = Field(
        default=None, description="schema.table of the partitioned table it belongs to (top)"
    )


class PartitionedStatus(Record):
    """A partitioned table in the status table: the sums of its leaf partitions, each of
    which has its own row."""

    relation: str
    partitions: int
    rows: int
    dead: int
    inserted: int
    modified: int
    dead_per_second: float | None = Field(
        description="the sum of its partitions' own rates, each over both snapshots"
    )
    analyzed_rows: float | None = Field(description="rows its last ANALYZE counted; None never")
    last_analyze: datetime | None


class Advice(Record):
    kind: Literal["vacuumlab.advice"] = KIND
    schema_version: int = SCHEMA_VERSION
    vacuumlab_version: str
    taken_at: datetime
    interval_s: float | None = None
    server: ServerInfo
    exact: bool = False
    findings: list[Finding] = Field(default_factory=list)
    tables: list[TableStatus] = Field(default_factory=list)
    quiet: int = Field(
        default=0,
        description="relations left out of tables: nothing counted toward a threshold, no "
        "options of their own, no freeze limit passed, nothing changed over the interval",
    )
    partitioned: list[PartitionedStatus] = Field(default_factory=list)
    notes: list[ProbeNote] = Field(default_factory=list)

    def dump_json(self) -> str:
        return self.model_dump_json(indent=2)

    def recommendations(self) -> list[tuple[Finding, Recommendation]]:
        """Every recommendation with its finding, most impact first."""
        pairs = [(f, r) for f in self.findings for r in f.recommendations]
        return sorted(pairs, key=lambda pair: -pair[1].impact)


def load_advice(path: Path) -> Advice:
    return load_record(path, Advice, KIND, "a vacuumlab advice file")
