"""The scheduling study: tables churned at rates spread from hot to quiet (the spread
workload: forty tables), or a mix of HOT-only tables, non-HOT churners and one busy table (the
mixed workload: ten), under arms of autovacuum workers, naptime and cost budget, with the
simulator's prediction beside what PostgreSQL did.

Each arm (and repetition) is one point in the results store. It sets the arm's settings,
creates the tables afresh, and runs one pgbench with one weighted script per busy table
(``-f script@weight``; each transaction updates one random row of one table: an indexed
column, so no update is HOT and every one leaves a dead tuple for vacuum, or on the mixed
workload's HOT tables a column no index covers, on pages half empty, so every update is HOT
and on-access pruning takes back the dead tuples it leaves). While the load runs,
``collect.schedule`` samples every table at 1 Hz; two snapshots, ``warmup`` and
``warmup + interval`` seconds in, give the simulator its rates (``model.forecast``). The
simulator then runs, with the arm's settings as the second snapshot shows them, from the
second snapshot to the end of the load, and each table's vacuums, first start, mean duration
and peak dead tuples are compared with the measured ones (``scheduling_compare``). The two
snapshots are kept in the arm's directory beside the store (``snapshots.json``), so the
prediction can be made again from them.

Auto-analyze is turned off on the study's tables (``autovacuum_analyze_threshold`` at its
maximum): the simulator does not model analyze-only visits, and they would take worker time
it cannot see.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from psycopg import sql

from vacuumlab.collect.schedule import TablesSampler
from vacuumlab.collect.snapshot import collect
from vacuumlab.errors import VacuumlabError
from vacuumlab.model import forecast
from vacuumlab.model.simulator import Outcome, simulate
from vacuumlab.pg import pgbench
from vacuumlab.pg.connect import connect
from vacuumlab.pg.target import Target
from vacuumlab.records.scheduling import SchedulingConfig, SchedulingPoint
from vacuumlab.records.scheduling_spec import (
    DEAD,
    LAUNCHES,
    MEASURED,
    PREDICTED,
    STUDY,
    series_name,
    table_metric,
)
from vacuumlab.records.snapshot import Snapshot, parse_snapshot, read_json
from vacuumlab.store import Metric
from vacuumlab.studies import scheduling_compare as cmp
from vacuumlab.studies.base import SCHEMA, Measured, Planned, Series, StudyRun, work_session
from vacuumlab.studies.shared import checkpoint_if_allowed

#: Auto-analyze off: the largest value the reloption takes (INT_MAX).
NO_ANALYZE = 2_147_483_647
#: Bytes of filler per row: about 65 rows per 8 kB page, so a table has pages to vacuum.
PAD = 80
#: The arm's two snapshots, in its directory beside the store.
SNAPSHOTS = "snapshots.json"


class SchedulingRun(StudyRun[SchedulingConfig, SchedulingPoint]):
    """One run of the study on one target, recording into one store."""

    study = STUDY
    config_type = SchedulingConfig

    def describe(self) -> str:
        c = self.config
        if c.workload == "mixed":
            tables = (
                f"mixed: {sum(t.hot for t in self.loads())} HOT-only tables and "
                f"{sum(not t.hot for t in self.loads()) - 1} churners of {c.rows:,} rows, "
                f"one busy table of {c.busy_rows:,}"
            )
        else:
            tables = f"{c.tables} tables ({c.quiet} quiet) of {c.rows:,} rows"
        return f"{len(c.arms)} arms × {c.seconds} s, {tables}, {c.clients} clients"

    def own_tables(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.loads())

    def loads(self) -> list[cmp.TableLoad]:
        c = self.config
        if c.workload == "mixed":
            return cmp.mixed_workload(c.rows, c.busy_rows)
        return cmp.workload(c.tables, c.quiet, c.spread, c.rows)

    def validate(self) -> None:
        for arm in self.config.arms:
            self.target.check(arm.settings())

    def plan(self) -> list[Planned[SchedulingPoint]]:
        return [
            Planned(SchedulingPoint(n, arm), rep)
            for rep in range(self.config.repeat)
            for n, arm in enumerate(self.config.arms, start=1)
        ]

    def label(self, planned: Planned[SchedulingPoint]) -> str:
        point = planned.point
        label = f"arm {point.number}/{len(self.config.arms)}: {point.arm.name}"
        if self.config.repeat > 1:
            label += f" (repetition {planned.repetition + 1}/{self.config.repeat})"
        return label

    def seconds(self, planned: Planned[SchedulingPoint]) -> int:
        return self.config.seconds

    def measure_point(self, planned: Planned[SchedulingPoint]) -> Measured:
        """Settings, fresh tables, the load with its samples and snapshots, the simulation
        and the comparison; the point starts when the load does (t = 0 of its series)."""
        point = planned.point
        self.target.apply(point.arm.settings())
        loads = self.loads()
        rows = sum(t.rows for t in loads)
        self.progress.message(f"creating {len(loads)} tables, {rows:,} rows in all")
        create_tables(self.target.dsn, loads)
        directory = self._directory(point, planned.repetition)
        load = pgbench.Load(
            script=directory / "unused.sql",
            weighted=tuple(write_scripts(directory, loads)),
            clients=self.config.clients,
            jobs=self.config.jobs,
            seconds=self.config.seconds,
            progress=True,
        )
        recording = record(self.target, load, loads, self.config, self.progress.tick)
        save_snapshots(directory / SNAPSHOTS, recording.snapshots)
        return summarize_arm(recording, self.config, point)

    def _directory(self, point: SchedulingPoint, repetition: int) -> Path:
        directory = self.artifacts / f"arm-{point.number}-rep-{repetition}"
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        return directory


# -- set-up ------------------------------------------------------------------------------------


def create_tables(dsn: str, loads: list[cmp.TableLoad]) -> None:
    """The study's tables afresh, in ``loads`` order (so in that ``pg_class`` order): an
    indexed ``v`` that every non-HOT update changes, a ``hits`` no index covers that every
    HOT update changes, each table's rows, vacuumed and analysed; then a CHECKPOINT, so each
    arm starts from the same state."""
    with work_session(dsn) as session:
        session.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
        for t in loads:
            session.execute(
                sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(SCHEMA, t.name))
            )
        for t in loads:
            table = sql.Identifier(SCHEMA, t.name)
            session.execute(
                sql.SQL(
                    "CREATE TABLE {} (id int PRIMARY KEY, v int NOT NULL, pad text{}) "
                    "WITH (autovacuum_analyze_threshold = {}{})"
                ).format(
                    table,
                    sql.SQL(", hits int NOT NULL DEFAULT 0" if t.hot else ""),
                    sql.Literal(NO_ANALYZE),
                    sql.SQL(", fillfactor = {}").format(sql.Literal(t.fillfactor))
                    if t.fillfactor < 100
                    else sql.SQL(""),
                )
            )
            session.execute(sql.SQL("CREATE INDEX ON {} (v)").format(table))
            session.execute(
                sql.SQL(
                    "INSERT INTO {} (id, v, pad) "
                    "SELECT g, g, repeat('x', {}) FROM generate_series(1, {}) g"
                ).format(table, sql.Literal(PAD), sql.Literal(t.rows))
            )
        for t in loads:
            session.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(SCHEMA, t.name)))
        checkpoint_if_allowed(session)


def script_text(t: cmp.TableLoad) -> str:
    """One transaction on the table: an update of one random row's indexed column, or on a
    HOT table of a column no index covers."""
    change = "hits = hits + 1" if t.hot else "v = v + 1"
    return f"\\set id random(1, {t.rows})\nUPDATE {SCHEMA}.{t.name} SET {change} WHERE id = :id;\n"


def write_scripts(directory: Path, loads: list[cmp.TableLoad]) -> list[tuple[Path, int]]:
    """One script per busy table, with its weight."""
    scripts = []
    for t in loads:
        if t.weight > 0:
            path = directory / f"{t.name}.sql"
            path.write_text(script_text(t), encoding="utf-8")
            scripts.append((path, t.weight))
    return scripts


# -- the load and its recording ------------------------------------------------------------------


class Recording:
    """What one arm's load left: samples, worker launches, the two snapshots, the origin."""

    def __init__(
        self,
        origin: datetime,
        sampler: TablesSampler,
        snapshots: tuple[Snapshot, Snapshot],
        tps: float | None,
        loads: list[cmp.TableLoad],
    ) -> None:
        self.origin, self.sampler, self.snapshots, self.tps = origin, sampler, snapshots, tps
        self.loads = loads

    @property
    def launches(self) -> list[float]:
        return sorted((t - self.origin).total_seconds() for t in self.sampler.launches.values())


def record(
    target: Target,
    load: pgbench.Load,
    loads: list[cmp.TableLoad],
    config: SchedulingConfig,
    tick: Callable[[float, Mapping[str, float | None]], None],
) -> Recording:
    """Run the load; sample the tables at 1 Hz and take the two snapshots meanwhile."""
    names = [t.name for t in loads]
    sampler = TablesSampler(target.dsn, SCHEMA, names).start()

    def on_line(line: str) -> None:
        seen = pgbench.parse_progress(line)
        if seen is not None:
            tick(seen[0], {"tps": seen[1]})

    origin = datetime.now(UTC)
    process = pgbench.Process(pgbench.command(target.pgbench, load, target.dsn), on_line)
    try:
        first = _snapshot_at(target.dsn, origin, config.warmup)
        second = _snapshot_at(target.dsn, origin, config.warmup + config.interval)
        output = process.wait()
    finally:
        process.terminate()
        sampler.stop()
    return Recording(origin, sampler, (first, second), pgbench.parse_tps(output), loads)


def save_snapshots(path: Path, snapshots: tuple[Snapshot, Snapshot]) -> None:
    """The two snapshots the prediction came from, as one JSON list, to predict again."""
    path.write_text("[" + ",\n".join(s.dump_json() for s in snapshots) + "]\n", encoding="utf-8")


def load_snapshots(path: Path) -> tuple[Snapshot, Snapshot]:
    """What :func:`save_snapshots` wrote."""
    raw = read_json(path, "a scheduling arm's two snapshots")
    if not isinstance(raw, list) or len(raw) != 2:
        raise VacuumlabError(f"{path} is not a scheduling arm's two snapshots")
    first, second = raw
    return parse_snapshot(first, str(path)), parse_snapshot(second, str(path))


def _snapshot_at(dsn: str, origin: datetime, seconds: float) -> Snapshot:
    wait = seconds - (datetime.now(UTC) - origin).total_seconds()
    if wait > 0:
        time.sleep(wait)
    with connect(dsn, application_name="vacuumlab-snapshot") as session:
        return collect(session)


# -- the simulation and the comparison -----------------------------------------------------------


def predict(recording: Recording, window: tuple[float, float]) -> tuple[Outcome, forecast.Inputs]:
    """The simulator on the two snapshots' rates and settings, from the second snapshot to
    the end of the load; the launcher's first visit follows the last worker seen starting."""
    given = forecast.inputs(*recording.snapshots)
    start, end = window
    # Workers that find little to do live for milliseconds and may slip between two 1 Hz
    # samples; a vacuum starts moments after its worker's launch, so its start stands in.
    seen = recording.launches or [
        v.start for v in cmp.vacuums_seen(recording.sampler.samples, recording.origin)
    ]
    first = cmp.next_launch(seen, start, given.launcher.naptime_s)
    launcher = replace(given.launcher, first_launch_s=first)
    return simulate(given.subjects, launcher, end - start), replace(given, launcher=launcher)


def summarize_arm(
    recording: Recording, config: SchedulingConfig, point: SchedulingPoint
) -> Measured:
    """Metrics and series of one arm: per table and its medians."""
    origin = recording.origin
    samples = recording.sampler.samples
    dead = cmp.dead_series(samples, origin)
    last = max((t for rows in dead.values() for t, _ in rows), default=float(config.seconds))
    start = (recording.snapshots[1].taken_at - origin).total_seconds()
    window = (start, min(float(config.seconds), last))
    outcome, given = predict(recording, window)
    vacuums = cmp.vacuums_seen(samples, origin)
    rates = {s.label: s.dead_per_second for s in given.subjects}
    names = [t.name for t in recording.loads]
    results = cmp.compare(
        names,
        SCHEMA,
        cmp.measured_sides(vacuums, dead, window),
        cmp.predicted_sides(outcome, window[0]),
        rates,
    )
    summary = cmp.summarize(results)
    spans = [(v.start, v.end) for v in vacuums]
    predicted_spans = [(window[0] + s.start, window[0] + s.end) for s in outcome.spans]
    metrics: dict[str, Metric] = {
        "window_start_s": window[0],
        "window_s": window[1] - window[0],
        "tps": recording.tps,
        "transactions": None if recording.tps is None else round(recording.tps * config.seconds),
        "launches_measured": len(recording.launches),
        "launches_predicted": outcome.launches,
        "workers": given.launcher.workers,
        "naptime_s": given.launcher.naptime_s,
        "tables_counted": summary.counted,
        "median_count_error": summary.count_error,
        "median_peak_error": summary.peak_error,
        "median_duration_error": summary.duration_error,
        "median_first_start_error_s": summary.first_start_error_s,
        "vacuums_measured": summary.vacuums_measured,
        "vacuums_predicted": summary.vacuums_predicted,
        "busy_share_measured": cmp.busy_share(spans, window, point.arm.workers),
        "busy_share_predicted": cmp.busy_share(predicted_spans, window, point.arm.workers),
        "samples_failed": recording.sampler.failed,
    }
    hot = hot_shares(*recording.snapshots, SCHEMA)
    for r in results:
        metrics |= _table_metrics(r)
        metrics[table_metric(r.table, "hot_share")] = hot.get(r.table)
    series: Series = {series_name(DEAD, t): rows for t, rows in dead.items()}
    for r in results:
        series[series_name(MEASURED, r.table)] = [
            (v.start, v.duration) for v in vacuums if v.table == r.table
        ]
        series[series_name(PREDICTED, r.table)] = list(
            zip(r.predicted.starts, r.predicted.durations, strict=True)
        )
    series[LAUNCHES] = [(t, None) for t in recording.launches]
    return Measured(metrics, series, started_at=origin)


def hot_shares(before: Snapshot, after: Snapshot, schema: str) -> dict[str, float]:
    """Per table of ``schema`` updated between the two snapshots, the share of its updates
    that were HOT (``n_tup_hot_upd`` over ``n_tup_upd``): 1 on the mixed workload's HOT
    tables, 0 on the others."""
    then = {t.heap.oid: t.heap for t in before.tables if t.heap.schema_name == schema}
    shares = {}
    for t in after.tables:
        old = then.get(t.heap.oid)
        if old is None:
            continue
        updated = (t.heap.n_tup_upd or 0) - (old.n_tup_upd or 0)
        hot = (t.heap.n_tup_hot_upd or 0) - (old.n_tup_hot_upd or 0)
        if updated > 0:
            shares[t.heap.name] = hot / updated
    return shares


def _table_metrics(r: cmp.TableResult) -> dict[str, Metric]:
    values: dict[str, Metric] = {
        "dead_per_second": r.dead_per_second,
        "vacuums_measured": r.measured.vacuums,
        "vacuums_predicted": r.predicted.vacuums,
        "first_start_measured_s": r.measured.first_start,
        "first_start_predicted_s": r.predicted.first_start,
        "mean_duration_measured_s": r.measured.mean_duration,
        "mean_duration_predicted_s": r.predicted.mean_duration,
        "peak_dead_measured": r.measured.peak_dead,
        "peak_dead_predicted": r.predicted.peak_dead,
        "count_error": r.count_error,
        "peak_error": r.peak_error,
        "duration_error": r.duration_error,
    }
    return {table_metric(r.table, k): v for k, v in values.items()}
