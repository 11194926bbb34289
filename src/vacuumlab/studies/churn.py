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

import shutil

from psycopg import sql

from vacuumlab.collect import probes
from vacuumlab.pg import pgbench
from vacuumlab.pg.connect import connect
from vacuumlab.records.churn import ChurnConfig, ChurnPoint, Step
from vacuumlab.records.churn_spec import STUDY
from vacuumlab.records.params import Config
from vacuumlab.studies.base import SCHEMA, Measured, Planned, StudyRun, work_session
from vacuumlab.studies.shared import checkpoint_if_allowed
from vacuumlab.studies.steps import (
    check_steps,
    load_steps,
    plan_steps,
    read_in_force,
    reset_on_tables,
    set_on_tables,
    step_label,
)
from vacuumlab.studies.workload import run_load, summarize_step

__all__ = ["SCRIPT", "TABLE", "ChurnRun", "load_steps"]

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

# -- the run -----------------------------------------------------------------------------------


class ChurnRun(StudyRun[ChurnConfig, ChurnPoint]):
    """One run of the study on one target, recording into one store."""

    study = STUDY
    config_type = ChurnConfig
    tables = (TABLE,)
    _fresh_table = True
    #: The storage parameters the last step set on the table (a continuous run keeps it).
    _table_options: frozenset[str] = frozenset()

    def describe(self) -> str:
        c = self.config
        return (
            f"{len(c.steps)} steps × {c.seconds} s, "
            f"{c.clients} clients, {c.jobs} threads, backlog {c.backlog:,}"
        )

    def plan(self) -> list[Planned[ChurnPoint]]:
        return plan_steps(self.config.steps, self.config.repeat)

    def label(self, planned: Planned[ChurnPoint]) -> str:
        return step_label(planned, len(self.config.steps), self.config.repeat)

    @classmethod
    def side_by_side(cls, config: Config) -> str | None:
        if isinstance(config, ChurnConfig) and config.continuous:
            return "churn's --continuous steps share one table: they run one after another"
        return None

    def seconds(self, planned: Planned[ChurnPoint]) -> int:
        return self.config.seconds

    def measure_point(self, planned: Planned[ChurnPoint]) -> Measured:
        """Set the step up, run its load, summarise it; the point starts when the load does
        (t = 0 of its series). The point keeps what the step ran with, read back just
        before the load."""
        point = planned.point
        self._prepare(point.step, self._fresh_table or not self.config.continuous)
        self._fresh_table = False
        load = self._load(point, planned.repetition)
        in_force = read_in_force(self.target.dsn, self.config.steps, (TABLE,))
        result = run_load(self.target, load, _table_oid(self.target.dsn), self.progress)
        metrics, series = summarize_step(result, self.config.warmup, self.config.seconds)
        return Measured(metrics | in_force, series, started_at=result.started_at)

    def validate(self) -> None:
        """Check every step's settings before anything is measured."""
        check_steps(self.target, self.config.steps)

    def _prepare(self, step: Step, recreate: bool) -> None:
        """Settings first, then (unless continuous) a fresh table with the same backlog. The
        step runs on the server's settings as they were before the run plus its own, and on
        a table with its own storage parameters only: a continuous run's table loses those
        an earlier step set."""
        self.target.apply_step(step.settings if step.scope == "server" else {})
        own = frozenset(step.settings) if step.scope == "table" else frozenset()
        if recreate:
            self.progress.message(f"loading {self.config.backlog:,} backlog rows")
            _create_table(self.target.dsn, self.config.backlog)
        elif stale := self._table_options - own:
            reset_on_tables(self.target.dsn, stale, (TABLE,))
        if own:
            set_on_tables(self.target.dsn, step, (TABLE,))
        self._table_options = own

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
