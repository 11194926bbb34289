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
import math
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, get_args

import psycopg
from psycopg import sql

from vacuumlab.collect.vacuum_log import VacuumReport, parse_report
from vacuumlab.errors import VacuumlabError
from vacuumlab.lab import SCHEMA, Planned, StoredConfig, StudyRun
from vacuumlab.pg.connect import Session, Timeouts, connect
from vacuumlab.pg.target import Target
from vacuumlab.store import Metric, Store
from vacuumlab.studies.cost_driver import Reporter, Silent, checkpoint
from vacuumlab.studies.toast_spec import (
    ARMS,
    DEFAULT_TOAST_TUPLE_TARGET,
    MAX_TOAST_TUPLE_TARGET,
    MAX_WIDTH,
    MIN_ROWS,
    MIN_TOAST_TUPLE_TARGET,
    MIN_WIDTH,
    PAGE_BYTES,
    PARTS,
    PLAIN_MAX_WIDTH,
    PRESETS,
    REL_FIELDS,
    REPORT_FIELDS,
    STORAGES,
    STUDY,
    Arm,
    Storage,
    parallel_params,
    rel_metric,
    storage_params,
    vacuum_metric,
    variant_label,
)

APPLICATION_NAME = "vacuumlab-toast"
#: The racing VACUUM sessions connect with this name: toast_waits.sql finds them by it.
RACE_APPLICATION_NAME = "vacuumlab-toast-race"
PARALLEL_TABLE = "toast_parallel"
#: Loading and vacuuming take their time; a lock held elsewhere gets a minute.
WORK = Timeouts(statement_ms=0, lock_ms=60_000)
#: The table session of the overlapping arm must wait as long as the TOAST session holds
#: the TOAST relation: that wait is what is measured.
RACE = Timeouts(statement_ms=0, lock_ms=0)
SAMPLE_INTERVAL_S = 0.02
#: A phase change is announced by a VERBOSE notice, and a wait that starts there can be
#: shorter than the interval on a small table: after each notice, sample closely for a while.
BURST_INTERVAL_S = 0.002
BURST_S = 0.04
#: How long the second session waits for the first to hold its lock before it starts anyway.
LOCK_WAIT_S = 10.0
MIN_VERSION_NUM = 150000


# -- configuration -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToastConfig(StoredConfig):
    """Everything a run depends on; stored with the run so ``--resume`` can rebuild it."""

    preset: str = "quick"
    rows: int = 50_000
    width: int = 4096
    storages: tuple[Storage, ...] = STORAGES
    toast_tuple_targets: tuple[int, ...] = (DEFAULT_TOAST_TUPLE_TARGET, 128)
    repeat: int = 1
    parallel: bool = True
    target: str = "sandbox"

    def variants(self) -> list[tuple[Storage, int]]:
        """(storage, toast_tuple_target) of every table: the targets apply to extended, the
        storage that both compresses and moves out of line, as in the post's example."""
        return [
            (storage, target)
            for storage in self.storages
            for target in (
                self.toast_tuple_targets if storage == "extended" else (DEFAULT_TOAST_TUPLE_TARGET,)
            )
        ]


def make_config(preset: str = "quick", **overrides: Any) -> ToastConfig:
    """A config from a preset with fields overridden (None keeps the preset's value). Plain
    storage is left out of a preset's storages when the width cannot be stored in a page."""
    if preset not in PRESETS:
        raise VacuumlabError(f"unknown preset {preset!r}; choose {', '.join(PRESETS)}")
    chosen = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(chosen) - set(ToastConfig.__dataclass_fields__))
    if unknown:
        raise VacuumlabError(f"unknown toast study setting(s): {', '.join(unknown)}")
    base = PRESETS[preset]
    config = ToastConfig(
        preset=preset,
        rows=base.rows,
        width=base.width,
        storages=base.storages,
        toast_tuple_targets=base.toast_tuple_targets,
        repeat=base.repeat,
        parallel=base.parallel,
    )
    config = replace(config, **chosen)
    if "storages" not in chosen and config.width > PLAIN_MAX_WIDTH:
        config = replace(config, storages=tuple(s for s in config.storages if s != "plain"))
    check(config)
    return config


def check(config: ToastConfig) -> None:
    """Refuse what cannot be measured, with a one-line reason."""
    unknown = sorted(set(config.storages) - set(get_args(Storage)))
    if unknown or len(set(config.storages)) != len(config.storages):
        raise VacuumlabError(f"storages are {', '.join(STORAGES)}, each once; not {unknown}")
    if not config.storages and not config.parallel:
        raise VacuumlabError("nothing to measure: choose a storage or the parallel experiment")
    if "plain" in config.storages and config.width > PLAIN_MAX_WIDTH:
        raise VacuumlabError(
            f"plain storage keeps the value in the heap tuple, which must fit one 8 kB page: "
            f"--width is at most {PLAIN_MAX_WIDTH:,} bytes with plain, not {config.width:,}"
        )
    _check_numbers(config)


def _check_numbers(config: ToastConfig) -> None:
    targets = config.toast_tuple_targets
    if not targets or any(
        not MIN_TOAST_TUPLE_TARGET <= t <= MAX_TOAST_TUPLE_TARGET for t in targets
    ):
        raise VacuumlabError(
            f"toast_tuple_target is between {MIN_TOAST_TUPLE_TARGET} and "
            f"{MAX_TOAST_TUPLE_TARGET} bytes (PostgreSQL's range)"
        )
    if len(set(targets)) != len(targets):
        raise VacuumlabError("each toast_tuple_target once")
    if not MIN_WIDTH <= config.width <= MAX_WIDTH:
        raise VacuumlabError(f"--width is between {MIN_WIDTH} and {MAX_WIDTH:,} bytes")
    if config.rows < MIN_ROWS:
        raise VacuumlabError(f"--rows must be at least {MIN_ROWS:,}")
    if config.repeat < 1:
        raise VacuumlabError("--repeat must be at least 1")


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


class ToastRun(StudyRun[ToastConfig, Reporter]):
    """One run of the matrix on one target."""

    study = STUDY

    def __init__(
        self,
        config: ToastConfig,
        target: Target,
        store: Store,
        reporter: Reporter | None = None,
        run_id: int | None = None,
    ) -> None:
        super().__init__(config, target, store, reporter, run_id)
        names = [table_name(s, t) for s, t in config.variants()]
        self.tables = (*names, PARALLEL_TABLE)

    def silent(self) -> Reporter:
        return Silent()

    def plan(self) -> list[Planned]:
        """Repetitions outermost, so drift in the machine spreads over every table."""
        c = self.config
        arms: tuple[Arm, ...] = ARMS if c.parallel else ()
        return [
            Planned(params, rep)
            for rep in range(c.repeat)
            for params in (
                *(storage_params(s, t, c.rows, c.width) for s, t in c.variants()),
                *(parallel_params(arm, c.rows, c.width) for arm in arms),
            )
        ]

    def validate(self) -> None:
        with _work_session(self.target) as s:
            if s.info.version_num < MIN_VERSION_NUM:
                raise VacuumlabError(
                    "the toast study needs PostgreSQL 15 or later (pg_stat_force_next_flush, "
                    f"VACUUM VERBOSE's report); the server is {s.info.major}"
                )
            if int(s.scalar("SELECT current_setting('block_size')::int")) != PAGE_BYTES:
                raise VacuumlabError("the toast study assumes 8 kB pages (block_size 8192)")
            checkpoint(s)  # says now, not after the first load, if CHECKPOINT is not allowed

    def measure(self, todo: list[Planned]) -> None:
        self.reporter.start(len(todo))
        for planned in todo:
            label = (
                f"{_label(planned.params)}, repetition "
                f"{planned.repetition + 1}/{self.config.repeat}"
            )
            self.reporter.point_started(label)
            started = _now()
            metrics = measure_point(self.target, planned.params, self.reporter)
            self.store.record_point(
                self.run_id or 0,
                planned.params,
                planned.repetition,
                metrics,
                started_at=started,
                ended_at=_now(),
            )
            self.reporter.point_finished(label, metrics)


def _label(p: Mapping[str, Any]) -> str:
    if p["experiment"] == "parallel":
        return f"parallel VACUUM, {p['arm']}"
    return variant_label(str(p["storage"]), int(p["toast_tuple_target"]))


def _now() -> datetime:
    return datetime.now(UTC)


def measure_point(target: Target, p: Mapping[str, Any], reporter: Reporter) -> dict[str, Metric]:
    """Measure one point; ``duration_wall_s`` is the whole point, set-up included."""
    clock = time.monotonic()
    if p["experiment"] == "parallel":
        metrics = measure_parallel(target, p, reporter)
    else:
        metrics = measure_storage(target, p, reporter)
    return metrics | {"duration_wall_s": time.monotonic() - clock}


# -- sessions, relations and reports -----------------------------------------------------------


@contextmanager
def _work_session(
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


def _stage(s: Session, oid: int, stage: str) -> dict[str, Metric]:
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


def _report_metrics(prefix: str, part: str, report: VacuumReport | None) -> dict[str, Metric]:
    return {vacuum_metric(prefix, part, name): _field(report, name) for name in REPORT_FIELDS}


def _field(report: VacuumReport | None, name: str) -> Metric:
    value: Metric = None if report is None else getattr(report, name)
    return value


# -- a storage point ---------------------------------------------------------------------------


def measure_storage(target: Target, p: Mapping[str, Any], reporter: Reporter) -> dict[str, Metric]:
    """Build the point's table, then UPDATE, VACUUM and FREEZE it; rebuild it and FREEZE the
    copy straight after its UPDATE. The table is dropped at the end: a paper-sized main table
    takes gigabytes."""
    storage, target_bytes = str(p["storage"]), int(p["toast_tuple_target"])
    table = sql.Identifier(SCHEMA, table_name(storage, target_bytes))
    rows, width = int(p["rows"]), int(p["width"])
    with _work_session(target) as s:
        notices = Notices()
        s.conn.add_notice_handler(notices)
        reporter.message(f"loading {rows:,} rows of {width:,} bytes, {storage} storage")
        oid = build(s, table, storage, target_bytes, rows, width)
        metrics = _steps(s, table, oid, notices)
        reporter.message("rebuilding the table to freeze it straight after its UPDATE")
        oid = build(s, table, storage, target_bytes, rows, width)
        metrics |= _freeze_rebuilt(s, table, oid, notices)
        s.execute(sql.SQL("DROP TABLE {}").format(table))
    return metrics


def _steps(s: Session, table: sql.Identifier, oid: int, notices: Notices) -> dict[str, Metric]:
    metrics: dict[str, Metric] = {
        "compressed_values": _compressed(s, table),
        "data_checksums": str(s.scalar("SELECT current_setting('data_checksums')")),
        "default_toast_compression": str(s.scalar("SHOW default_toast_compression")),
    }
    metrics |= _stage(s, oid, "loaded")
    metrics |= update(s, table)
    metrics |= _stage(s, oid, "updated")
    metrics |= vacuum(s, table, relations(s, oid), notices, "vacuum", freeze=False)
    metrics |= _stage(s, oid, "vacuumed")
    metrics |= vacuum(s, table, relations(s, oid), notices, "freeze_vacuumed", freeze=True)
    return metrics | _stage(s, oid, "frozen")


def _freeze_rebuilt(
    s: Session, table: sql.Identifier, oid: int, notices: Notices
) -> dict[str, Metric]:
    update(s, table)
    found = relations(s, oid)
    metrics: dict[str, Metric] = {
        f"rebuilt_{part}_bytes": found[part].bytes if part in found else None for part in PARTS
    }
    return metrics | vacuum(s, table, found, notices, "freeze_updated", freeze=True)


def build(
    s: Session, table: sql.Identifier, storage: str, toast_tuple_target: int, rows: int, width: int
) -> int:
    """(Re)create and fill the table; return its oid. Each value is a chain of md5 digests of
    the row's id, different for every row: hex digits in no repeating order, which pglz
    cannot shrink by the 25 % it requires (common/pg_lzcompress.c, min_comp_rate)."""
    if storage not in STORAGES:  # it becomes a keyword in the statement below
        raise VacuumlabError(f"unknown storage {storage!r}")
    s.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
    s.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
    s.execute(
        sql.SQL(
            "CREATE TABLE {} (id integer, age integer, name text) WITH (autovacuum_enabled ="
            " false, toast.autovacuum_enabled = false{})"
        ).format(table, _target_option(toast_tuple_target))
    )
    s.execute(
        sql.SQL("ALTER TABLE {} ALTER COLUMN name SET STORAGE {}").format(
            table, sql.SQL(storage.upper())
        )
    )
    s.execute(_fill(table, rows, width))
    return int(s.scalar("SELECT %s::regclass::oid::bigint", [table.as_string(s.conn)]))


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


def _compressed(s: Session, table: sql.Identifier) -> int:
    query = sql.SQL("SELECT count(*) FROM {} WHERE pg_column_compression(name) IS NOT NULL")
    return int(s.scalar(query.format(table)))


def update(s: Session, table: sql.Identifier) -> dict[str, Metric]:
    """Make everyone five years older, as the post does, and read the UPDATE's own buffers
    and WAL from EXPLAIN (ANALYZE, BUFFERS, WAL): the same counters as pg_stat_wal, for this
    statement alone. TIMING FALSE keeps the per-row clock reads out of the time."""
    checkpoint(s)
    lsn = s.scalar("SELECT pg_current_wal_lsn()::text")
    clock = time.monotonic()
    raw = s.scalar(
        sql.SQL(
            "EXPLAIN (ANALYZE, BUFFERS, WAL, TIMING FALSE, FORMAT JSON) UPDATE {} SET age = age + 5"
        ).format(table)
    )
    wall = time.monotonic() - clock
    moved = s.scalar("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)::bigint", [lsn])
    return _plan_metrics(json.loads(raw) if isinstance(raw, str) else raw, wall, int(moved))


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
        metrics |= _report_metrics(step, part, None if rel is None else rel.report(reports))
    return metrics


# -- the parallel experiment -------------------------------------------------------------------


def measure_parallel(target: Target, p: Mapping[str, Any], reporter: Reporter) -> dict[str, Metric]:
    """Prepare the table, race the arm's VACUUMs while sampling, return what was seen."""
    arm, rows, width = str(p["arm"]), int(p["rows"]), int(p["width"])
    table = sql.Identifier(SCHEMA, PARALLEL_TABLE)
    with _work_session(target) as s:
        reporter.message(f"loading {rows:,} rows for the parallel experiment ({arm})")
        oid = build(s, table, "extended", DEFAULT_TOAST_TUPLE_TARGET, rows, width)
        s.execute(sql.SQL("UPDATE {} SET age = age + 5").format(table))
        # The last quarter of the rows, whose values fill the end of the TOAST relation too:
        # both relations then end in empty pages that vacuum truncates (vacuumlazy.c,
        # should_attempt_truncation: at least 1/16 of the relation, REL_TRUNCATE_FRACTION).
        s.execute(sql.SQL("DELETE FROM {} WHERE id > {}").format(table, rows - rows // 4))
        before = relations(s, oid)
        if "toast" not in before:
            raise VacuumlabError(f"{SCHEMA}.{PARALLEL_TABLE} has no TOAST relation")
        checkpoint(s)
        race = _race(target, arm, table, before)
        after = relations(s, oid)
        s.execute(sql.SQL("DROP TABLE {}").format(table))
    return race.metrics(before, after)


@dataclass
class Racer:
    """One session running one VACUUM in a thread of its own."""

    role: str
    statement: sql.Composed
    text: str  # the statement as sent, kept while the connection is open
    session: Session
    notices: Notices
    pid: int = 0
    started: float | None = None
    ended: float | None = None
    error: BaseException | None = None
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=f"vacuum-{self.role}")
        self.started = time.monotonic()
        self.thread.start()

    def _run(self) -> None:
        try:
            self.session.execute(self.statement)
        except BaseException as exc:  # handed to the main thread, which raises it
            self.error = exc
        finally:
            self.ended = time.monotonic()

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def stop(self) -> None:
        """Cancel the statement if it still runs, then wait for the thread."""
        if self.running:
            self.session.conn.cancel_safe()
        if self.thread is not None:
            self.thread.join()


def _statements(arm: str, table: sql.Identifier, toast: Relation) -> list[tuple[str, sql.Composed]]:
    """(role, VACUUM) in starting order. FREEZE and VERBOSE as in the post."""
    own_toast = sql.SQL("VACUUM (FREEZE, VERBOSE) {}").format(toast.ident)
    whole = sql.SQL("VACUUM (FREEZE, VERBOSE) {}").format(table)
    # PROCESS_TOAST false (14+): the table's VACUUM leaves its TOAST relation alone.
    heap_only = sql.SQL("VACUUM (FREEZE, VERBOSE, PROCESS_TOAST FALSE) {}").format(table)
    if arm == "sequential":
        return [("table", whole)]
    if arm == "overlapping":
        return [("toast", own_toast), ("table", whole)]
    if arm == "separate":
        return [("toast", own_toast), ("table", heap_only)]
    raise VacuumlabError(f"unknown arm {arm!r}; choose {', '.join(ARMS)}")


@dataclass(frozen=True, slots=True)
class WaitRow:
    """One racing session in one sample (toast_waits.sql)."""

    pid: int
    state: str | None
    wait_event_type: str | None
    wait_event: str | None
    phase: str | None
    vacuum_relid: int | None
    lock_mode: str | None
    lock_relid: int | None
    blocked_by: list[int]


def _race(target: Target, arm: str, table: sql.Identifier, found: Mapping[str, Relation]) -> Race:
    """Start the TOAST session, and the table session as soon as the first holds its lock on
    the TOAST relation (so "together" does not depend on thread start-up); sample both until
    they end. An interruption cancels the VACUUMs before it propagates."""
    wake = threading.Event()
    with ExitStack() as stack:
        sampler = stack.enter_context(connect(target.dsn, application_name=APPLICATION_NAME))
        racers = [
            _racer(stack, target, role, statement, wake)
            for role, statement in _statements(arm, table, found["toast"])
        ]
        origin = time.monotonic()
        try:
            samples = _run_and_sample(sampler, racers, found["toast"].oid, wake)
        finally:
            for racer in racers:
                racer.stop()
        for racer in racers:
            if racer.error is not None:
                raise racer.error
    return Race(arm, origin, racers, samples, found)


def _racer(
    stack: ExitStack, target: Target, role: str, statement: sql.Composed, wake: threading.Event
) -> Racer:
    session = stack.enter_context(_work_session(target, RACE_APPLICATION_NAME, RACE))
    notices = Notices(wake)
    session.conn.add_notice_handler(notices)
    pid = int(session.scalar("SELECT pg_backend_pid()"))
    return Racer(role, statement, statement.as_string(session.conn), session, notices, pid)


def _run_and_sample(
    sampler: Session, racers: Sequence[Racer], toast_oid: int, wake: threading.Event
) -> list[tuple[float, list[WaitRow]]]:
    for k, racer in enumerate(racers):
        racer.start()
        if k < len(racers) - 1:
            _await_lock(sampler, racer, toast_oid)
    return _sample(sampler, racers, wake)


def _await_lock(sampler: Session, racer: Racer, oid: int) -> None:
    """Until the racer holds a lock on the relation, or ends, or LOCK_WAIT_S pass."""
    deadline = time.monotonic() + LOCK_WAIT_S
    query = "SELECT 1 FROM pg_locks WHERE pid = %s AND relation = %s::bigint::oid AND granted"
    while racer.running and time.monotonic() < deadline:
        if sampler.scalar(query, [racer.pid, oid]) is not None:
            return
        time.sleep(0.001)


def _sample(
    sampler: Session, racers: Sequence[Racer], wake: threading.Event
) -> list[tuple[float, list[WaitRow]]]:
    """Every SAMPLE_INTERVAL_S, and every BURST_INTERVAL_S for BURST_S after a notice."""
    samples: list[tuple[float, list[WaitRow]]] = []
    pids = {r.pid for r in racers}
    burst_until = 0.0
    while any(r.running for r in racers):
        now = time.monotonic()
        rows = [row for row in sampler.fetch("toast_waits", WaitRow) if row.pid in pids]
        samples.append((now, rows))
        if wake.is_set():
            wake.clear()
            burst_until = now + BURST_S
        wake.wait(BURST_INTERVAL_S if now < burst_until else SAMPLE_INTERVAL_S)
    return samples


# -- the timeline ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of one session in one state, from consecutive samples."""

    session: str
    start: float
    end: float
    category: str  # working, truncating, lock (a heavyweight lock wait), truncate-wait
    phase: str | None
    wait_event: str | None  # "type:event" for lock and truncate waits
    lock_mode: str | None
    relation: str | None  # "heap", "toast" or an oid
    granted: bool | None  # False while queued for lock_mode
    blocked_by: tuple[str, ...]


def category(row: WaitRow) -> str:
    """Lock: queued for a heavyweight lock. VacuumTruncate: retrying the AccessExclusiveLock
    that truncation needs, every 50 ms for up to 5 s (vacuumlazy.c, lazy_truncate_heap)."""
    if row.wait_event_type == "Lock":
        return "lock"
    if row.wait_event == "VacuumTruncate":
        return "truncate-wait"
    if row.phase == "truncating heap":
        return "truncating"
    return "working"


@dataclass
class Race:
    """What one arm saw: the sessions, the samples, and the relations they vacuumed."""

    arm: str
    origin: float
    racers: list[Racer]
    samples: list[tuple[float, list[WaitRow]]]
    found: Mapping[str, Relation]
    spans: list[Span] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.spans = self._spans()

    def _relation_label(self, oid: int | None) -> str | None:
        names = {rel.oid: part for part, rel in self.found.items()}
        return None if oid is None else names.get(oid, str(oid))

    def _span(self, role: str, t: float, row: WaitRow) -> Span:
        roles = {r.pid: r.role for r in self.racers}
        kind = category(row)
        waiting = kind in ("lock", "truncate-wait")
        return Span(
            session=role,
            start=t - self.origin,
            end=t - self.origin,
            category=kind,
            phase=row.phase,
            wait_event=f"{row.wait_event_type}:{row.wait_event}" if waiting else None,
            lock_mode=row.lock_mode,
            relation=self._relation_label(row.lock_relid if row.lock_mode else row.vacuum_relid),
            granted=False if row.lock_mode else None,
            blocked_by=tuple(roles.get(pid, f"pid {pid}") for pid in row.blocked_by),
        )

    def _spans(self) -> list[Span]:
        spans: list[Span] = []
        for racer in self.racers:
            spans += self._spans_of(racer)
        return spans

    def _spans_of(self, racer: Racer) -> list[Span]:
        """A state lasts from the sample that first shows it to the next sample (or to the
        end of the racer's statement): the timeline's resolution is the sampling interval."""
        spans: list[Span] = []
        open_span = False
        for t, rows in self.samples:
            if open_span:
                spans[-1] = replace(spans[-1], end=t - self.origin)
            row = next((r for r in rows if r.pid == racer.pid and r.state == "active"), None)
            if row is None:
                open_span = False
                continue
            span = self._span(racer.role, t, row)
            if open_span and _key(spans[-1]) == _key(span):
                spans[-1] = _merge(spans[-1], span)
            else:
                spans.append(span)
            open_span = True
        if open_span and racer.ended is not None:
            spans[-1] = replace(spans[-1], end=max(racer.ended - self.origin, spans[-1].end))
        return spans

    def metrics(
        self, before: Mapping[str, Relation], after: Mapping[str, Relation]
    ) -> dict[str, Metric]:
        metrics = self._times() | self._waits() | self._truncations()
        for role in ("toast", "table"):
            metrics |= self._reports(role)
        for part in PARTS:
            metrics[f"{part}_bytes_before"] = before[part].bytes if part in before else None
            metrics[f"{part}_bytes_after"] = after[part].bytes if part in after else None
            metrics[f"{part}_vacuum_truncate"] = (
                after[part].vacuum_truncate() if part in after else None
            )
        return metrics | {
            "samples": len(self.samples),
            "sample_interval_ms": SAMPLE_INTERVAL_S * 1000,
            "timeline_json": self.timeline_json(),
        }

    def _racer(self, role: str) -> Racer | None:
        return next((r for r in self.racers if r.role == role), None)

    def _times(self) -> dict[str, Metric]:
        ends = [r.ended for r in self.racers if r.ended is not None]
        metrics: dict[str, Metric] = {
            "wall_s": max(ends) - self.origin if ends else None,
            "toast_session_s": None,
            "table_session_s": None,
            "table_session_start_s": None,
        }
        for racer in self.racers:
            if racer.started is not None and racer.ended is not None:
                metrics[f"{racer.role}_session_s"] = racer.ended - racer.started
        table = self._racer("table")
        if table is not None and table.started is not None:
            metrics["table_session_start_s"] = table.started - self.origin
        return metrics

    def _waits(self) -> dict[str, Metric]:
        def total(kind: str, role: str | None = None) -> float:
            chosen = [s for s in self.spans if s.category == kind]
            return sum(s.end - s.start for s in chosen if role in (None, s.session))

        return {
            "lock_waits": sum(1 for s in self.spans if s.category == "lock"),
            "lock_wait_table_s": total("lock", "table"),
            "lock_wait_toast_s": total("lock", "toast"),
            "truncate_wait_s": total("truncate-wait"),
        }

    def _truncations(self) -> dict[str, Metric]:
        texts = [text for r in self.racers for _, text in r.notices.items]
        return {
            "truncations": sum(1 for t in texts if ": truncated " in t),
            "truncate_suspended": sum(1 for t in texts if t.startswith("suspending truncate")),
            "truncate_skipped": sum(1 for t in texts if "stopping truncate" in t),
        }

    def _reports(self, role: str) -> dict[str, Metric]:
        racer = self._racer(role)
        reports = [] if racer is None else racer.notices.reports()
        metrics: dict[str, Metric] = {}
        for part in PARTS:
            rel = self.found.get(part)
            report = None if rel is None else rel.report(reports)
            for name in ("elapsed_s", "pages_scanned", "pages_removed", "tuples_removed"):
                metrics[vacuum_metric(role, part, name)] = _field(report, name)
        return metrics

    def timeline_json(self) -> str:
        """Sessions, spans and the notices that mark phases, as one JSON string: the store
        holds numbers and strings, and a timeline is neither."""
        timeline = {
            "arm": self.arm,
            "interval_ms": SAMPLE_INTERVAL_S * 1000,
            "samples": len(self.samples),
            "sessions": [self._session(r) for r in self.racers],
            "spans": [_span_json(s) for s in self.spans],
            "notices": [n for r in self.racers for n in self._notices(r)],
        }
        return json.dumps(timeline, sort_keys=True, separators=(",", ":"))

    def _session(self, racer: Racer) -> dict[str, Any]:
        return {
            "role": racer.role,
            "pid": racer.pid,
            "statement": racer.text,
            "start": _rounded(racer.started, self.origin),
            "end": _rounded(racer.ended, self.origin),
        }

    def _notices(self, racer: Racer) -> list[dict[str, Any]]:
        return [
            {"session": racer.role, "t": _rounded(t, self.origin), "text": text.split("\n")[0]}
            for t, text in racer.notices.items
            if "vacuuming" in text or "truncate" in text
        ]


def _key(span: Span) -> tuple[object, ...]:
    """Samples with the same key make one span. A lock wait is one wait whatever each sample
    caught of it: pg_stat_activity and pg_locks are not read atomically, so a sample at its
    edge can see the wait event without the queued lock."""
    if span.category == "lock":
        return (span.category, span.wait_event)
    return (span.category, span.phase, span.wait_event, span.relation)


def _merge(span: Span, later: Span) -> Span:
    """The span with what a later sample of it adds: the lock it queues for, and everyone
    seen holding it up (pg_blocking_pids() reads empty as the holder commits)."""
    blockers = dict.fromkeys((*span.blocked_by, *later.blocked_by))
    return replace(
        span,
        lock_mode=span.lock_mode or later.lock_mode,
        relation=span.relation or later.relation,
        granted=span.granted if span.granted is not None else later.granted,
        blocked_by=tuple(blockers),
    )


def _rounded(t: float | None, origin: float) -> float | None:
    return None if t is None else round(t - origin, 4)


def _span_json(span: Span) -> dict[str, Any]:
    data = asdict(span)
    data["start"], data["end"] = round(span.start, 4), round(span.end, 4)
    data["blocked_by"] = list(span.blocked_by)
    return data
