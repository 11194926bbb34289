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

import math
import shutil
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from vacuumlab.collect import probes
from vacuumlab.collect.sampler import Sample, Sampler, autovacuum_runs
from vacuumlab.errors import VacuumlabError
from vacuumlab.model.knobs import KNOBS
from vacuumlab.pg import pgbench
from vacuumlab.pg.connect import connect
from vacuumlab.pg.settings import load_specs, to_base_unit
from vacuumlab.pg.target import Target
from vacuumlab.records.churn import ChurnConfig, ChurnPoint, Step
from vacuumlab.records.churn_spec import STUDY
from vacuumlab.records.params import Config
from vacuumlab.stats import analysis
from vacuumlab.studies.base import (
    SCHEMA,
    Measured,
    Planned,
    Progress,
    Series,
    StudyRun,
    work_session,
)
from vacuumlab.studies.shared import checkpoint_if_allowed

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
TABLE_SETTINGS = frozenset(name for name, k in KNOBS.items() if "table" in k.scopes)


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


# -- the run -----------------------------------------------------------------------------------


class ChurnRun(StudyRun[ChurnConfig, ChurnPoint]):
    """One run of the study on one target, recording into one store."""

    study = STUDY
    config_type = ChurnConfig
    tables = (TABLE,)
    _fresh_table = True

    def describe(self) -> str:
        c = self.config
        return (
            f"{len(c.steps)} steps × {c.seconds} s, "
            f"{c.clients} clients, {c.jobs} threads, backlog {c.backlog:,}"
        )

    def plan(self) -> list[Planned[ChurnPoint]]:
        return [
            Planned(ChurnPoint(n, step), rep)
            for rep in range(self.config.repeat)
            for n, step in enumerate(self.config.steps, start=1)
        ]

    def label(self, planned: Planned[ChurnPoint]) -> str:
        point = planned.point
        label = f"step {point.number}/{len(self.config.steps)}: {point.step.name}"
        if self.config.repeat > 1:
            label += f" (repetition {planned.repetition + 1}/{self.config.repeat})"
        return label

    @classmethod
    def side_by_side(cls, config: Config) -> str | None:
        if isinstance(config, ChurnConfig) and config.continuous:
            return "churn's --continuous steps share one table: they run one after another"
        return None

    def seconds(self, planned: Planned[ChurnPoint]) -> int:
        return self.config.seconds

    def measure_point(self, planned: Planned[ChurnPoint]) -> Measured:
        """Set the step up, run its load, summarise it; the point starts when the load does
        (t = 0 of its series)."""
        point = planned.point
        self._prepare(point.step, self._fresh_table or not self.config.continuous)
        self._fresh_table = False
        result = _run_load(self.target, self._load(point, planned.repetition), self.progress)
        metrics, series = summarize_step(result, self.config)
        return Measured(metrics, series, started_at=result.started_at)

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
        with work_session(self.target.dsn) as session:
            try:
                session.execute(
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
            self.progress.message(f"loading {self.config.backlog:,} backlog rows")
            _create_table(self.target.dsn, self.config.backlog)
        if step.scope == "table":
            execute_sql(
                self.target.dsn,
                sql.SQL("ALTER TABLE {} SET ({})").format(
                    sql.Identifier(SCHEMA, TABLE), self._reloptions(step)
                ),
            )

    def _load(self, point: ChurnPoint, repetition: int) -> pgbench.Load:
        """The step's pgbench load, logging into an empty directory of its own: logs left by
        an interrupted attempt belong to no stored point (the last line of each may be cut
        off)."""
        directory = self.artifacts / f"step-{point.number}-rep-{repetition}"
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        script = directory / "churn.sql"
        script.write_text(SCRIPT, encoding="utf-8")
        return pgbench.Load(
            script=script,
            clients=self.config.clients,
            jobs=self.config.jobs,
            seconds=self.config.seconds,
            log_prefix=directory / "pgbench_log",
            progress=True,
        )


def execute_sql(dsn: str, *statements: sql.SQL | sql.Composed) -> None:
    with work_session(dsn) as session:
        for statement in statements:
            session.execute(statement)


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
    with work_session(dsn) as session:
        checkpoint_if_allowed(session)


def _table_oid(dsn: str) -> int:
    with connect(dsn) as session:
        return probes.relation_size(session, f"{SCHEMA}.{TABLE}").oid


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What one step's load left: the transactions, the samples, and when it started."""

    transactions: analysis.Transactions
    samples: list[Sample]
    load_start: float  # epoch seconds
    started_at: datetime


def _run_load(target: Target, load: pgbench.Load, progress: Progress) -> LoadResult:
    """Run the load while the sampler polls the table; live TPS (pgbench's own) and dead
    tuples (the sampler's) go to the progress display."""
    sampler = Sampler(target.dsn, _table_oid(target.dsn)).start()

    def on_line(line: str) -> None:
        seen = pgbench.parse_progress(line)
        if seen is not None:
            latest = sampler.latest
            live = {"tps": seen[1], "dead tuples": latest.n_dead_tup if latest else None}
            progress.tick(seen[0], live)

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
