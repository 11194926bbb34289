"""Synthetic snapshots for the advisor's question modules: a server with PostgreSQL 18's stock
settings, relations with quiet defaults, and every field overridable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg import sql

from helpers.db import execute
from vacuumlab.advise.context import Context
from vacuumlab.model.knobs import stock_settings
from vacuumlab.records.advice import Recommendation
from vacuumlab.records.snapshot import (
    ExactBloat,
    Relation,
    ServerInfo,
    Setting,
    Snapshot,
    Table,
    VacuumProgress,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
BLOCK = 8192
#: A table three quarters deleted and never vacuumed, with pgstattuple to measure it exactly.
BLOATED_TABLE = (
    "CREATE EXTENSION pgstattuple",
    # autovacuum off: a launcher visit before the measurement would leave nothing to measure.
    "CREATE TABLE churned (id int PRIMARY KEY, pad text) WITH (autovacuum_enabled = off)",
    "INSERT INTO churned SELECT i, repeat('x', 200) FROM generate_series(1, 20000) i",
    "DELETE FROM churned WHERE id % 4 <> 0",
)
MB = 1 << 20

#: pg_settings.setting of a stock PostgreSQL 18 (base units: ms, s).
PG18 = stock_settings(180000)
#: The same on PostgreSQL 17: no worker slots, no max threshold.
PG17 = stock_settings(170000)


def server(version_num: int = 180001) -> ServerInfo:
    return ServerInfo(
        version_num=version_num,
        version=f"PostgreSQL {version_num // 10000}",
        database="app",
        user="postgres",
        is_superuser=True,
        in_recovery=False,
        block_size=BLOCK,
        can_read_all_stats=True,
        extensions=frozenset(),
        columns=frozenset(),
    )


def settings(values: dict[str, str]) -> list[Setting]:
    return [
        Setting(
            name=name,
            setting=value,
            unit=None,
            vartype="real",
            source="default",
            context="sighup",
            pending_restart=False,
        )
        for name, value in sorted(values.items())
    ]


def relation(oid: int, name: str, **fields: Any) -> Relation:
    """A relation with zero counters; ``heap_bytes`` follows ``relpages`` unless given."""
    values: dict[str, Any] = {
        "oid": oid,
        "schema_name": "public",
        "name": name,
        "kind": "r",
        "toast_of": None,
        "reltuples": 0.0,
        "relpages": 0,
        "relallvisible": 0,
        "relallfrozen": 0,
        "n_live_tup": 0,
        "n_dead_tup": 0,
        "n_ins_since_vacuum": 0,
        "n_mod_since_analyze": 0,
        "n_tup_ins": 0,
        "n_tup_upd": 0,
        "n_tup_del": 0,
        "n_tup_hot_upd": 0,
        "n_tup_newpage_upd": 0,
        "last_vacuum": None,
        "last_autovacuum": None,
        "last_analyze": None,
        "last_autoanalyze": None,
        "vacuum_count": 0,
        "autovacuum_count": 0,
        "analyze_count": 0,
        "autoanalyze_count": 0,
        "total_vacuum_time_ms": 0.0,
        "total_autovacuum_time_ms": 0.0,
        "total_analyze_time_ms": 0.0,
        "total_autoanalyze_time_ms": 0.0,
        "heap_bytes": None,
        "index_bytes": 0,
        "toast_bytes": None,
        "n_indexes": 0,
        "reloptions": {},
        "frozenxid_age": 1000,
        "minmxid_age": 0,
    }
    values.update(fields)
    if values["heap_bytes"] is None:
        values["heap_bytes"] = values["relpages"] * BLOCK
    return Relation.model_validate(values)


def toast_of(heap: Relation, oid: int, **fields: Any) -> Relation:
    return relation(
        oid, f"pg_toast_{heap.oid}", schema_name="pg_toast", kind="t", toast_of=heap.oid, **fields
    )


def changed(rel: Relation, **fields: Any) -> Relation:
    """The same relation later: the given fields changed."""
    return Relation.model_validate(rel.model_dump() | fields)


def autovacuum(relid: int) -> VacuumProgress:
    return VacuumProgress(
        pid=10_000 + relid,
        database="app",
        relid=relid,
        relation=None,
        is_autovacuum=True,
        phase="scanning heap",
        started=T0,
        heap_blks_total=100,
        heap_blks_scanned=10,
        heap_blks_vacuumed=0,
        index_vacuum_count=0,
        dead_tuples=0,
        indexes_total=0,
        indexes_processed=0,
        delay_time_ms=0.0,
    )


def snapshot(
    *tables: Table,
    seconds: float = 0.0,
    version: int = 180001,
    values: dict[str, str] | None = None,
    vacuums: tuple[VacuumProgress, ...] = (),
    exact: tuple[ExactBloat, ...] = (),
) -> Snapshot:
    base = PG18 if version >= 180000 else PG17
    return Snapshot(
        vacuumlab_version="0.1.0",
        taken_at=T0 + timedelta(seconds=seconds),
        server=server(version),
        settings=settings(base | (values or {})),
        tables=list(tables),
        vacuums=list(vacuums),
        exact=list(exact),
    )


def context(first: Snapshot, later: Snapshot | None = None) -> Context:
    return Context(first, later)


def run_recommendations(recs: list[Recommendation], database: str, admin: str) -> None:
    """Each statement as psql would send it: ALTER SYSTEM on the server (reset afterwards),
    ALTER TABLE in the test's own database."""
    for rec in recs:
        statement = rec.sql.split(" -- ")[0]
        target = admin if rec.scope == "server" else database
        execute(target, *[part + ";" for part in statement.split(";") if part.strip()])
        if rec.scope == "server":
            execute(
                admin,
                sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(rec.setting)),
                "SELECT pg_reload_conf()",
            )
