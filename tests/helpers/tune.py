"""A captured job queue for the tuner's tests: a profile as capture writes it."""

from __future__ import annotations

from datetime import UTC, datetime

from vacuumlab.records.profile import (
    CapturedTable,
    Column,
    ColumnStats,
    Constraint,
    Index,
    Profile,
    Rates,
    Setting,
    Shape,
)


def queue_profile(rows: int, rate: float) -> Profile:
    """A job queue as capture writes it: inserts, updates and deletes at ``rate`` each, on a
    server at autovacuum's stock naptime and scale factor."""
    stats = ColumnStats(null_frac=0, avg_width=8, n_distinct=-1, correlation=1.0)
    shape = Shape(
        schema_name="app", name="jobs", rows=rows, pages=rows // 100, heap_bytes=rows * 82,
        index_bytes=rows * 25,
        columns=[
            Column(name="id", type="bigint", not_null=True, storage="plain", identity="d",
                   stats=stats),
            Column(name="attempts", type="integer", not_null=True, storage="plain",
                   stats=ColumnStats(null_frac=0, avg_width=4, n_distinct=5, correlation=0.0)),
        ],
        indexes=[Index(name="jobs_pkey", definition="CREATE UNIQUE INDEX jobs_pkey ON app.jobs "
                       "USING btree (id)", columns=["id"], unique=True, primary=True)],
        constraints=[Constraint(name="jobs_pkey", kind="p", definition="PRIMARY KEY (id)")],
    )  # fmt: skip
    rates = Rates(inserts=rate, updates=rate, hot_updates=0, deletes=rate, dead_tuples=2 * rate)
    return Profile(
        vacuumlab_version="test", captured_at=datetime(2026, 11, 1, tzinfo=UTC), seconds=300,
        server_version_num=180000, source="counters",
        tables=[CapturedTable(shape=shape, rates=rates, explained=0.0)],
        settings=[Setting(name="autovacuum_naptime", setting="60", unit="s", source="default"),
                  Setting(name="autovacuum_vacuum_scale_factor", setting="0.2", unit=None,
                          source="default")],
    )  # fmt: skip
