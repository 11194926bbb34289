"""The TOAST study's tables as both of its experiments see them: writing sessions, VERBOSE
notices, the heap and its TOAST relation read apart, and how a table is built."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import psycopg
from psycopg import sql

from vacuumlab.collect import probes
from vacuumlab.collect.vacuum_log import VacuumReport, parse_report
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.connect import Session, Timeouts, connect
from vacuumlab.pg.target import Target
from vacuumlab.records.toast_spec import (
    DEFAULT_TOAST_TUPLE_TARGET,
    PARTS,
    REL_FIELDS,
    REPORT_FIELDS,
    STORAGES,
    rel_metric,
    vacuum_metric,
)
from vacuumlab.store import Metric
from vacuumlab.studies.base import WORK
from vacuumlab.studies.shared import recreate

APPLICATION_NAME = "vacuumlab-toast"


@contextmanager
def work_session(
    target: Target, name: str = APPLICATION_NAME, timeouts: Timeouts = WORK
) -> Iterator[Session]:
    """A writing session whose VERBOSE reports are in English where the role may say so
    (lc_messages is superuser-only; the sandbox's is C already)."""
    with connect(target.dsn, read_only=False, timeouts=timeouts, application_name=name) as s:
        with suppress(psycopg.errors.InsufficientPrivilege):
            s.execute("SET lc_messages = 'C'")
        yield s


class Notices:
    """The notices of one session with their arrival time (monotonic clock); each one may
    also wake a sampler. Called by psycopg from the thread that runs the statement."""

    def __init__(self, wake: threading.Event | None = None) -> None:
        self.items: list[tuple[float, str]] = []
        self.wake = wake

    def __call__(self, diag: psycopg.errors.Diagnostic) -> None:
        self.items.append((time.monotonic(), diag.message_primary or ""))
        if self.wake is not None:
            self.wake.set()

    def reports(self) -> list[VacuumReport]:
        return [parse_report(m) for _, m in self.items if m.startswith("finished vacuuming")]


@dataclass(frozen=True, slots=True)
class Relation:
    """The table or its TOAST relation, as toast_relations.sql reads it."""

    part: str
    oid: int
    schema_name: str
    name: str
    bytes: int
    relpages: int
    relallvisible: int
    relallfrozen: int | None
    n_live_tup: int | None
    n_dead_tup: int | None
    frozenxid_age: int
    reloptions: str | None

    @property
    def ident(self) -> sql.Identifier:
        return sql.Identifier(self.schema_name, self.name)

    def report(self, reports: Sequence[VacuumReport]) -> VacuumReport | None:
        """This relation's report: VERBOSE names it "database.schema.relation"."""
        found = [r for r in reports if r.relation.endswith(f".{self.schema_name}.{self.name}")]
        return found[-1] if found else None

    def vacuum_truncate(self) -> str:
        """The vacuum_truncate reloption ("default" when unset): off means no truncation."""
        for option in (self.reloptions or "").split(","):
            name, _, value = option.partition("=")
            if name == "vacuum_truncate":
                return value
        return "default"


def relations(s: Session, oid: int) -> dict[str, Relation]:
    """The heap and, if it has one, its TOAST relation, by part."""
    rows = s.fetch("toast_relations", Relation, {"relid": oid})
    return {r.part: r for r in rows}


def stage(s: Session, oid: int, stage: str) -> dict[str, Metric]:
    """Both relations at one stage. The statistics a backend gathers are handed to shared
    memory at most once a second; pg_stat_force_next_flush() (15+) hands ours over now."""
    s.execute("SELECT pg_stat_force_next_flush()")
    found = relations(s, oid)
    metrics: dict[str, Metric] = {}
    for part in PARTS:
        rel = found.get(part)
        for name in REL_FIELDS:
            metrics[rel_metric(part, name, stage)] = None if rel is None else getattr(rel, name)
    return metrics


def report_metrics(prefix: str, part: str, report: VacuumReport | None) -> dict[str, Metric]:
    return {vacuum_metric(prefix, part, name): report_field(report, name) for name in REPORT_FIELDS}


def report_field(report: VacuumReport | None, name: str) -> Metric:
    value: Metric = None if report is None else getattr(report, name)
    return value


def build(
    s: Session, table: sql.Identifier, storage: str, toast_tuple_target: int, rows: int, width: int
) -> int:
    """(Re)create and fill the table; return its oid. Each value is a chain of md5 digests of
    the row's id, different for every row: hex digits in no repeating order, which pglz
    cannot shrink by the 25 % it requires (common/pg_lzcompress.c, min_comp_rate)."""
    if storage not in STORAGES:  # it becomes a keyword in the statement below
        raise VacuumlabError(f"unknown storage {storage!r}")
    recreate(
        s,
        table,
        sql.SQL(
            "(id integer, age integer, name text) WITH (autovacuum_enabled = false,"
            " toast.autovacuum_enabled = false{})"
        ).format(_target_option(toast_tuple_target)),
    )
    s.execute(
        sql.SQL("ALTER TABLE {} ALTER COLUMN name SET STORAGE {}").format(
            table, sql.SQL(storage.upper())
        )
    )
    s.execute(_fill(table, rows, width))
    return probes.relation_size(s, table.as_string(s.conn)).oid


def _target_option(toast_tuple_target: int) -> sql.Composable:
    if toast_tuple_target == DEFAULT_TOAST_TUPLE_TARGET:
        return sql.SQL("")  # the post's tables: no reloption at all
    return sql.SQL(", toast_tuple_target = {}").format(sql.Literal(toast_tuple_target))


def _fill(table: sql.Identifier, rows: int, width: int) -> sql.Composed:
    return sql.SQL(
        "INSERT INTO {} (id, age, name) SELECT i, 20 + i % 50, left((SELECT string_agg("
        "md5(i::text || ':' || j::text), '') FROM generate_series(1, {}) AS j), {})"
        " FROM generate_series(1, {}) AS i"
    ).format(table, sql.Literal(math.ceil(width / 32)), sql.Literal(width), sql.Literal(rows))
