"""The churn study, after "Optimizing Postgres's Auto-Vacuum for Blazingly-High-Churn Tables"
(Tembo blog, 2023): a queue table under a sequence of autovacuum settings.

Every pgbench transaction inserts a row, takes the oldest row with ``FOR UPDATE SKIP LOCKED``,
updates it and deletes it: one ``DO`` block, as in the post, so a transaction that finds no row
simply deletes nothing and the client never aborts. The table starts with a backlog because a
latency sawtooth needs one: with an empty queue the dead tuples saw-tooth, the latency barely.

Each step (and repetition) is one point in the results store, written in one transaction when
the step ends: an interrupted run keeps every finished step and ``--resume`` runs the rest.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import psycopg
from psycopg import sql

from vacuumlab.collect.sampler import Sample, Sampler, autovacuum_runs
from vacuumlab.errors import VacuumlabError
from vacuumlab.lab import SCHEMA, Planned, StudyRun
from vacuumlab.pg import pgbench
from vacuumlab.pg.connect import connect
from vacuumlab.pg.settings import load_specs, to_base_unit
from vacuumlab.pg.target import Target
from vacuumlab.stats import analysis
from vacuumlab.studies.churn_spec import POST_STEPS, PRESETS, STUDY, Step

TABLE = "bencher"

#: The post's DO block, on vacuumlab's own schema. ``updated_at < now()`` skips the row this
#: transaction just inserted (now() is the transaction's start time).
SCRIPT = """DO $$
DECLARE
    rec_id bigint;
BEGIN
    INSERT INTO vacuumlab.bencher (updated_at) VALUES (now());
    WITH next AS (
        SELECT record_id FROM vacuumlab.bencher
         WHERE updated_at < now()
         ORDER BY record_id
         LIMIT 1
           FOR UPDATE SKIP LOCKED
    )
    UPDATE vacuumlab.bencher b SET updated_at = now()
      FROM next WHERE b.record_id = next.record_id
    RETURNING b.record_id INTO rec_id;
    DELETE FROM vacuumlab.bencher WHERE record_id = rec_id;
END $$;
"""

#: Settings a step may set on the table itself (reloptions); the rest are server-wide only.
TABLE_SETTINGS = frozenset(
    {
        "autovacuum_enabled",
        "autovacuum_vacuum_threshold",
        "autovacuum_vacuum_max_threshold",
        "autovacuum_vacuum_scale_factor",
        "autovacuum_vacuum_insert_threshold",
        "autovacuum_vacuum_insert_scale_factor",
        "autovacuum_analyze_threshold",
        "autovacuum_analyze_scale_factor",
        "autovacuum_vacuum_cost_delay",
        "autovacuum_vacuum_cost_limit",
        "autovacuum_freeze_min_age",
        "autovacuum_freeze_max_age",
        "autovacuum_freeze_table_age",
        "log_autovacuum_min_duration",
        "vacuum_index_cleanup",
        "vacuum_truncate",
        "fillfactor",
    }
)


@dataclass(frozen=True, slots=True)
class ChurnConfig:
    """Everything a churn run depends on; stored with the run, so ``--resume`` can rebuild it."""

    steps: tuple[Step, ...] = POST_STEPS
    preset: str = "quick"
    seconds: int = 90
    warmup: int = 10
    backlog: int = 100_000
    clients: int = 4
    jobs: int = 2
    repeat: int = 1
    continuous: bool = False
    target: str = "sandbox"

    def params(self) -> dict[str, Any]:
        data = asdict(self)
        data["steps"] = [
            {"number": n, "name": s.name, "scope": s.scope, "settings": dict(s.settings)}
            for n, s in enumerate(self.steps, start=1)
        ]
        return data

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> ChurnConfig:
        steps = tuple(Step(s["name"], dict(s["settings"]), s["scope"]) for s in params["steps"])
        known = {k: v for k, v in params.items() if k in cls.__dataclass_fields__}
        return cls(**(known | {"steps": steps}))


def machine_clients() -> tuple[int, int]:
    """Clients and pgbench threads for this machine: four clients per core, a thread per core.

    Measured on 2 cores (backlog 100,000, 8 s each): 2 clients 3,489 tps, 4 clients 4,238,
    8 clients 5,455, 16 clients 5,199 — past four per core, clients only queue.
    """
    cores = os.cpu_count() or 2
    return 4 * cores, cores


def make_config(
    preset: str = "quick",
    *,
    steps: tuple[Step, ...] | None = None,
    **overrides: Any,
) -> ChurnConfig:
    """A config from a preset, with any field overridden (None leaves the preset's value)."""
    if preset not in PRESETS:
        raise VacuumlabError(f"unknown preset {preset!r}; choose {', '.join(PRESETS)}")
    base = PRESETS[preset]
    clients, jobs = machine_clients()
    config = ChurnConfig(
        steps=steps or POST_STEPS,
        preset=preset,
        seconds=base.seconds,
        warmup=base.warmup,
        backlog=base.backlog,
        clients=base.clients or clients,
        jobs=min(jobs, base.clients or clients),
    )
    config = replace(config, **{k: v for k, v in overrides.items() if v is not None})
    if config.warmup >= config.seconds:
        raise VacuumlabError(f"--warmup ({config.warmup} s) must be shorter than --seconds")
    if min(config.seconds, config.clients, config.jobs, config.repeat) < 1:
        raise VacuumlabError("--seconds, --clients, --jobs and --repeat must be at least 1")
    if config.backlog < 0:
        raise VacuumlabError("--backlog must not be negative")
    return replace(config, jobs=min(config.jobs, config.clients))


def load_steps(path: Path) -> tuple[Step, ...]:
    """Steps from a TOML file: ``[[step]]`` tables with ``name``, ``scope`` and ``settings``.

    Example::

        [[step]]
        name = "aggressive queue"
        scope = "table"            # or "server" (the default)
        settings = { autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0 }
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise VacuumlabError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise VacuumlabError(f"{path} is not valid TOML: {exc}") from None
    entries = data.get("step")
    if not isinstance(entries, list) or not entries:
        raise VacuumlabError(f"{path} has no [[step]] tables")
    return tuple(_step(entry, number, path) for number, entry in enumerate(entries, start=1))


def _step(entry: object, number: int, path: Path) -> Step:
    where = f"{path}: step {number}"
    if not isinstance(entry, dict):
        raise VacuumlabError(f"{where} is not a table")
    name, scope, settings = entry.get("name"), entry.get("scope", "server"), entry.get("settings")
    if not isinstance(name, str) or not name.strip():
        raise VacuumlabError(f"{where} has no name")
    if scope not in ("server", "table"):
        raise VacuumlabError(f'{where}: scope must be "server" or "table", not {scope!r}')
    if not isinstance(settings, dict) or not settings:
        raise VacuumlabError(f"{where} has no settings")
    values = {str(k): _toml_value(v, where) for k, v in settings.items()}
    return Step(name.strip(), values, scope)


def _toml_value(value: object, where: str) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int | float | str):
        return str(value)
    raise VacuumlabError(f"{where}: setting values must be strings, numbers or booleans")


# -- progress ----------------------------------------------------------------------------------


class Reporter(Protocol):
    """What a run tells whoever watches it (the CLI draws a progress bar from it)."""

    def step_started(self, label: str, seconds: int) -> None: ...
    def tick(self, elapsed: float, tps: float | None, dead: int | None) -> None: ...
    def step_finished(self, label: str, metrics: Mapping[str, Any]) -> None: ...
    def message(self, text: str) -> None: ...


class Silent:
    """A reporter that says nothing."""

    def step_started(self, label: str, seconds: int) -> None:
        pass

    def tick(self, elapsed: float, tps: float | None, dead: int | None) -> None:
        pass

    def step_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        pass

    def message(self, text: str) -> None:
        pass


# -- the run -----------------------------------------------------------------------------------


class ChurnRun(StudyRun[ChurnConfig, Reporter]):
    """One run of the study on one target, recording into one store."""

    study = STUDY
    tables = (TABLE,)

    def silent(self) -> Reporter:
        return Silent()

    def plan(self) -> list[Planned]:
        return [
            Planned(_step_params(n, step), rep)
            for rep in range(self.config.repeat)
            for n, step in enumerate(self.config.steps, start=1)
        ]

    def measure(self, todo: list[Planned]) -> None:
        fresh_table = True
        for planned in todo:
            number = int(planned.params["step"])
            step = self.config.steps[number - 1]
            label = f"step {number}/{len(self.config.steps)}: {step.name}"
            if self.config.repeat > 1:
                label += f" (repetition {planned.repetition + 1}/{self.config.repeat})"
            self._prepare(step, fresh_table or not self.config.continuous)
            fresh_table = False
            self._measure(number, step, planned.repetition, label)

    def validate(self) -> None:
        """Check every step's settings before anything is measured."""
        for step in self.config.steps:
            if step.scope == "server":
                self.target.check(step.settings)
            else:
                self._check_table_settings(step)

    def _check_table_settings(self, step: Step) -> None:
        unknown = sorted(set(step.settings) - TABLE_SETTINGS)
        if unknown:
            raise VacuumlabError(
                f"step {step.name!r}: {', '.join(unknown)} cannot be set per table; "
                'use scope = "server"'
            )
        # Let PostgreSQL judge the values, on a temporary table that vanishes with the session.
        with psycopg.connect(self.target.dsn, autocommit=True) as conn:
            try:
                conn.execute(
                    sql.SQL("CREATE TEMP TABLE vacuumlab_check (id int) WITH ({})").format(
                        self._reloptions(step)
                    )
                )
            except psycopg.Error as exc:
                raise VacuumlabError(f"step {step.name!r}: {exc.diag.message_primary}") from None

    def _reloptions(self, step: Step) -> sql.Composed:
        """``name = value`` pairs; values with units become the number PostgreSQL expects,
        because reloptions take no units (``10ms`` is ``10`` for cost_delay)."""
        with connect(self.target.dsn) as session:
            specs = load_specs(session)
        parts = []
        for name, value in step.settings.items():
            spec = specs.get(name)
            if spec is not None and spec.vartype in ("integer", "real"):
                number = to_base_unit(spec, value)
                value = str(int(number)) if number.is_integer() else str(number)
            parts.append(sql.SQL("{} = {}").format(sql.Identifier(name), sql.Literal(value)))
        return sql.SQL(", ").join(parts)

    def _prepare(self, step: Step, recreate: bool) -> None:
        """Settings first, then (unless continuous) a fresh table with the same backlog."""
        if step.scope == "server":
            self.target.apply(step.settings)
        if recreate:
            self.reporter.message(f"loading {self.config.backlog:,} backlog rows")
            _create_table(self.target.dsn, self.config.backlog)
        if step.scope == "table":
            execute_sql(
                self.target.dsn,
                sql.SQL("ALTER TABLE {} SET ({})").format(
                    sql.Identifier(SCHEMA, TABLE), self._reloptions(step)
                ),
            )

    def _measure(self, number: int, step: Step, repetition: int, label: str) -> None:
        assert self.run_id is not None
        directory = self.artifacts / f"step-{number}-rep-{repetition}"
        # Logs left by an attempt that was interrupted belong to no stored point (the last
        # line of each may be cut off): a step starts from an empty log directory.
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        script = directory / "churn.sql"
        script.write_text(SCRIPT, encoding="utf-8")
        load = pgbench.Load(
            script=script,
            clients=self.config.clients,
            jobs=self.config.jobs,
            seconds=self.config.seconds,
            log_prefix=directory / "pgbench_log",
            progress=True,
        )
        self.reporter.step_started(label, self.config.seconds)
        result = _run_load(self.target, load, self.reporter)
        metrics, series = summarize_step(result, self.config)
        self.store.record_point(
            self.run_id,
            _step_params(number, step),
            repetition,
            metrics,
            started_at=result.started_at,  # the moment the load started: t = 0 of the series
            ended_at=datetime.now(UTC),
            series=series,
        )
        self.reporter.step_finished(label, metrics)


def _step_params(number: int, step: Step) -> dict[str, Any]:
    return {"step": number, "name": step.name, "scope": step.scope, "settings": step.settings}


def execute_sql(dsn: str, *statements: sql.SQL | sql.Composed) -> None:
    with psycopg.connect(dsn, autocommit=True, application_name="vacuumlab") as conn:
        for statement in statements:
            conn.execute(statement)


def _create_table(dsn: str, backlog: int) -> None:
    """A fresh queue table with ``backlog`` rows, vacuumed and analysed, then a CHECKPOINT,
    so every step starts from the same state."""
    table = sql.Identifier(SCHEMA, TABLE)
    execute_sql(
        dsn,
        sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)),
        sql.SQL("DROP TABLE IF EXISTS {}").format(table),
        sql.SQL("CREATE TABLE {} (record_id bigserial PRIMARY KEY, updated_at timestamptz)").format(
            table
        ),
        sql.SQL("CREATE INDEX ON {} (updated_at)").format(table),
        sql.SQL(
            "INSERT INTO {} (updated_at) "
            "SELECT now() - interval '1 hour' FROM generate_series(1, {})"
        ).format(table, sql.Literal(backlog)),
        sql.SQL("VACUUM (ANALYZE) {}").format(table),
    )
    # CHECKPOINT needs superuser or pg_checkpoint (15+); without it the run goes on.
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
        execute_sql(dsn, sql.SQL("CHECKPOINT"))


def _table_oid(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT %s::regclass::oid::bigint", [f"{SCHEMA}.{TABLE}"]).fetchone()
    assert row is not None
    return int(row[0])


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What one step's load left: the transactions, the samples, and when it started."""

    transactions: analysis.Transactions
    samples: list[Sample]
    load_start: float  # epoch seconds
    started_at: datetime


def _run_load(target: Target, load: pgbench.Load, reporter: Reporter) -> LoadResult:
    sampler = Sampler(target.dsn, _table_oid(target.dsn)).start()
    tps: list[float] = []

    def on_line(line: str) -> None:
        progress = pgbench.parse_progress(line)
        if progress is not None:
            tps.append(progress[1])
            latest = sampler.latest
            reporter.tick(progress[0], progress[1], latest.n_dead_tup if latest else None)

    started_at = datetime.now(UTC)
    load_start = started_at.timestamp()
    process = pgbench.Process(pgbench.command(target.pgbench, load, target.dsn), on_line)
    try:
        process.wait()
    finally:
        process.terminate()
        samples = sampler.stop()
    assert load.log_prefix is not None
    transactions = analysis.read_pgbench_logs(pgbench.log_files(load.log_prefix))
    return LoadResult(transactions, samples, load_start, started_at)


Series = dict[str, list[tuple[float, float | None]]]


def summarize_step(result: LoadResult, config: ChurnConfig) -> tuple[dict[str, Any], Series]:
    """Metrics and per-second series of one step, from its transactions and samples."""
    start = result.load_start
    summary = analysis.summarize(result.transactions, start + config.warmup, start + config.seconds)
    per_second = analysis.per_second(result.transactions, start, config.seconds)
    series: Series = {
        "tps": _pairs(per_second.t, per_second.tps),
        "latency_mean_ms": _pairs(per_second.t, per_second.latency_mean_ms),
        "latency_p50_ms": _pairs(per_second.t, per_second.latency_p50_ms),
        "latency_p95_ms": _pairs(per_second.t, per_second.latency_p95_ms),
        "latency_p99_ms": _pairs(per_second.t, per_second.latency_p99_ms),
        "latency_max_ms": _pairs(per_second.t, per_second.latency_max_ms),
    }
    series |= _sampler_series(result.samples, result.started_at)
    runs = autovacuum_runs(result.samples, result.started_at)
    series["autovacuum"] = [(r.start, r.duration) for r in runs]
    metrics = _metrics(summary, config) | _sample_metrics(result.samples)
    ends = [r.start + r.duration for r in runs]
    metrics["autovacuum_count"] = len(runs)
    metrics["sawtooth_amplitude"] = analysis.sawtooth_amplitude(
        per_second.t, per_second.latency_mean_ms, ends
    )
    dead_t, dead = _arrays(series["n_dead_tup"])
    metrics["latency_dead_correlation"] = analysis.correlation(
        per_second.t, per_second.latency_mean_ms, dead_t, dead
    )
    return metrics, series


def _metrics(summary: analysis.Summary, config: ChurnConfig) -> dict[str, Any]:
    return {
        "transactions": summary.transactions,
        "failed": summary.failed,
        "duration_s": summary.duration_s,
        "warmup_s": config.warmup,
        "tps": summary.tps,
        "tps_ci_low": summary.tps_ci.low,
        "tps_ci_high": summary.tps_ci.high,
        "latency_mean_ms": summary.latency_mean_ms,
        "latency_mean_ci_low": summary.latency_mean_ci.low,
        "latency_mean_ci_high": summary.latency_mean_ci.high,
        "latency_stddev_ms": summary.latency_stddev_ms,
        "latency_p50_ms": summary.latency_p50_ms,
        "latency_p95_ms": summary.latency_p95_ms,
        "latency_p99_ms": summary.latency_p99_ms,
        "latency_p99_ci_low": summary.latency_p99_ci.low,
        "latency_p99_ci_high": summary.latency_p99_ci.high,
    }


def _sample_metrics(samples: Sequence[Sample]) -> dict[str, Any]:
    if not samples:
        return {}
    first, last = samples[0], samples[-1]
    dead = [s.n_dead_tup for s in samples if s.n_dead_tup is not None]
    return {
        "dead_tuples_peak": max(dead) if dead else None,
        "heap_bytes_start": first.heap_bytes,
        "heap_bytes_end": last.heap_bytes,
        "index_bytes_start": first.index_bytes,
        "index_bytes_end": last.index_bytes,
        "toast_bytes_start": first.toast_bytes,
        "toast_bytes_end": last.toast_bytes,
        "autovacuum_read_bytes": _delta(first.autovacuum_read_bytes, last.autovacuum_read_bytes),
        "autovacuum_write_bytes": _delta(first.autovacuum_write_bytes, last.autovacuum_write_bytes),
    }


def _delta(first: int | None, last: int | None) -> int | None:
    return None if first is None or last is None else last - first


def _sampler_series(samples: Sequence[Sample], origin: datetime) -> Series:
    """Sampler values against seconds since the load started; I/O as the delta since then."""
    if not samples:
        return {}
    t = [(s.at - origin).total_seconds() for s in samples]
    read0 = samples[0].autovacuum_read_bytes
    write0 = samples[0].autovacuum_write_bytes
    columns: dict[str, Callable[[Sample], float | None]] = {
        "n_dead_tup": lambda s: s.n_dead_tup,
        "n_live_tup": lambda s: s.n_live_tup,
        "heap_bytes": lambda s: s.heap_bytes,
        "index_bytes": lambda s: s.index_bytes,
        "toast_bytes": lambda s: s.toast_bytes,
        "vacuum_running": lambda s: s.vacuum_running,
        "autovacuum_read_bytes": lambda s: _delta(read0, s.autovacuum_read_bytes),
        "autovacuum_write_bytes": lambda s: _delta(write0, s.autovacuum_write_bytes),
    }
    return {name: list(zip(t, map(get, samples), strict=True)) for name, get in columns.items()}


def _pairs(
    t: np.ndarray[Any, Any], values: np.ndarray[Any, Any]
) -> list[tuple[float, float | None]]:
    """Series rows; NaN (a second without transactions) is stored as NULL."""
    return [
        (float(x), None if math.isnan(float(y)) else float(y))
        for x, y in zip(t, values, strict=True)
    ]


def _arrays(rows: Sequence[tuple[float, float | None]]) -> tuple[Any, Any]:
    t = np.array([r[0] for r in rows], dtype=np.float64)
    v = np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=np.float64)
    return t, v
