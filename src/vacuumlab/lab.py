"""Running studies: the shared run loop, where results go, and a live progress display."""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, cast

import psycopg
from psycopg import sql
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from vacuumlab.pg import queries
from vacuumlab.pg.connect import Session, connect
from vacuumlab.pg.sandbox import default_home
from vacuumlab.pg.target import Target
from vacuumlab.store import Store, point_key

#: Every study works inside this schema, on the sandbox and on a named server alike.
SCHEMA = "vacuumlab"


def default_store() -> Path:
    """``$VACUUMLAB_HOME/results.sqlite``, or ``~/vacuumlab/results.sqlite``."""
    return default_home() / "results.sqlite"


class ProgressReporter:
    """A progress bar per step with live TPS (pgbench's own) and dead tuples (the sampler's)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[live]}"),
            console=console,
            transient=False,
        )
        self._task: TaskID | None = None

    def step_started(self, label: str, seconds: int) -> None:
        self._task = self.progress.add_task(label, total=seconds, live="")

    def tick(self, elapsed: float, tps: float | None, dead: int | None) -> None:
        if self._task is None:
            return
        live = f"tps {tps:,.0f}" if tps is not None else ""
        if dead is not None:
            live += f" · dead tuples {dead:,}"
        self.progress.update(self._task, completed=elapsed, live=live)

    def step_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        if self._task is not None:
            task = self.progress.tasks[-1]
            self.progress.update(self._task, completed=task.total, live=_brief(metrics))
        self._task = None

    def message(self, text: str) -> None:
        self.progress.console.print(f"· {text}", style="dim")

    @contextmanager
    def shown(self) -> Iterator[ProgressReporter]:
        with self.progress:
            yield self


class PointsReporter:
    """One progress bar over a matrix of points, with the last point's result beside it."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=console,
        )
        self._task: TaskID | None = None

    def start(self, total: int) -> None:
        self._task = self.progress.add_task("points", total=total)

    def point_started(self, label: str) -> None:
        if self._task is not None:
            self.progress.update(self._task, description=label)

    def point_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        duration = next(
            (
                metrics[k]
                for k in ("duration_stats_s", "duration_log_s", "duration_wall_s")
                if metrics.get(k) is not None
            ),
            None,
        )
        if duration is not None:
            self.progress.console.print(f"· {label}: {duration:.2f} s", style="dim")
        if self._task is not None:
            self.progress.advance(self._task)

    def message(self, text: str) -> None:
        pass  # per-point set-up steps would flood the screen; the bar says where we are

    @contextmanager
    def shown(self) -> Iterator[PointsReporter]:
        with self.progress:
            yield self


def _brief(metrics: Mapping[str, Any]) -> str:
    tps, mean = metrics.get("tps"), metrics.get("latency_mean_ms")
    avs = metrics.get("autovacuum_count")
    if tps is None or mean is None:
        return "done"
    return f"tps {tps:,.0f} · latency {mean:.2f} ms · {avs} autovacuums"


def shown_settings(session: Session) -> dict[str, str]:
    """The settings vacuum depends on, as the server shows them (``SHOW``): "128MB", not the
    raw 16384 with its unit "8kB" appended."""
    names = [row["name"] for row in session.fetch("settings", dict)]
    rows = session.query(_SHOWN, dict, [names])
    return {row["name"]: row["value"] for row in rows}


_SHOWN = queries.tag(
    "SELECT name, current_setting(name) AS value FROM unnest(%s::text[]) AS name",
    "shown_settings",
)


# -- running a study ---------------------------------------------------------------------------


C = TypeVar("C", bound="StoredConfig")


class HasParams(Protocol):
    def params(self) -> dict[str, Any]: ...


ConfigT = TypeVar("ConfigT", bound=HasParams)
ReporterT = TypeVar("ReporterT")


class StoredConfig:
    """A study's config, a frozen dataclass, as it round-trips through the run's parameters
    (JSON, so tuples are stored as lists): ``--resume`` rebuilds it from the store."""

    __slots__ = ()

    def params(self) -> dict[str, Any]:
        data = asdict(cast(Any, self))
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}

    @classmethod
    def from_params(cls: type[C], params: Mapping[str, Any]) -> C:
        """The config from stored parameters; keys it does not know are left out."""
        names = {f.name for f in fields(cast(Any, cls))}
        known = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items() if k in names}
        return cls(**known)


@dataclass(frozen=True, slots=True)
class Planned:
    """One point a study plans to measure: its stored parameters and repetition."""

    params: dict[str, Any]
    repetition: int


class StudyRun(ABC, Generic[ConfigT, ReporterT]):
    """What every study run shares: the run record, resume, the final status, restoring the
    target's settings and, on a named server, leaving nothing behind.

    A study says what it plans (:meth:`plan`) and how to measure one point (:meth:`measure`);
    each measured point is committed to the store before the next one starts.
    """

    study: str
    #: Tables the study creates in schema ``vacuumlab``; dropped at the end on a named server.
    tables: tuple[str, ...] = ()

    def __init__(
        self,
        config: ConfigT,
        target: Target,
        store: Store,
        reporter: ReporterT | None = None,
        run_id: int | None = None,
    ) -> None:
        self.config, self.target, self.store, self.run_id = config, target, store, run_id
        self.reporter: ReporterT = reporter if reporter is not None else self.silent()

    @abstractmethod
    def silent(self) -> ReporterT:
        """The reporter to use when the caller gives none: one that says nothing."""

    def params(self) -> dict[str, Any]:
        return self.config.params()

    @abstractmethod
    def validate(self) -> None:
        """Check everything that can be checked before the first measurement."""

    @abstractmethod
    def plan(self) -> list[Planned]: ...

    @abstractmethod
    def measure(self, todo: list[Planned]) -> None:
        """Measure the points, committing each to the store as it finishes."""

    @property
    def artifacts(self) -> Path:
        """Where raw files of this run (pgbench logs) are kept, beside the store."""
        assert self.run_id is not None
        return self.store.path.parent / "runs" / str(self.run_id)

    def execute(self) -> int:
        """Measure every planned point not yet in the store; returns the run id. However the
        run ends, its status is recorded and the target's settings are restored."""
        self.validate()
        if self.run_id is None:
            self.run_id = self._create_run()
        done = self.store.done(self.run_id)
        todo = [p for p in self.plan() if (point_key(p.params), p.repetition) not in done]
        status: Literal["done", "failed", "interrupted"] = "failed"
        try:
            self.measure(todo)
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

    def _create_run(self) -> int:
        with connect(self.target.dsn) as session:
            version = session.info.version
            settings = shown_settings(session)
        return self.store.create_run(
            self.study, self.params(), server_version=version, settings=settings
        )

    def _clean_up(self) -> None:
        """On a named server, drop the study's tables, and its schema when nothing else is
        in it. The sandbox keeps them for a look afterwards."""
        if self.target.sandbox is not None:
            return
        with psycopg.connect(self.target.dsn, autocommit=True) as conn:
            for table in self.tables:
                conn.execute(
                    sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(SCHEMA, table))
                )
            with contextlib.suppress(psycopg.errors.DependentObjectsStillExist):
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} RESTRICT").format(sql.Identifier(SCHEMA))
                )
