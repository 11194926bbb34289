"""The custom study: a user's own table and workload on the lab's server, under settings
steps. The workload is a captured profile (``vacuumlab capture``), replayed with synthetic rows
and one pgbench script per statement class at the captured rates (``custom_replay.py``), or a
schema file and pgbench scripts the user wrote.

Each step starts from the same state: the server's settings as they were before the run plus
the step's own, the tables built and loaded afresh, vacuumed, analysed and checkpointed. It
measures what the churn study measures of the busiest table (``workload.py``), and every
table's change rates from ``pg_stat_all_tables`` over the whole load: counters reach shared
memory when a backend flushes them, and every pgbench backend has exited (and flushed) at the
end, so the whole load is the window measured exactly. For a profile, the captured rates
times ``--scale`` are stored beside them; for every step, what it ran with, read back.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import psycopg
from psycopg import conninfo, sql

from vacuumlab.errors import VacuumlabError
from vacuumlab.pg import pgbench
from vacuumlab.pg.connect import connect
from vacuumlab.records.churn import ChurnPoint, Step
from vacuumlab.records.custom import CustomConfig
from vacuumlab.records.custom_spec import (
    CAPTURE_SECONDS,
    RATE_SECONDS,
    RATES,
    SAMPLED_TABLE,
    STUDY,
    Rate,
    rate_metric,
)
from vacuumlab.records.profile import Profile
from vacuumlab.store import Metric
from vacuumlab.studies.base import SCHEMA, Measured, Planned, StudyRun, work_session
from vacuumlab.studies.custom_columns import KEY_SEQUENCE
from vacuumlab.studies.custom_replay import ReplayPlan, plan
from vacuumlab.studies.shared import checkpoint_if_allowed
from vacuumlab.studies.steps import (
    check_steps,
    plan_steps,
    read_in_force,
    set_on_tables,
    step_label,
)
from vacuumlab.studies.workload import run_load, summarize_step


@dataclass(frozen=True, slots=True)
class Counters:
    """One table's change counters at one moment."""

    oid: int
    name: str
    inserts: int
    updates: int
    hot_updates: int
    deletes: int
    dead_tuples: int


def counters(dsn: str, *, wait: bool = True) -> dict[str, Counters]:
    """The counters of the schema's tables, once two reads a moment apart agree: a backend
    that just ended may still be flushing its own (``wait=False``: the first read)."""
    last: dict[str, Counters] | None = None
    deadline = time.monotonic() + 5
    while True:
        with connect(dsn) as session:
            rows = session.fetch("table_counters", Counters, {"schema": SCHEMA})
        now = {r.name: r for r in rows}
        if not wait:
            return now
        stable = {n: (c.inserts, c.updates, c.deletes) for n, c in now.items()}
        if last is not None and stable == {
            n: (c.inserts, c.updates, c.deletes) for n, c in last.items()
        }:
            return now
        if time.monotonic() > deadline:
            return now
        last = now
        time.sleep(0.5)


def replayed_rates(
    before: dict[str, Counters], after: dict[str, Counters], seconds: float
) -> dict[str, Metric]:
    """Each table's rates per second between two reads of the counters."""
    metrics: dict[str, Metric] = {}
    for name, end in after.items():
        start = before.get(name)
        if start is None:
            continue
        for rate in RATES:
            delta = getattr(end, rate) - getattr(start, rate)
            metrics[rate_metric("replayed", rate, name)] = delta / seconds
    return metrics


def hot_shares(warm: dict[str, Counters], after: dict[str, Counters]) -> dict[str, Metric]:
    """Each table's HOT share after the warm-up: a freshly loaded table has no free space on
    its pages until pruning makes some, so its first updates cannot be HOT."""
    metrics: dict[str, Metric] = {}
    for name, end in after.items():
        start = warm.get(name)
        if start is not None and end.updates > start.updates:
            share = (end.hot_updates - start.hot_updates) / (end.updates - start.updates)
            metrics[rate_metric("replayed", "hot_share", name)] = share
    return metrics


class CustomRun(StudyRun[CustomConfig, ChurnPoint]):
    """One run of the custom study on one target, recording into one store."""

    study = STUDY
    config_type = CustomConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._created: list[str] = []

    @cached_property
    def replay(self) -> ReplayPlan | None:
        profile = self.config.profile
        if profile is None:
            return None
        return plan(Profile.model_validate(profile), self.config.scale)

    def describe(self) -> str:
        c = self.config
        if self.replay is not None:
            what = (
                f"{len(self.replay.tables)} table(s) of {c.profile_file or 'a profile'} at scale "
                f"{c.scale:g}, {len(self.replay.scripts)} scripts at "
                f"{self.replay.total_rate:,.1f} tx/s"
            )
        else:
            rate = "unthrottled" if c.rate is None else f"{c.rate:g} tx/s"
            what = f"{c.schema_file or 'a schema'} with {len(c.scripts)} script(s), {rate}"
        return (
            f"{what}; {len(c.steps)} steps × ({c.warmup} + {c.seconds}) s, "
            f"{c.clients} clients, {c.jobs} threads"
        )

    def plan(self) -> list[Planned[ChurnPoint]]:
        return plan_steps(self.config.steps, self.config.repeat)

    def label(self, planned: Planned[ChurnPoint]) -> str:
        return step_label(planned, len(self.config.steps), self.config.repeat)

    def seconds(self, planned: Planned[ChurnPoint]) -> int:
        return self.config.warmup + self.config.seconds

    def validate(self) -> None:
        check_steps(self.target, (s for s in self.config.steps if s.settings))

    def own_tables(self) -> tuple[str, ...]:
        if self.replay is not None:
            return tuple(t.name for t in self.replay.tables)
        return tuple(self._created)

    def measure_point(self, planned: Planned[ChurnPoint]) -> Measured:
        """One step: a server-scope step's settings on the run's baseline, or a table-scope
        step's on every table (and the baseline's server settings)."""
        step = planned.point.step
        server = step.settings if step.scope == "server" else {}
        every = step.settings if step.scope == "table" else {}
        name = f"step-{planned.point.number}-rep-{planned.repetition}"
        return self.measure_settings(name, server, every_table=every)

    def measure_settings(
        self,
        name: str,
        server: Mapping[str, str],
        *,
        every_table: Mapping[str, str] | None = None,
        per_table: Mapping[str, Mapping[str, str]] | None = None,
    ) -> Measured:
        """Settings, fresh tables, the load; the point starts when the load does. It runs on
        the server's settings as they were before the run plus ``server``; the tables, built
        afresh, carry only what they are built with and the storage parameters given here
        (``every_table``, then each table's own in ``per_table``). ``name`` names the
        directory of its raw files."""
        self.target.apply_step(server)
        tables = self._build()
        if every_table:
            set_on_tables(self.target.dsn, Step("every table", dict(every_table), "table"), tables)
        for table, options in (per_table or {}).items():
            if options:
                set_on_tables(self.target.dsn, Step(table, dict(options), "table"), [table])
        sampled = self._sampled(tables)
        named = (*self.config.steps, Step("settings", dict(server)))
        in_force = read_in_force(self.target.dsn, named, tables)
        before = counters(self.target.dsn)
        load = self._load(name)
        warm: dict[str, dict[str, Counters]] = {}
        timer = threading.Timer(
            self.config.warmup, lambda: warm.update(at=counters(self.target.dsn, wait=False))
        )
        timer.start()
        try:
            result = run_load(
                self.target, load, before[sampled].oid, self.progress, self.pgbench_dsn()
            )
        finally:  # an interrupted load leaves no timer to read a server that is gone
            timer.cancel()
            timer.join()
        after = counters(self.target.dsn)
        c = self.config
        total = c.warmup + c.seconds
        metrics: dict[str, Metric] = {}
        summary, series = summarize_step(result, c.warmup, total)
        metrics |= summary
        metrics |= replayed_rates(before, after, total)
        if "at" in warm:
            metrics |= hot_shares(warm["at"], after)
        metrics |= self._captured()
        metrics |= in_force
        metrics[SAMPLED_TABLE] = sampled
        metrics[RATE_SECONDS] = total
        return Measured(metrics, series, started_at=result.started_at)

    def _captured(self) -> dict[str, Metric]:
        if self.replay is None or self.config.profile is None:
            return {}
        captured: dict[str, Metric] = {
            rate_metric("captured", rate, t.name): value
            for t in self.replay.tables
            for rate, value in t.expected.items()
        }
        return captured | {CAPTURE_SECONDS: float(self.config.profile["seconds"])}

    def _sampled(self, tables: list[str]) -> str:
        """The table the sampler follows: the one with the most captured changes, or the
        schema file's first."""
        if self.replay is not None:
            busiest = max(self.replay.tables, key=lambda t: _changes(t.expected))
            return busiest.name
        if not tables:
            raise VacuumlabError("the schema file created no table in schema vacuumlab")
        return tables[0]

    # -- building ---------------------------------------------------------------------------

    def _build(self) -> list[str]:
        """The tables afresh; their names."""
        self.progress.message("building and loading the tables")
        with work_session(self.target.dsn) as session:
            session.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA))
            )
            for table in self.own_tables():
                session.execute(
                    sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(SCHEMA, table))
                )
            if self.replay is not None:
                names = self._build_replay(session, self.replay)
            else:
                names = self._build_schema(session)
            for name in names:
                session.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(SCHEMA, name)))
            checkpoint_if_allowed(session)
        return names

    def _build_replay(self, session: Any, replay: ReplayPlan) -> list[str]:
        sequence = sql.Identifier(SCHEMA, KEY_SEQUENCE)
        session.execute(sql.SQL("DROP SEQUENCE IF EXISTS {}").format(sequence))
        session.execute(
            sql.SQL("CREATE SEQUENCE {} START {}").format(sequence, sql.Literal(replay.first_key))
        )
        for table in replay.tables:
            self.progress.message(f"loading {table.rows:,} rows into {table.name}")
            _run(session, table.create, table.captured)
            for statement in table.optional:
                try:
                    _run(session, statement, table.captured)
                except VacuumlabError as exc:
                    self.progress.message(f"left out: {exc}")
            _run(session, table.load, table.captured)
            for statement in table.after:
                _run(session, statement, table.captured)
        return [t.name for t in replay.tables]

    def _build_schema(self, session: Any) -> list[str]:
        """The schema file, with schema vacuumlab first on the search path; the tables it
        created there. On the sandbox, tables an earlier run left in the schema go first."""
        if self.target.sandbox is not None:
            session.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(SCHEMA)))
            session.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(SCHEMA)))
        existing = set(counters_names(session))
        session.execute(sql.SQL("SET search_path = {}, public").format(sql.Identifier(SCHEMA)))
        assert self.config.schema is not None
        try:
            session.execute(self.config.schema)
        except psycopg.Error as exc:
            raise VacuumlabError(
                f"{self.config.schema_file or 'the schema'}: {exc.diag.message_primary}"
            ) from None
        finally:
            session.execute("RESET search_path")
        self._created = [n for n in counters_names(session) if n not in existing]
        return self._created

    # -- the load ---------------------------------------------------------------------------

    def _load(self, name: str) -> pgbench.Load:
        directory = self.artifacts / name
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        c = self.config
        weighted = []
        if self.replay is not None:
            for script, weight in zip(self.replay.scripts, self.replay.weights(), strict=True):
                weighted.append((_write(directory, script.name, script.text), weight))
            rate: float | None = self.replay.total_rate
        else:
            for n, s in enumerate(c.scripts, start=1):
                weighted.append((_write(directory, f"{n}-{Path(s.name).stem}", s.text), s.weight))
            rate = c.rate
        return pgbench.Load(
            script=weighted[0][0], clients=c.clients, jobs=c.jobs, seconds=c.warmup + c.seconds,
            log_prefix=directory / "pgbench_log", progress=True, weighted=tuple(weighted),
            rate=rate,
        )  # fmt: skip

    def pgbench_dsn(self) -> str:
        """The target with schema vacuumlab first on the search path, for the user's scripts."""
        return conninfo.make_conninfo(self.target.dsn, options=f"-c search_path={SCHEMA},public")


def counters_names(session: Any) -> list[str]:
    rows = session.fetch("table_counters", Counters, {"schema": SCHEMA})
    return [r.name for r in rows]


def _changes(expected: dict[Rate, float]) -> float:
    return expected["inserts"] + expected["updates"] + expected["deletes"]


def _write(directory: Path, name: str, text: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)
    path = directory / f"{safe}.sql"
    path.write_text(text, encoding="utf-8")
    return path


def _run(session: Any, statement: str, table: str) -> None:
    try:
        session.execute(statement)
    except psycopg.Error as exc:
        raise VacuumlabError(f"replaying {table}: {exc.diag.message_primary}") from None
