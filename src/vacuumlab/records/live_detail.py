"""One relation of the live view in full: how its thresholds are made, the settings that
apply to it and where each comes from, its freeze ages against their limits and its last
vacuums. Built by ``vacuumlab.watch.detail`` from the snapshot a refresh took, for the one
relation a person asks about (``Enter`` in ``vacuumlab watch``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from vacuumlab.records.snapshot import Record


class AppliedSetting(Record):
    """A setting as autovacuum applies it to this relation."""

    name: str
    value: str
    source: Literal["table", "server"] = Field(
        description="table: a reloption of the relation (its table's for a TOAST relation "
        "without options of its own); server: the server's setting"
    )


class TableDetail(Record):
    """Thresholds, settings, freeze ages and last vacuums of one heap or TOAST relation."""

    oid: int
    label: str = Field(description="schema.table, '(TOAST)' appended for its TOAST relation")
    is_toast: bool
    taken_at: datetime
    reltuples: float
    relpages: int
    autovacuum_active: bool = Field(description="the server's autovacuum and track_counts on")
    table_enabled: bool = Field(description="the relation's own autovacuum_enabled")
    dead: int
    vacuum_base: float
    vacuum_scale_factor: float
    vacuum_max: float | None = Field(description="PostgreSQL 18+; None: no cap")
    vacuum_threshold: float
    inserted: int
    insert_base: float | None = Field(description="None: insert-triggered vacuum off")
    insert_scale_factor: float
    unfrozen_share: float = Field(description="1 − relallfrozen / relpages on 18+, else 1")
    insert_threshold: float | None
    modified: int
    analyze_threshold: float | None = Field(description="None for a TOAST relation")
    frozenxid_age: int | None
    freeze_max_age: float
    minmxid_age: int | None
    multixact_freeze_max_age: float
    forced: str | None = Field(default=None, description='"xid" or "mxid": past a limit')
    settings: list[AppliedSetting] = Field(default_factory=list)
    last_vacuum: datetime | None = None
    last_autovacuum: datetime | None = None
    vacuum_count: int | None = None
    autovacuum_count: int | None = None
    last_analyze: datetime | None = None
    last_autoanalyze: datetime | None = None
    total_vacuum_s: float | None = Field(default=None, description="PostgreSQL 18+")
    total_autovacuum_s: float | None = Field(default=None, description="PostgreSQL 18+")
