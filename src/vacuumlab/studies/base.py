"""What every study builds on: the run loop every study shares (the run record, resume, one
measure loop, the final status, restoring the target's settings and, on a named server, leaving
nothing behind), the schema studies work in, and the one progress protocol a run tells whoever
watches it. The command line draws progress bars from it (``cli/progress.py``); tests record
it; a run without a watcher gets :class:`Silent`.

The lab (:mod:`vacuumlab.lab`) registers and starts studies; it imports them, never the
reverse."""

from __future__ import annotations

import contextlib
import socket
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

import psycopg
from psycopg import sql

from vacuumlab.collect import probes
from vacuumlab.errors import VacuumlabError
from vacuumlab.model.versions import major_of
from vacuumlab.pg.connect import Session, Timeouts, connect
from vacuumlab.pg.target import Target
from vacuumlab.records.params import Config
from vacuumlab.store import Metric, Store, point_key

#: Every study works inside this schema, on the sandbox and on a named server alike.
SCHEMA = "vacuumlab"
#: A study's own statements load, vacuum and checkpoint: no statement limit, and a lock held
#: elsewhere gets a minute.
WORK = Timeouts(statement_ms=0, lock_ms=60_000)


class Progress(Protocol):
    def started(self, total: int) -> None:
        """The run is about to measure ``total`` points."""

    def point_started(self, label: str, seconds: int | None) -> None:
        """A point starts; ``seconds`` when its load runs for a known time."""

    def tick(self, elapsed: float, live: Mapping[str, float | None]) -> None:
        """Live values during a timed point (e.g. ``tps``, ``dead tuples``)."""

    def point_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        """A point is measured and stored."""

    def message(self, text: str) -> None:
        """A step of set-up worth saying (loading, restarting)."""

    def running(self, per_node: Mapping[str, int]) -> None:
        """Points run side by side (an executor over a cluster): how many run on each node."""


class Silent:
    """A watcher that says nothing."""

    def started(self, total: int) -> None:
        pass

    def point_started(self, label: str, seconds: int | None) -> None:
        pass

    def tick(self, elapsed: float, live: Mapping[str, float | None]) -> None:
        pass

    def point_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        pass

    def message(self, text: str) -> None:
        pass

    def running(self, per_node: Mapping[str, int]) -> None:
        pass


class HasParams(Protocol):
    def params(self) -> dict[str, Any]: ...


ConfigT = TypeVar("ConfigT", bound=Config)
PointT = TypeVar("PointT", bound=HasParams)
Series = dict[str, list[tuple[float, float | None]]]


@dataclass(frozen=True, slots=True)
class Planned(Generic[PointT]):
    """One point a study plans to measure, and its repetition."""

    point: PointT
    repetition: int

    @property
    def params(self) -> dict[str, Any]:
        """The point's parameters as stored."""
        return self.point.params()


@dataclass(frozen=True, slots=True)
class Measured:
    """What measuring one point gave: its metrics, per-second series, and when it started
    (by default the moment the loop started the point)."""

    metrics: dict[str, Metric]
    series: Series = field(default_factory=dict)
    started_at: datetime | None = None


def now() -> datetime:
    return datetime.now(UTC)


class Executor(Protocol):
    """What runs a study's points other than the one local loop (a cluster): it measures each
    point somewhere and hands every finished one back to :meth:`StudyRun.record`, in the
    order they finish; only the process that runs the loop writes the store."""

    @property
    def name(self) -> str:
        """What the run records as its executor (``ray``, ``ray:ADDRESS``)."""

    def nodes(self) -> dict[str, int]:
        """The points each node runs at once."""

    def measure(self, run: StudyRun[Any, Any], todo: list[Planned[Any]]) -> None:
        """Measure every point of ``todo`` and record each through ``run.record``."""


class StudyRun(ABC, Generic[ConfigT, PointT]):
    """One run of a study on one target, recording into one store.

    A study says what it plans (:meth:`plan`), how to name a point (:meth:`label`) and how to
    measure one (:meth:`measure_point`); the loop commits each point to the store before the
    next one starts, so an interrupted run keeps every finished point for ``--resume``.
    """

    study: ClassVar[str]
    #: The study's config record; ``--resume`` rebuilds it from the stored parameters.
    config_type: ClassVar[type[Config]]
    #: Tables the study creates in schema ``vacuumlab``; dropped at the end on a named server.
    tables: ClassVar[tuple[str, ...]] = ()
    #: Who measures the points: None for the one local loop, else an executor (a cluster).
    executor: Executor | None = None

    def __init__(
        self,
        config: ConfigT,
        target: Target,
        store: Store,
        progress: Progress | None = None,
        run_id: int | None = None,
    ) -> None:
        self.config, self.target, self.store, self.run_id = config, target, store, run_id
        self.progress: Progress = progress if progress is not None else Silent()

    def params(self) -> dict[str, Any]:
        return self.config.params()

    @abstractmethod
    def describe(self) -> str:
        """One line: what the run measures."""

    def validate(self) -> None:
        """Check everything that can be checked before the first measurement."""

    @abstractmethod
    def plan(self) -> list[Planned[PointT]]: ...

    def prepare(self) -> None:
        """Set the target up once before the first point (settings every point shares)."""

    @abstractmethod
    def label(self, planned: Planned[PointT]) -> str:
        """How the progress display names the point."""

    def seconds(self, planned: Planned[PointT]) -> int | None:
        """How long the point's load runs, when the study knows it in advance."""
        return None

    @abstractmethod
    def measure_point(self, planned: Planned[PointT]) -> Measured: ...

    @classmethod
    def side_by_side(cls, config: Config) -> str | None:
        """Why a run with ``config`` cannot measure its points side by side on servers of
        their own, or None when each point stands alone (set-up, load, measurement)."""
        return None

    @property
    def artifacts(self) -> Path:
        """Where raw files of this run (pgbench logs) are kept, beside the store."""
        assert self.run_id is not None
        return run_directory(self.store.path, self.run_id)

    def execute(self) -> int:
        """Measure every planned point not yet in the store; returns the run id. However the
        run ends, its status is recorded and the target's settings are restored."""
        self.validate()
        if self.run_id is None:
            self.run_id = self._create_run()
        else:
            self._check_same_major(self.run_id)
        done = self.store.done(self.run_id)
        todo = [p for p in self.plan() if (point_key(p.params), p.repetition) not in done]
        status: Literal["done", "failed", "interrupted"] = "failed"
        try:
            if self.executor is None:
                self.store.record_execution(self.run_id, "local", {socket.gethostname(): 1})
            else:
                self.store.record_execution(self.run_id, self.executor.name, self.executor.nodes())
            self.dispatch(todo)
            status = "done"
        except BaseException as exc:
            status = "failed" if isinstance(exc, Exception) else "interrupted"
            raise
        finally:
            try:
                self.target.restore()
                self._clean_up()
            finally:
                self.store.finish_run(self.run_id, status)
        return self.run_id

    def dispatch(self, todo: list[Planned[PointT]]) -> None:
        """Measure ``todo``: in the one local loop, or all of it on the executor."""
        if self.executor is None:
            self.measure(todo)
        else:
            self.executor.measure(self, todo)

    def measure(self, todo: list[Planned[PointT]]) -> None:
        """The one measure loop: each point measured, committed, reported."""
        assert self.run_id is not None
        self.prepare()
        self.progress.started(len(todo))
        for planned in todo:
            label = self.label(planned)
            self.progress.point_started(label, self.seconds(planned))
            started = now()
            measured = self.measure_point(planned)
            self.record(planned, measured, started, now())

    def record(
        self, planned: Planned[PointT], measured: Measured, started: datetime, ended: datetime
    ) -> None:
        """Commit one measured point with its series (one transaction) and report it."""
        assert self.run_id is not None
        self.store.record_point(
            self.run_id, planned.params, planned.repetition, measured.metrics,
            started_at=measured.started_at or started, ended_at=ended, series=measured.series,
        )  # fmt: skip
        self.progress.point_finished(self.label(planned), measured.metrics)

    def _create_run(self) -> int:
        with connect(self.target.dsn) as session:
            version = session.info.version
            settings = probes.shown_settings(session)
        return self.store.create_run(
            self.study, self.params(), server_version=version, settings=settings
        )

    def _check_same_major(self, run_id: int) -> None:
        """A resumed run measures its remaining points on the major it began on: points of
        two majors in one run would be compared as one."""
        began = major_of(self.store.run(run_id).server_version)
        with connect(self.target.dsn) as session:
            now_on = session.info.version_num // 10000
        if began is not None and began != now_on:
            raise VacuumlabError(
                f"run {run_id} began on PostgreSQL {began}, this server is {now_on}: resume "
                f"it on {began} (--pg {began}, or the --dsn it ran on)"
            )

    def own_tables(self) -> tuple[str, ...]:
        """The tables this run creates: ``tables``, unless they depend on the config."""
        return self.tables

    def _clean_up(self) -> None:
        """On a named server, drop the study's tables, and its schema when nothing else is
        in it. The sandbox keeps them for a look afterwards."""
        if self.target.sandbox is not None:
            return
        with work_session(self.target.dsn) as session:
            for table in self.own_tables():
                session.execute(
                    sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(SCHEMA, table))
                )
            with contextlib.suppress(psycopg.errors.DependentObjectsStillExist):
                session.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} RESTRICT").format(sql.Identifier(SCHEMA))
                )


def work_session(dsn: str, application_name: str = "vacuumlab") -> Session:
    """A writing session for a study's own statements (set-up, load, vacuum)."""
    return connect(dsn, read_only=False, timeouts=WORK, application_name=application_name)


def run_directory(store_path: Path, run_id: int) -> Path:
    """Where a run's raw files (pgbench logs) and report are kept, beside the store."""
    return store_path.parent / "runs" / str(run_id)
