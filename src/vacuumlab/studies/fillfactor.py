"""The fillfactor study, after "What is fillfactor and how does it affect PostgreSQL
performance?" (CYBERTEC blog, 2020): pgbench's TPC-B at data sizes relative to memory ×
fillfactor.

One point: ``pgbench -i -F fillfactor -s scale`` loads fresh tables, a CHECKPOINT, a warm-up
run, then the measured run. Every pgbench connection carries ``search_path=vacuumlab`` in its
options, so pgbench creates, fills and updates its tables inside schema vacuumlab, on the
sandbox and on a named server alike (pgbench names its tables unqualified).

"Memory" is ``shared_buffers``: on the sandbox the study sets it (a restart) and puts it back
at the end; on a named server it uses the server's own and changes nothing. The scale of each
size is computed from it (see ``fillfactor_spec``).

What a point records, over the measured run only: pgbench's TPS; the UPDATE of
pgbench_accounts from pg_stat_statements (mean and standard deviation of its calls); HOT and
new-page shares of the table's updates; autovacuum runs; buffer hits and reads; and the
table's and its index's size after loading and at the end.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from vacuumlab.collect import probes
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg import pgbench
from vacuumlab.pg.connect import Session, Timeouts, connect
from vacuumlab.pg.extensions import extension_schema
from vacuumlab.pg.target import Target
from vacuumlab.records.fillfactor import (
    Counters,
    FillfactorConfig,
    FillfactorPoint,
    StatementTimes,
    memory_bytes,
)
from vacuumlab.records.fillfactor_spec import SIZE_LABELS, STUDY, scale_for
from vacuumlab.studies.base import SCHEMA, Measured, Planned, Progress, StudyRun, work_session
from vacuumlab.studies.shared import checkpoint_if_allowed

ACCOUNTS = "pgbench_accounts"
#: pgbench's tables: dropped at the end on a named server (StudyRun._clean_up).
PGBENCH_TABLES = (ACCOUNTS, "pgbench_branches", "pgbench_tellers", "pgbench_history")
#: The statement whose time the post reports; pgbench's TPC-B sends it with this prefix.
UPDATE_PREFIX = "UPDATE pgbench_accounts SET abalance"
#: A backend hands its table counters to the statistics system when it exits; how long to
#: wait for pgbench's backends to do so after pgbench has ended.
STATS_WAIT_S = 10.0
#: Statements that load and checkpoint gigabytes run without the default 5 s limit.
LONG = Timeouts(statement_ms=0, lock_ms=5000)


def describe(config: FillfactorConfig) -> str:
    """One line: the matrix."""
    memory = config.shared_buffers or "the server's"
    return (
        f"sizes {'/'.join(config.sizes)} of shared_buffers {memory} × fillfactor "
        f"{'/'.join(map(str, config.fillfactors))} × {config.repeat} repetitions, "
        f"{config.seconds} s each ({config.warmup} s warm-up), {config.clients} clients"
    )


# -- pgbench ---------------------------------------------------------------------------------


def study_dsn(dsn: str) -> str:
    """``dsn`` with ``search_path=vacuumlab`` added to its options (any options it has are
    kept): pgbench then creates and uses its unqualified tables in schema vacuumlab."""
    options = conninfo_to_dict(dsn).get("options")
    extra = f"-c search_path={SCHEMA}"
    return make_conninfo(dsn, options=f"{options} {extra}" if options else extra)


def init_command(exe: Path, dsn: str, scale: int, fillfactor: int) -> list[str]:
    """``pgbench -i``: drop and create pgbench's tables, load, vacuum, add primary keys."""
    return [str(exe), "--initialize", "--quiet", f"--scale={scale}",
            f"--fillfactor={fillfactor}", study_dsn(dsn)]  # fmt: skip


def load_command(exe: Path, dsn: str, clients: int, jobs: int, seconds: int) -> list[str]:
    """The built-in TPC-B for ``seconds``; no vacuum first, the tables are fresh."""
    return [str(exe), "--no-vacuum", f"--client={clients}", f"--jobs={jobs}",
            f"--time={seconds}", study_dsn(dsn)]  # fmt: skip


_PROCESSED = re.compile(r"^number of transactions actually processed: (\d+)", re.MULTILINE)
_LATENCY = re.compile(r"^latency average = ([\d.]+) ms", re.MULTILINE)


def parse_transactions(output: str) -> int | None:
    match = _PROCESSED.search(output)
    return None if match is None else int(match[1])


def parse_latency(output: str) -> float | None:
    match = _LATENCY.search(output)
    return None if match is None else float(match[1])


# -- pg_stat_statements ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Moments:
    """Calls, total time and sum of squared deviations (ms²) of one statement's timings:
    what pg_stat_statements keeps (its stddev is sqrt(M2 / calls), pg_stat_statements.c)."""

    calls: int
    total_ms: float
    m2: float

    @property
    def mean_ms(self) -> float | None:
        return self.total_ms / self.calls if self.calls else None

    @property
    def stddev_ms(self) -> float | None:
        return (self.m2 / self.calls) ** 0.5 if self.calls else None

    def minus(self, before: Moments) -> Moments:
        """The calls made since ``before``: the inverse of the parallel-variance merge (Chan
        et al.), so no reset of the server's statistics is needed."""
        calls = self.calls - before.calls
        if before.calls == 0 or calls < 0:  # a new entry, or the statistics were reset since
            return self
        if calls == 0:
            return NO_CALLS
        total = self.total_ms - before.total_ms
        shift = before.total_ms / before.calls - total / calls
        m2 = self.m2 - before.m2 - shift**2 * before.calls * calls / self.calls
        return Moments(calls, total, max(m2, 0.0))

    def plus(self, other: Moments) -> Moments:
        """Both sets of calls together (the same merge, forwards)."""
        calls = self.calls + other.calls
        if not self.calls or not other.calls:
            return self if other.calls == 0 else other
        shift = self.total_ms / self.calls - other.total_ms / other.calls
        m2 = self.m2 + other.m2 + shift**2 * self.calls * other.calls / calls
        return Moments(calls, self.total_ms + other.total_ms, m2)


NO_CALLS = Moments(0, 0.0, 0.0)
StatementKey = tuple[int, int, bool]  # userid, queryid, toplevel


def moments_delta(
    before: Mapping[StatementKey, Moments], after: Mapping[StatementKey, Moments]
) -> Moments:
    """The calls made between two snapshots, over every matching entry. A new table gets a new
    queryid (the relation's OID is part of it), so each point's UPDATE is an entry of its own."""
    total = NO_CALLS
    for key, now in after.items():
        total = total.plus(now.minus(before.get(key, NO_CALLS)))
    return total


def read_statements(s: Session, schema: str) -> dict[StatementKey, Moments]:
    """The UPDATE's entries in pg_stat_statements, which lives in ``schema``."""
    params = {"prefix": UPDATE_PREFIX}
    rows = probes.fetch_in_schema(s, "statements", StatementTimes, schema, params)
    return {
        (r.userid, r.queryid, r.toplevel): Moments(
            r.calls, r.total_exec_time, r.stddev_exec_time**2 * r.calls
        )
        for r in rows
    }


def statements_schema(s: Session) -> tuple[str | None, bool]:
    """The schema of pg_stat_statements, installed in schema vacuumlab when the database
    lacks it; and whether the study created it. (None, False) when the server cannot provide
    it (not in shared_preload_libraries, or no right to create it): the UPDATE time is then
    not measured, and the run goes on."""
    schema = extension_schema(s, "pg_stat_statements")
    created = schema is None
    try:
        if created:
            _create_extension(s)
        schema = schema or SCHEMA
        read_statements(s, schema)  # fails without the preloaded library
    except psycopg.Error:
        if created:  # created, but unusable without the preloaded library: take it back
            with contextlib.suppress(psycopg.Error):
                s.execute("DROP EXTENSION IF EXISTS pg_stat_statements")
        return None, False
    return schema, created


def _create_extension(s: Session) -> None:
    s.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
    s.execute(
        sql.SQL("CREATE EXTENSION pg_stat_statements SCHEMA {}").format(sql.Identifier(SCHEMA))
    )


# -- table counters --------------------------------------------------------------------------


def read_counters(s: Session) -> Counters:
    [row] = s.fetch("hot_counters", Counters, {"schema": SCHEMA, "name": ACCOUNTS})
    return row


def _share(part: int | None, whole: int) -> float | None:
    return None if part is None or whole <= 0 else part / whole


def counter_metrics(before: Counters, after: Counters) -> dict[str, Any]:
    """What happened to the table between two readings."""
    upd = after.n_tup_upd - before.n_tup_upd
    hot = after.n_tup_hot_upd - before.n_tup_hot_upd
    newpage = (
        None
        if after.n_tup_newpage_upd is None or before.n_tup_newpage_upd is None
        else after.n_tup_newpage_upd - before.n_tup_newpage_upd
    )
    blocks = {
        name: getattr(after, name) - getattr(before, name)
        for name in ("heap_blks_hit", "heap_blks_read", "idx_blks_hit", "idx_blks_read")
    }
    hits = blocks["heap_blks_hit"] + blocks["idx_blks_hit"]
    reads = blocks["heap_blks_read"] + blocks["idx_blks_read"]
    return blocks | {
        "n_tup_upd": upd,
        "n_tup_hot_upd": hot,
        "n_tup_newpage_upd": newpage,
        "hot_share": _share(hot, upd),
        "newpage_share": _share(newpage, upd),
        "autovacuum_count": after.autovacuum_count - before.autovacuum_count,
        "hit_ratio": _share(hits, hits + reads),
    }


def size_metrics(loaded: Counters, end: Counters) -> dict[str, Any]:
    return {
        "table_bytes_init": loaded.heap_bytes,
        "table_bytes_end": end.heap_bytes,
        "index_bytes_init": loaded.index_bytes,
        "index_bytes_end": end.index_bytes,
        "table_growth": end.heap_bytes / loaded.heap_bytes - 1 if loaded.heap_bytes else None,
        "index_growth": end.index_bytes / loaded.index_bytes - 1 if loaded.index_bytes else None,
    }


def wait_for_counters(s: Session, before: Counters, transactions: int) -> Counters:
    """The counters once pgbench's backends have reported: every TPC-B transaction updates
    pgbench_accounts once, and backends flush their counts as they exit (pgstat.c)."""
    deadline = time.monotonic() + STATS_WAIT_S
    while True:
        now = read_counters(s)
        if now.n_tup_upd - before.n_tup_upd >= transactions or time.monotonic() > deadline:
            return now
        time.sleep(0.05)


# -- the run ---------------------------------------------------------------------------------


class FillfactorRun(StudyRun[FillfactorConfig, FillfactorPoint]):
    """One run of the matrix on one target."""

    study = STUDY
    config_type = FillfactorConfig
    tables = PGBENCH_TABLES

    #: shared_buffers in bytes, the schema of pg_stat_statements (None: not measured) and
    #: whether the study installed it: each learnt in validate().
    memory = 0
    _statements: str | None = None
    _created_extension = False

    def describe(self) -> str:
        return describe(self.config)

    def validate(self) -> None:
        self.config.check()
        self.memory = self._memory()
        with connect(self.target.dsn, read_only=False) as session:
            self._statements, self._created_extension = statements_schema(session)
        if self._statements is None:
            self.progress.message(
                "pg_stat_statements is not available: the UPDATE time is not measured"
            )

    def _memory(self) -> int:
        """The shared_buffers the sizes are multiples of, in bytes."""
        wanted = self.config.shared_buffers
        if wanted is None:
            with connect(self.target.dsn) as session:
                return probes.server_facts(session).shared_buffers_bytes
        if self.target.sandbox is None:
            raise VacuumlabError(
                "shared_buffers needs a restart and vacuumlab restarts only its sandbox; "
                "leave it unset to use the server's own"
            )
        self.target.check({"shared_buffers": wanted})
        return memory_bytes(wanted)

    def plan(self) -> list[Planned[FillfactorPoint]]:
        """Repetitions outermost, so drift in the machine spreads over every combination; the
        fillfactor order reverses every other repetition, so a drift within a repetition does
        not always favour the same fillfactor."""
        planned: list[Planned[FillfactorPoint]] = []
        for rep in range(self.config.repeat):
            order = self.config.fillfactors[:: -1 if rep % 2 else 1]
            for size in self.config.sizes:
                scale = scale_for(size, self.memory)
                planned += [Planned(FillfactorPoint(size, ff, scale), rep) for ff in order]
        return planned

    def prepare(self) -> None:
        """Restart the sandbox with the study's shared_buffers, unless it already has it."""
        wanted = self.config.shared_buffers
        if wanted is None:
            return
        with connect(self.target.dsn) as session:
            current = probes.server_facts(session).shared_buffers_bytes
        if current != memory_bytes(wanted):
            self.progress.message(f"restarting the sandbox with shared_buffers = {wanted}")
            self.target.apply({"shared_buffers": wanted})

    def label(self, planned: Planned[FillfactorPoint]) -> str:
        p = planned.point
        return (
            f"{SIZE_LABELS[p.size]} (scale {p.scale}), fillfactor {p.fillfactor}, "
            f"repetition {planned.repetition + 1}/{self.config.repeat}"
        )

    def measure_point(self, planned: Planned[FillfactorPoint]) -> Measured:
        point, schema = planned.point, self._statements
        return Measured(measure_point(self.target, self.config, point, schema, self.progress))

    def _clean_up(self) -> None:
        """On a named server, also remove pg_stat_statements if the study installed it."""
        if self.target.sandbox is None and self._created_extension:
            with work_session(self.target.dsn) as session:
                session.execute("DROP EXTENSION IF EXISTS pg_stat_statements")
        super()._clean_up()


# -- one point -------------------------------------------------------------------------------


def measure_point(
    target: Target,
    config: FillfactorConfig,
    p: FillfactorPoint,
    statements: str | None,
    progress: Progress,
) -> dict[str, Any]:
    """Load fresh tables for point ``p``, warm up, measure; return the metrics."""
    progress.message(f"loading scale {p.scale} at fillfactor {p.fillfactor}")
    init_s = _load(target, p.scale, p.fillfactor)
    with connect(target.dsn, read_only=False, timeouts=LONG) as s:
        loaded = read_counters(s)
        start = loaded
        if config.warmup:
            start = _pgbench_window(s, target, config, config.warmup, loaded)[0]
        before = read_statements(s, statements) if statements is not None else {}
        end, output = _pgbench_window(s, target, config, config.seconds - config.warmup, start)
        metrics = _summary(output, config) | counter_metrics(start, end)
        if statements is not None:
            metrics |= _update_metrics(moments_delta(before, read_statements(s, statements)))
        metrics |= size_metrics(loaded, end)
        memory = probes.server_facts(s).shared_buffers_bytes
        metrics |= {"shared_buffers_bytes": memory, "init_s": init_s}
    return metrics


def _load(target: Target, scale: int, fillfactor: int) -> float:
    """pgbench -i into schema vacuumlab, then a CHECKPOINT so every point starts alike."""
    with connect(target.dsn, read_only=False) as s:
        s.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
    clock = time.monotonic()
    pgbench.run_subprocess(init_command(target.pgbench, target.dsn, scale, fillfactor))
    elapsed = time.monotonic() - clock
    with connect(target.dsn, read_only=False, timeouts=LONG) as s:
        checkpoint_if_allowed(s)
    return elapsed


def _pgbench_window(
    s: Session, target: Target, config: FillfactorConfig, seconds: int, before: Counters
) -> tuple[Counters, str]:
    """Run TPC-B for ``seconds``; the counters once its backends have reported, and its
    output."""
    args = load_command(target.pgbench, target.dsn, config.clients, config.jobs, seconds)
    output = pgbench.run_subprocess(args)
    return wait_for_counters(s, before, parse_transactions(output) or 0), output


def _summary(output: str, config: FillfactorConfig) -> dict[str, Any]:
    return {
        "tps": pgbench.parse_tps(output),
        "transactions": parse_transactions(output),
        "latency_mean_ms": parse_latency(output),
        "measured_s": config.seconds - config.warmup,
        "warmup_s": config.warmup,
    }


def _update_metrics(moments: Moments) -> dict[str, Any]:
    return {
        "update_calls": moments.calls,
        "update_mean_ms": moments.mean_ms,
        "update_stddev_ms": moments.stddev_ms,
    }
