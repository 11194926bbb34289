"""The cost-driver study, after "PostgreSQL autovacuum internals, with a benchmark of dead
tuples against dirty pages" (Percona Community blog, 2026): is vacuum's cost driven by dead
tuples or by dirty pages?

One point: a fresh table of ``rows`` rows of 128 bytes, frozen (and checked frozen with
``pg_visibility_map_summary``), ``k`` redundant B-tree indexes on ``id``, then a DELETE of the
same number of rows either from the first pages (compact) or evenly from every page (spread).
After a CHECKPOINT, autovacuum is enabled on the table alone with threshold 1 and scale factor
0 (naptime 1s) and the study waits until that one autovacuum has finished. Autoanalyze is kept
out (its threshold is set out of reach), so only the vacuum is measured.

With ``--manual`` every point is measured a second time with ``VACUUM (VERBOSE, PARALLEL 0)``
and no cost delay: the same work unthrottled. PARALLEL 0, because autovacuum never vacuums
indexes in parallel and a manual VACUUM would.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from vacuumlab.collect import probes
from vacuumlab.collect.sampler import Sample
from vacuumlab.collect.vacuum_log import VacuumReport, parse_report, reports_in_log
from vacuumlab.errors import VacuumlabError
from vacuumlab.model.cost import CostSettings, throttle_seconds, vacuum_cost
from vacuumlab.pg.connect import Session, VersionTooOld, connect
from vacuumlab.pg.extensions import extension_schema
from vacuumlab.pg.target import Target
from vacuumlab.records.cost_driver import CostDriverConfig, CostDriverPoint, Distribution
from vacuumlab.records.cost_driver_spec import STUDY
from vacuumlab.records.probes import TableIo
from vacuumlab.records.snapshot import IoRow, Wal
from vacuumlab.studies.base import SCHEMA, Measured, Planned, Progress, StudyRun
from vacuumlab.studies.shared import checkpoint, recreate

TABLE = "bench_table"
#: Autoanalyze must not run inside the measurement: a threshold it cannot reach.
NO_ANALYZE = 2_000_000_000
POLL_SECONDS = 0.2
TIMEOUT_SECONDS = 3600.0
FREEZE_ATTEMPTS = 5
#: The cost settings the study reads from the server, as the model needs them.
COST_SETTINGS = (
    "vacuum_cost_page_hit",
    "vacuum_cost_page_miss",
    "vacuum_cost_page_dirty",
    "vacuum_cost_limit",
    "vacuum_cost_delay",
    "autovacuum_vacuum_cost_limit",
    "autovacuum_vacuum_cost_delay",
)


def delete_predicate(distribution: Distribution, dead_pct: int, rows: int) -> sql.Composed:
    """Which rows die. Compact: the first ids, which fill the first pages. Spread: every
    (100/dead_pct)-th id, so every page loses some rows; ``floor(id·p)`` rising by one picks
    exactly ``rows·p`` of them, evenly, for any share."""
    share = sql.Literal(dead_pct / 100)
    if distribution == "compact":
        return sql.SQL("id <= {}").format(sql.Literal(rows * dead_pct // 100))
    return sql.SQL("floor(id * {0}) > floor((id - 1) * {0})").format(share)


class CostDriverRun(StudyRun[CostDriverConfig, CostDriverPoint]):
    """One run of the matrix on one target."""

    study = STUDY
    config_type = CostDriverConfig
    tables = (TABLE,)

    def describe(self) -> str:
        """One line: the matrix."""
        c = self.config
        return (
            f"{c.rows:,} rows × {'/'.join(c.distributions)} × dead "
            f"{'/'.join(map(str, c.dead_pcts))} % × indexes "
            f"{'/'.join(map(str, c.indexes))} × {c.repeat} repetitions"
            f"{' + manual VACUUM' if c.manual else ''}"
            f"{f', {c.work_mem} for dead tuple ids' if c.work_mem else ''}"
        )

    def plan(self) -> list[Planned[CostDriverPoint]]:
        """Repetitions outermost, so drift in the machine spreads over every combination."""
        c = self.config
        return [
            Planned(CostDriverPoint(dist, dead, k, c.rows, mode), rep)
            for rep in range(c.repeat)
            for dist in c.distributions
            for dead in c.dead_pcts
            for k in c.indexes
            for mode in c.modes()
        ]

    def settings(self) -> dict[str, str]:
        """The server-wide settings the run needs: a 1 s naptime and, with ``work_mem``,
        the memory every vacuum keeps its dead tuple ids in."""
        settings = {"autovacuum_naptime": "1s"}
        if self.config.work_mem is not None:
            settings["autovacuum_work_mem"] = self.config.work_mem
            settings["maintenance_work_mem"] = self.config.work_mem
        return settings

    def validate(self) -> None:
        self.target.check(self.settings())
        with connect(self.target.dsn, read_only=False) as session:
            _visibility_schema(session)  # installs pg_visibility, or says why it cannot

    def prepare(self) -> None:
        self.target.apply(self.settings())

    def label(self, planned: Planned[CostDriverPoint]) -> str:
        p = planned.point
        return (
            f"{p.distribution} {p.dead_pct} % dead, {p.indexes} indexes"
            f"{' (manual VACUUM)' if p.mode == 'manual' else ''}"
            f", repetition {planned.repetition + 1}/{self.config.repeat}"
        )

    def measure_point(self, planned: Planned[CostDriverPoint]) -> Measured:
        return Measured(measure_point(self.target, planned.point, self.progress))


# -- one point -----------------------------------------------------------------------------------


def measure_point(target: Target, p: CostDriverPoint, progress: Progress) -> dict[str, Any]:
    """Set up the table for point ``p``, measure one vacuum of it, return the metrics."""
    with connect(target.dsn, read_only=False, application_name="vacuumlab-cost-driver") as s:
        s.conn.execute("SET statement_timeout = 0")  # loading and vacuuming take their time
        visibility = _visibility_schema(s)
        table = sql.Identifier(SCHEMA, TABLE)
        progress.message(f"loading {p.rows:,} rows and freezing them")
        heap_pages, attempts, oid = _load_frozen(s, table, visibility, p.rows, p.indexes)
        deleted = _delete(s, table, oid, p)
        before_vm = probes.visibility_map(s, visibility, oid)
        metrics: dict[str, Any] = {
            "heap_pages": heap_pages,
            "dead_tuples": deleted,
            "dirty_pages": heap_pages - before_vm.all_visible,
            "dirty_pct": (
                100 * (heap_pages - before_vm.all_visible) / heap_pages if heap_pages else None
            ),
            "vm_all_visible_before": before_vm.all_visible,
            "vm_all_frozen_before": before_vm.all_frozen,
            "freeze_attempts": attempts,
        }
        checkpoint(s)
        if target.sandbox is not None:
            _reset_shared_counters(s)
        before = _Counters.read(s, oid)
        if p.mode == "manual":
            report, wall, elapsed = _manual_vacuum(s, table, oid)
            metrics |= {"duration_wall_s": wall, "duration_stats_s": elapsed}
        else:
            report, wall, stats_s = _autovacuum(s, table, oid, target)
            metrics |= {"duration_wall_s": wall, "duration_stats_s": stats_s}
        checkpoint(s)  # so the writes vacuum left to the checkpointer are counted
        after = _Counters.settled(s, oid)
        after_vm = probes.visibility_map(s, visibility, oid)
        settings = probes.settings(s, COST_SETTINGS)
    metrics |= {"vm_all_visible_after": after_vm.all_visible}
    metrics |= {"vm_all_frozen_after": after_vm.all_frozen}
    metrics |= before.delta(after)
    metrics |= _report_metrics(report)
    metrics |= _cost_metrics(settings, report, manual=p.mode == "manual")
    return metrics


def _load_frozen(
    s: Session, table: sql.Identifier, visibility: str, rows: int, indexes: int
) -> tuple[int, int, int]:
    """Recreate and fill the table, freeze it until every page is all-visible and
    all-frozen (a snapshot open elsewhere can stop that: retry), then build the indexes.
    Returns its pages, the attempts and its oid."""
    recreate(
        s,
        table,
        sql.SQL(
            "(id integer NOT NULL, val integer NOT NULL DEFAULT 0, padding text NOT NULL)"
            " WITH (autovacuum_enabled = false)"
        ),
    )
    s.execute(
        sql.SQL(
            "INSERT INTO {} (id, padding) SELECT i, repeat('x', 96) FROM generate_series(1, {}) i"
        ).format(table, sql.Literal(rows))
    )
    for attempt in range(1, FREEZE_ATTEMPTS + 1):
        s.execute(sql.SQL("VACUUM (FREEZE) {}").format(table))
        rel = probes.relation_size(s, f"{SCHEMA}.{TABLE}")
        pages = rel.pages
        if probes.visibility_map(s, visibility, rel.oid).settled(pages):
            break
        time.sleep(0.5 * attempt)
    else:
        raise VacuumlabError(
            f"{SCHEMA}.{TABLE} stayed not all-frozen after {FREEZE_ATTEMPTS} VACUUM FREEZE: "
            "a long transaction or a replication slot holds the xmin horizon"
        )
    for _ in range(indexes):
        s.execute(sql.SQL("CREATE INDEX ON {} (id)").format(table))
    return pages, attempt, rel.oid


def _delete(s: Session, table: sql.Identifier, oid: int, p: CostDriverPoint) -> int:
    """Delete the point's rows, then wait until the statistics system has the dead tuples
    (a backend flushes its counts asynchronously; autovacuum reads them from there)."""
    predicate = delete_predicate(p.distribution, p.dead_pct, p.rows)
    cur = s.conn.execute(sql.SQL("DELETE FROM {} WHERE {}").format(table, predicate))
    deleted = cur.rowcount
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        dead = probes.dead_tuples(s, oid)
        if dead is not None and dead >= deleted:
            break
        time.sleep(0.1)
    return deleted


def _visibility_schema(s: Session) -> str:
    """The schema of pg_visibility, installing it in schema vacuumlab if needed."""
    schema = extension_schema(s, "pg_visibility")
    if schema is None:
        try:
            s.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
            s.execute(
                sql.SQL("CREATE EXTENSION pg_visibility SCHEMA {}").format(sql.Identifier(SCHEMA))
            )
        except psycopg.Error as exc:
            raise VacuumlabError(
                f"the study needs the pg_visibility extension: {exc.diag.message_primary}"
            ) from None
        schema = SCHEMA
    return schema


def _reset_shared_counters(s: Session) -> None:
    """Zero the shared I/O, bgwriter, checkpointer and WAL counters, as the post does, so the
    server's own views read as this vacuum alone. The metrics are before/after differences
    either way; a named server is never reset, because its monitoring relies on them."""
    targets = {"bgwriter": 130000, "wal": 140000, "io": 160000, "checkpointer": 170000}
    for name, since in targets.items():
        if s.info.version_num >= since:
            s.execute("SELECT pg_stat_reset_shared(%s)", [name])


# -- the vacuum itself ---------------------------------------------------------------------------


def _autovacuum(
    s: Session, table: sql.Identifier, oid: int, target: Target
) -> tuple[VacuumReport | None, float, float | None]:
    """Let autovacuum take the table, wait for it, and read its own account."""
    log_offset = _log_size(target)
    start = s.scalar("SELECT clock_timestamp()")
    counters = _sample(s, oid)
    clock = time.monotonic()
    s.execute(
        sql.SQL(
            "ALTER TABLE {} SET (autovacuum_enabled = true, autovacuum_vacuum_threshold = 1,"
            " autovacuum_vacuum_scale_factor = 0, autovacuum_analyze_threshold = {})"
        ).format(table, sql.Literal(NO_ANALYZE))
    )
    while True:
        sample = _sample(s, oid)
        if (
            sample.last_autovacuum is not None
            and sample.last_autovacuum > start
            and (sample.n_dead_tup == 0)
        ):
            break
        if time.monotonic() - clock > TIMEOUT_SECONDS:
            raise VacuumlabError(f"autovacuum did not finish {SCHEMA}.{TABLE} within an hour")
        time.sleep(POLL_SECONDS)
    wall = time.monotonic() - clock
    s.execute(sql.SQL("ALTER TABLE {} SET (autovacuum_enabled = false)").format(table))
    stats_s = None
    if (
        sample.total_autovacuum_time_ms is not None
        and counters.total_autovacuum_time_ms is not None
    ):
        stats_s = (sample.total_autovacuum_time_ms - counters.total_autovacuum_time_ms) / 1000
    return _logged_report(target, log_offset, s.info.database), wall, stats_s


def _sample(s: Session, oid: int) -> Sample:
    [sample] = s.fetch("sampler", Sample, {"relid": oid})
    return sample


def _log_size(target: Target) -> int | None:
    if target.sandbox is None:
        return None
    try:
        return target.sandbox.log_path.stat().st_size
    except OSError:
        return None


def _logged_report(target: Target, offset: int | None, database: str) -> VacuumReport | None:
    """The autovacuum's log entry: on the sandbox only (a named server's log is not ours).
    The entry is written as the worker finishes; give it a moment to reach the file."""
    if target.sandbox is None or offset is None:
        return None
    relation = f"{database}.{SCHEMA}.{TABLE}"
    for _ in range(20):
        with target.sandbox.log_path.open("rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", errors="replace")
        reports = reports_in_log(text, relation)
        if reports:
            return reports[-1]
        time.sleep(0.1)
    return None


def _manual_vacuum(
    s: Session, table: sql.Identifier, oid: int
) -> tuple[VacuumReport | None, float, float | None]:
    """The same work by hand, unthrottled: VACUUM (VERBOSE, PARALLEL 0), cost delay 0.

    It runs on a connection of its own that then closes: a busy backend keeps its I/O counts
    to itself, and only a backend that ends (or idles) hands them to the statistics system.
    """
    notices: list[str] = []
    before = probes.table_io(s, oid)
    with connect(s.dsn, read_only=False, application_name="vacuumlab-cost-driver") as own:
        own.conn.add_notice_handler(lambda n: notices.append(n.message_primary or ""))
        own.execute("SET statement_timeout = 0")
        own.execute("SET vacuum_cost_delay = 0")
        clock = time.monotonic()
        own.execute(sql.SQL("VACUUM (VERBOSE, PARALLEL 0) {}").format(table))
        wall = time.monotonic() - clock
    deadline = time.monotonic() + 5
    while probes.table_io(s, oid) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    finished = [n for n in notices if n.startswith("finished vacuuming") and f'.{TABLE}"' in n]
    report = parse_report(finished[-1]) if finished else None
    return report, wall, report.elapsed_s if report else None


# -- counters ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Counters:
    """Cumulative counters read before and after a vacuum; the metrics are the differences."""

    statio: TableIo
    io: list[IoRow] | None
    wal: Wal | None

    @classmethod
    def read(cls, s: Session, oid: int) -> _Counters:
        try:
            io: list[IoRow] | None = s.fetch("io", IoRow)
        except VersionTooOld:
            io = None
        [wal] = s.fetch("wal", Wal)
        return cls(probes.table_io(s, oid), io, wal)

    @classmethod
    def settled(
        cls, s: Session, oid: int, *, pause_s: float = 0.3, within_s: float = 5.0
    ) -> _Counters:
        """The counters once pg_stat_io stops moving: each process's I/O statistics reach
        shared memory when it flushes them, which on a busy server came after the CHECKPOINT
        had returned (the writes were then missing from the point)."""
        read = cls.read(s, oid)
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            time.sleep(pause_s)
            again = cls.read(s, oid)
            if again.io == read.io:
                return again
            read = again
        return read

    def delta(self, after: _Counters) -> dict[str, Any]:
        metrics: dict[str, Any] = dict(after.statio.minus(self.statio))
        metrics |= _io_delta(self.io, after.io)
        if self.wal and after.wal and self.wal.wal_bytes is not None and after.wal.wal_bytes:
            metrics |= {
                "wal_records": (after.wal.wal_records or 0) - (self.wal.wal_records or 0),
                "wal_fpi": (after.wal.wal_fpi or 0) - (self.wal.wal_fpi or 0),
                "wal_bytes": after.wal.wal_bytes - self.wal.wal_bytes,
            }
        return metrics


def _io_delta(before: list[IoRow] | None, after: list[IoRow] | None) -> dict[str, Any]:
    """Pages of tables and indexes by who did the I/O, from pg_stat_io differences (16+;
    bytes / 8192). From 18 pg_stat_io counts WAL too (object 'wal'): left out, as the WAL a
    vacuum writes is measured on its own (wal_bytes)."""
    if before is None or after is None:
        return {}

    def total(rows: Iterable[IoRow], kinds: set[str] | None, field: str) -> float:
        chosen = [
            r for r in rows if r.object != "wal" and (kinds is None or r.backend_type in kinds)
        ]
        return float(sum(getattr(r, field) or 0 for r in chosen))

    def diff(kinds: set[str] | None, field: str) -> float:
        return total(after, kinds, field) - total(before, kinds, field)

    worker, checkpointer, bgwriter = {"autovacuum worker"}, {"checkpointer"}, {"background writer"}
    written = diff(None, "write_bytes") / 8192
    by_worker = diff(worker, "write_bytes") / 8192
    by_checkpointer = diff(checkpointer, "write_bytes") / 8192
    by_bgwriter = diff(bgwriter, "write_bytes") / 8192
    return {
        "worker_read_pages": diff(worker, "read_bytes") / 8192,
        "worker_hits": diff(worker, "hits"),
        "worker_write_pages": by_worker,
        "writes_worker_pages": by_worker,
        "writes_checkpointer_pages": by_checkpointer,
        "writes_bgwriter_pages": by_bgwriter,
        "writes_other_pages": written - by_worker - by_checkpointer - by_bgwriter,
    }


def _report_metrics(report: VacuumReport | None) -> dict[str, Any]:
    if report is None:
        return {}
    metrics: dict[str, Any] = {
        "duration_log_s": report.elapsed_s,
        "delay_time_s": None if report.delay_ms is None else report.delay_ms / 1000,
        "pages_scanned": report.pages_scanned,
        "pages_removed": report.pages_removed,
        "tuples_removed": report.tuples_removed,
        "index_scans": report.index_scans,
        "index_pages_total": sum(i.pages_total for i in report.indexes),
        "index_pages_newly_deleted": sum(i.newly_deleted for i in report.indexes),
        "buffer_hits": report.buffer_hits,
        "buffer_reads": report.buffer_reads,
        "buffer_dirtied": report.buffer_dirtied,
    }
    # The vacuum's own WAL, when it reported it, beats the server-wide difference.
    for name in ("wal_records", "wal_fpi", "wal_bytes"):
        value = getattr(report, name)
        if value is not None:
            metrics[name] = value
    return metrics


def _cost_metrics(
    settings: Mapping[str, str], report: VacuumReport | None, *, manual: bool
) -> dict[str, Any]:
    """The server's cost settings and what they predict for the vacuum's buffer usage."""
    cost = CostSettings.for_manual(settings) if manual else CostSettings.for_autovacuum(settings)
    metrics: dict[str, Any] = {
        "cost_page_hit": cost.page_hit,
        "cost_page_miss": cost.page_miss,
        "cost_page_dirty": cost.page_dirty,
        "cost_limit": cost.limit,
        "cost_delay_ms": cost.delay_ms,
    }
    if report is not None and None not in (
        report.buffer_hits,
        report.buffer_reads,
        report.buffer_dirtied,
    ):
        total = vacuum_cost(
            report.buffer_hits or 0, report.buffer_reads or 0, report.buffer_dirtied or 0, cost
        )
        metrics |= {"predicted_cost": total, "predicted_delay_s": throttle_seconds(total, cost)}
    return metrics
