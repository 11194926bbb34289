"""The TOAST study, after "Postgres Faster Vacuum-2 (TOAST impact on VACUUM)" (Medium, 2021): what
keeping wide values in the heap or out of line does to an UPDATE of a narrow column, to VACUUM
and to VACUUM FREEZE; and what happens when a table and its TOAST relation are vacuumed from two
sessions at once.

**A storage point** builds ``vacuumlab.toast_<storage>`` — ``(id int, age int, name text)``,
autovacuum off for the table and its TOAST relation — with ``name`` stored ``extended``,
``main``, ``external`` or ``plain`` (and, for extended, a ``toast_tuple_target``), and fills
it with ``rows`` different values of ``width`` bytes: md5 chains, which pglz cannot compress
(the point records how many values were compressed: none). Then, each after a CHECKPOINT so
every step starts with clean buffers and pays its own full-page images:

1. ``UPDATE … SET age = age + 5`` under ``EXPLAIN (ANALYZE, BUFFERS, WAL)``: its time, buffers
   and WAL (records, full-page images, bytes), and the WAL position it moved;
2. ``VACUUM (VERBOSE)``: its time and, per relation, the report (pages, buffers, WAL);
3. ``VACUUM (FREEZE, VERBOSE)`` right after it — freeze (b);
4. the table is rebuilt to the state before step 2 and frozen straight away — freeze (a).

Before and after the steps the heap and the TOAST relation are read apart (sizes, tuple
counts, visibility-map counts, freeze age), because autovacuum judges them apart.

**The parallel experiment** vacuums one extended table, whose UPDATE left dead tuples in the
heap and whose last quarter of rows was deleted so that both relations end in empty pages
that vacuum wants to truncate, in three arms: ``sequential`` (one VACUUM of the table, heap
then TOAST), ``overlapping`` (the post's: one session vacuums the TOAST relation by name, a
second the table, which includes its TOAST relation) and ``separate`` (the second uses
``PROCESS_TOAST false``, PostgreSQL 14+). A third session samples pg_stat_activity,
pg_stat_progress_vacuum and pg_locks every 20 ms (every 2 ms just after a VERBOSE notice,
where phases change) into a timeline of who waits for whom.

The wait in the overlapping arm is the post's and needs no help: a VACUUM of a table takes a
ShareUpdateExclusiveLock on its TOAST relation when it gets there (vacuum.c, vacuum_rel), that
lock conflicts with itself, and the TOAST relation of an out-of-line table is far larger than
its heap, so the table session is done with the heap long before the TOAST session is done
with the TOAST relation, and queues. The TOAST session is started first and the table session
the moment the first holds its lock, so "together" does not depend on thread start-up.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from psycopg import sql

from vacuumlab.collect import probes
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.connect import Session
from vacuumlab.pg.target import Target
from vacuumlab.records.toast import ParallelPoint, StoragePoint, ToastConfig, ToastPoint
from vacuumlab.records.toast_spec import (
    ARMS,
    DEFAULT_TOAST_TUPLE_TARGET,
    PAGE_BYTES,
    PARTS,
    PLAIN_MAX_WIDTH,
    STUDY,
    variant_label,
)
from vacuumlab.store import Metric
from vacuumlab.studies.base import SCHEMA, Measured, Planned, Progress, StudyRun
from vacuumlab.studies.shared import checkpoint
from vacuumlab.studies.toast_parallel import PARALLEL_TABLE, measure_parallel
from vacuumlab.studies.toast_tables import (
    Notices,
    Relation,
    build,
    relations,
    report_metrics,
    stage,
    work_session,
)

MIN_VERSION_NUM = 150000


def describe(config: ToastConfig) -> str:
    """One line: the matrix."""
    tables = ", ".join(variant_label(s, t) for s, t in config.variants()) or "no storage"
    parallel = " + parallel VACUUM of heap and TOAST (3 arms)" if config.parallel else ""
    dropped = (
        f" (plain left out: {config.width:,}-byte values do not fit a page)"
        if "plain" not in config.storages and config.width > PLAIN_MAX_WIDTH
        else ""
    )
    return (
        f"{config.rows:,} rows of {config.width:,} bytes × {tables}{dropped}{parallel}"
        f" × {config.repeat} repetition{'s' if config.repeat > 1 else ''}"
    )


def table_name(storage: str, toast_tuple_target: int) -> str:
    suffix = "" if toast_tuple_target == DEFAULT_TOAST_TUPLE_TARGET else f"_{toast_tuple_target}"
    return f"toast_{storage}{suffix}"


# -- the run -----------------------------------------------------------------------------------


class ToastRun(StudyRun[ToastConfig, ToastPoint]):
    """One run of the matrix on one target."""

    study = STUDY
    config_type = ToastConfig

    def own_tables(self) -> tuple[str, ...]:
        names = [table_name(s, t) for s, t in self.config.variants()]
        return (*names, PARALLEL_TABLE)

    def describe(self) -> str:
        return describe(self.config)

    def plan(self) -> list[Planned[ToastPoint]]:
        """Repetitions outermost, so drift in the machine spreads over every table."""
        c = self.config
        points: list[ToastPoint] = [StoragePoint(s, t, c.rows, c.width) for s, t in c.variants()]
        points += [ParallelPoint(arm, c.rows, c.width) for arm in (ARMS if c.parallel else ())]
        return [Planned(point, rep) for rep in range(c.repeat) for point in points]

    def validate(self) -> None:
        with work_session(self.target) as s:
            if s.info.version_num < MIN_VERSION_NUM:
                raise VacuumlabError(
                    "the toast study needs PostgreSQL 15 or later (pg_stat_force_next_flush, "
                    f"VACUUM VERBOSE's report); the server is {s.info.major}"
                )
            if probes.server_facts(s).block_size != PAGE_BYTES:
                raise VacuumlabError("the toast study assumes 8 kB pages (block_size 8192)")
            checkpoint(s)  # says now, not after the first load, if CHECKPOINT is not allowed

    def label(self, planned: Planned[ToastPoint]) -> str:
        p = planned.point
        what = (
            f"parallel VACUUM, {p.arm}"
            if isinstance(p, ParallelPoint)
            else variant_label(p.storage, p.toast_tuple_target)
        )
        return f"{what}, repetition {planned.repetition + 1}/{self.config.repeat}"

    def measure_point(self, planned: Planned[ToastPoint]) -> Measured:
        return Measured(measure_point(self.target, planned.point, self.progress))


def measure_point(target: Target, p: ToastPoint, progress: Progress) -> dict[str, Metric]:
    """Measure one point; ``duration_wall_s`` is the whole point, set-up included."""
    clock = time.monotonic()
    if isinstance(p, ParallelPoint):
        metrics = measure_parallel(target, p, progress)
    else:
        metrics = measure_storage(target, p, progress)
    return metrics | {"duration_wall_s": time.monotonic() - clock}


# -- a storage point ---------------------------------------------------------------------------


def measure_storage(target: Target, p: StoragePoint, progress: Progress) -> dict[str, Metric]:
    """Build the point's table, then UPDATE, VACUUM and FREEZE it; rebuild it and FREEZE the
    copy straight after its UPDATE. The table is dropped at the end: a paper-sized main table
    takes gigabytes."""
    storage, target_bytes = p.storage, p.toast_tuple_target
    table = sql.Identifier(SCHEMA, table_name(storage, target_bytes))
    rows, width = p.rows, p.width
    with work_session(target) as s:
        notices = Notices()
        s.conn.add_notice_handler(notices)
        progress.message(f"loading {rows:,} rows of {width:,} bytes, {storage} storage")
        oid = build(s, table, storage, target_bytes, rows, width)
        metrics = _steps(s, table, oid, notices)
        progress.message("rebuilding the table to freeze it straight after its UPDATE")
        oid = build(s, table, storage, target_bytes, rows, width)
        metrics |= _freeze_rebuilt(s, table, oid, notices)
        s.execute(sql.SQL("DROP TABLE {}").format(table))
    return metrics


def _steps(s: Session, table: sql.Identifier, oid: int, notices: Notices) -> dict[str, Metric]:
    facts = probes.server_facts(s)
    metrics: dict[str, Metric] = {
        "compressed_values": _compressed(s, table),
        "data_checksums": facts.data_checksums,
        "default_toast_compression": facts.default_toast_compression,
    }
    metrics |= stage(s, oid, "loaded")
    metrics |= update(s, table)
    metrics |= stage(s, oid, "updated")
    metrics |= vacuum(s, table, relations(s, oid), notices, "vacuum", freeze=False)
    metrics |= stage(s, oid, "vacuumed")
    metrics |= vacuum(s, table, relations(s, oid), notices, "freeze_vacuumed", freeze=True)
    return metrics | stage(s, oid, "frozen")


def _freeze_rebuilt(
    s: Session, table: sql.Identifier, oid: int, notices: Notices
) -> dict[str, Metric]:
    update(s, table)
    found = relations(s, oid)
    metrics: dict[str, Metric] = {
        f"rebuilt_{part}_bytes": found[part].bytes if part in found else None for part in PARTS
    }
    return metrics | vacuum(s, table, found, notices, "freeze_updated", freeze=True)


def _compressed(s: Session, table: sql.Identifier) -> int:
    query = sql.SQL("SELECT count(*) FROM {} WHERE pg_column_compression(name) IS NOT NULL")
    return int(s.scalar(query.format(table)))


def update(s: Session, table: sql.Identifier) -> dict[str, Metric]:
    """Make everyone five years older, as the post does, and read the UPDATE's own buffers
    and WAL from EXPLAIN (ANALYZE, BUFFERS, WAL): the same counters as pg_stat_wal, for this
    statement alone. TIMING FALSE keeps the per-row clock reads out of the time."""
    checkpoint(s)
    lsn = probes.wal_position(s).lsn
    clock = time.monotonic()
    raw = s.scalar(
        sql.SQL(
            "EXPLAIN (ANALYZE, BUFFERS, WAL, TIMING FALSE, FORMAT JSON) UPDATE {} SET age = age + 5"
        ).format(table)
    )
    wall = time.monotonic() - clock
    moved = probes.wal_position(s, lsn).bytes_since
    return _plan_metrics(json.loads(raw) if isinstance(raw, str) else raw, wall, moved)


def _plan_metrics(explained: Any, wall: float, moved: int) -> dict[str, Metric]:
    top = explained[0]
    plan = top["Plan"]
    execution_ms = top.get("Execution Time")
    return {
        "update_s": wall,
        "update_exec_s": None if execution_ms is None else execution_ms / 1000,
        "update_wal_records": plan.get("WAL Records"),
        "update_wal_fpi": plan.get("WAL FPI"),
        "update_wal_bytes": plan.get("WAL Bytes"),
        "update_lsn_bytes": moved,
        "update_buffers_hit": plan.get("Shared Hit Blocks"),
        "update_buffers_read": plan.get("Shared Read Blocks"),
        "update_buffers_dirtied": plan.get("Shared Dirtied Blocks"),
        "update_buffers_written": plan.get("Shared Written Blocks"),
    }


def vacuum(
    s: Session,
    table: sql.Identifier,
    found: Mapping[str, Relation],
    notices: Notices,
    step: str,
    *,
    freeze: bool,
) -> dict[str, Metric]:
    """One VACUUM (VERBOSE) of the table, which vacuums its TOAST relation too, after a
    CHECKPOINT; its time and each relation's report."""
    checkpoint(s)
    notices.items.clear()
    options = sql.SQL("FREEZE, VERBOSE" if freeze else "VERBOSE")
    clock = time.monotonic()
    s.execute(sql.SQL("VACUUM ({}) {}").format(options, table))
    metrics: dict[str, Metric] = {f"{step}_s": time.monotonic() - clock}
    reports = notices.reports()
    for part in PARTS:
        rel = found.get(part)
        metrics |= report_metrics(step, part, None if rel is None else rel.report(reports))
    return metrics
