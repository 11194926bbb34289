"""The results store: one SQLite file holding runs, measurement points and time series.

The store is append-only. A point, once recorded, is never changed; a run changes only its
status, end time and note (via `Store.finish_run`). Each point is written together with its
series in one transaction, so an interrupted process never leaves half a point behind, and a
resumed study can skip exactly the points `Store.done` reports.

The file is in WAL mode so a report can read it while a study is still writing.
See docs/store.md for the schema.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast

from vacuumlab import __version__
from vacuumlab.errors import VacuumlabError
from vacuumlab.machine import machine_info as machine_info
from vacuumlab.store.rows import (
    NO_SERIES,
    Execution,
    Metric,
    Point,
    Run,
    RunStatus,
    Sample,
    check_metrics,
    from_text,
    loads_object,
    point_from_row,
    point_key,
    run_from_row,
    series_rows,
    to_text,
)
from vacuumlab.store.schema import EXECUTIONS, SCHEMA, SCHEMA_VERSION, TABLES

__all__ = [
    "SCHEMA_VERSION",
    "Execution",
    "Metric",
    "Point",
    "Run",
    "RunStatus",
    "Sample",
    "Store",
    "machine_info",
    "point_key",
]

BUSY_TIMEOUT_S = 5.0


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _connect(path: Path) -> sqlite3.Connection:
    """Connect, creating parent directories; OS and SQLite failures become VacuumlabError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VacuumlabError(f"{path}: cannot create its directory: {_one_line(exc)}") from exc
    try:
        # isolation_level=None: transactions are explicit (see Store._transaction).
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise VacuumlabError(f"{path}: cannot open: {_one_line(exc)}") from exc
    conn.row_factory = sqlite3.Row
    return conn


def _open_error(path: Path, exc: sqlite3.Error) -> VacuumlabError:
    # OperationalError is about access (locked, unreadable); other errors about the content.
    if isinstance(exc, sqlite3.OperationalError):
        return VacuumlabError(f"{path}: cannot open: {_one_line(exc)}")
    return VacuumlabError(f"{path}: not a vacuumlab store: {_one_line(exc)}")


class Store:
    """An open results store. Use `Store.open`; close it (or use `with`) when done."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, path: Path) -> Store:
        """Open the store at `path`, creating it (and its directory) if it does not exist.

        Raises VacuumlabError if the file is not a vacuumlab store, was written by a newer
        vacuumlab, or cannot be created.
        """
        conn = _connect(path)
        store = cls(conn, path)
        try:
            store._prepare()
        except BaseException as exc:
            conn.close()
            if isinstance(exc, sqlite3.Error):
                raise _open_error(path, exc) from exc
            raise
        return store

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- opening -------------------------------------------------------------------------

    def _prepare(self) -> None:
        """Validate an existing store, or initialise an empty file; then switch to WAL."""
        self._conn.execute("PRAGMA foreign_keys = ON")
        existing = bool(self._tables())
        # Validate before switching to WAL, so a foreign SQLite file is never modified.
        if existing:
            self._validate()
        mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            raise VacuumlabError(f"{self.path}: cannot use WAL mode (journal mode is {mode})")
        # Only a new file needs the write lock; readers of an existing store must not wait.
        if not existing:
            self._initialise()

    def _initialise(self) -> None:
        with self._transaction():
            # Checked again under the write lock: another process may have created it meanwhile.
            if self._tables():
                self._validate()
            else:
                self._create_schema()

    def _create_schema(self) -> None:
        # Statement by statement: executescript() would commit the enclosing transaction.
        for statement in SCHEMA:
            self._conn.execute(statement)
        self._conn.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
        )

    def _tables(self) -> set[str]:
        rows = self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row[0] for row in rows}

    def _validate(self) -> None:
        missing = [t for t in TABLES if t not in self._tables()]
        if "meta" in missing:
            raise VacuumlabError(f"{self.path}: not a vacuumlab store (no meta table)")
        version = self._schema_version()
        if version > SCHEMA_VERSION:
            raise VacuumlabError(
                f"{self.path}: written by a newer vacuumlab (schema_version {version}, "
                f"this one reads {SCHEMA_VERSION}); upgrade vacuumlab"
            )
        if missing:
            raise VacuumlabError(f"{self.path}: damaged store (missing tables {missing})")

    def _schema_version(self) -> int:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = None if row is None else row[0]
        if not isinstance(version, int) or version < 1:
            raise VacuumlabError(f"{self.path}: not a vacuumlab store (schema_version {version!r})")
        return version

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One explicit transaction, rolled back on any exception (Ctrl-C included).

        IMMEDIATE takes the write lock up front, so a busy database waits for the busy
        timeout instead of failing when a read transaction tries to upgrade.
        """
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException as exc:
            # SQLite may already have rolled back by itself (e.g. on a full disk).
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise VacuumlabError(f"{self.path}: cannot write: {_one_line(exc)}") from exc
            raise

    # -- runs ----------------------------------------------------------------------------

    def create_run(
        self,
        study: str,
        params: Mapping[str, Any],
        *,
        server_version: str,
        settings: Mapping[str, str],
        machine: Mapping[str, Any] | None = None,
        note: str | None = None,
    ) -> int:
        """Record the start of a run (status 'running', started now) and return its id."""
        machine = machine_info() if machine is None else machine
        values = (
            study,
            point_key(params),
            server_version,
            json.dumps(dict(settings), sort_keys=True),
            json.dumps(dict(machine), sort_keys=True),
            __version__,
            to_text(datetime.now(UTC)),
            note,
        )
        with self._transaction() as conn:
            cur = conn.execute(
                "INSERT INTO runs (study, params, server_version, settings, machine,"
                " vacuumlab_version, started_at, status, note)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?)",
                values,
            )
        return cast(int, cur.lastrowid)

    def finish_run(
        self,
        run_id: int,
        status: Literal["done", "failed", "interrupted"],
        note: str | None = None,
    ) -> None:
        """Set the run's final status and end time (now). A None note keeps the current one.

        May be called again, e.g. when an interrupted run is resumed and later completes.
        """
        with self._transaction() as conn:
            cur = conn.execute(
                "UPDATE runs SET status = ?, ended_at = ?, note = coalesce(?, note) WHERE id = ?",
                (status, to_text(datetime.now(UTC)), note, run_id),
            )
            if cur.rowcount == 0:
                raise self._no_run(run_id)

    def record_execution(self, run_id: int, executor: str, nodes: Mapping[str, int]) -> None:
        """Record that ``executor`` starts running points of the run, ``nodes`` mapping each
        node to the points it runs at once."""
        values = (run_id, executor, json.dumps(dict(nodes), sort_keys=True))
        with self._transaction() as conn:
            self._require_run(run_id)
            conn.execute(EXECUTIONS)
            conn.execute(
                "INSERT INTO executions (run_id, executor, nodes, started_at) VALUES (?, ?, ?, ?)",
                (*values, to_text(datetime.now(UTC))),
            )

    def executions(self, run_id: int) -> list[Execution]:
        """How the run's points were run, oldest first; [] for a run recorded before."""
        self._require_run(run_id)
        if "executions" not in self._tables():
            return []
        rows = self._conn.execute(
            "SELECT * FROM executions WHERE run_id = ? ORDER BY rowid", (run_id,)
        )
        return [
            Execution(row["executor"], loads_object(row["nodes"]), from_text(row["started_at"]))
            for row in rows
        ]

    def run(self, run_id: int) -> Run:
        row = self._conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise self._no_run(run_id)
        return replace(run_from_row(row), executions=tuple(self.executions(run_id)))

    def runs(self, study: str | None = None) -> list[Run]:
        """All runs, or those of one study, newest first (ids grow with creation)."""
        rows = self._conn.execute(
            "SELECT * FROM runs WHERE ? IS NULL OR study = ? ORDER BY id DESC", (study, study)
        )
        return [run_from_row(row) for row in rows]

    def _no_run(self, run_id: int) -> VacuumlabError:
        return VacuumlabError(f"no run {run_id} in {self.path}")

    def _require_run(self, run_id: int) -> None:
        if self._conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise self._no_run(run_id)

    # -- points --------------------------------------------------------------------------

    def record_point(
        self,
        run_id: int,
        params: Mapping[str, Any],
        repetition: int,
        metrics: Mapping[str, Metric],
        *,
        started_at: datetime,
        ended_at: datetime,
        series: Mapping[str, Sequence[Sample]] = NO_SERIES,
    ) -> int:
        """Record one finished measurement point with its series, atomically; return its id.

        `series` maps a metric name to (t, value) samples, t in seconds since `started_at`.
        NaN and infinite values (in metrics or series) are rejected with VacuumlabError rather
        than silently stored as null; the point is then not recorded at all. Recording the same
        (run, params, repetition) twice also raises VacuumlabError.
        """
        key = point_key(params)
        times = (to_text(started_at), to_text(ended_at))
        row = (run_id, key, key, repetition, check_metrics(metrics), *times)
        with self._transaction() as conn:
            self._require_run(run_id)
            point_id = self._insert_point(conn, row)
            conn.executemany(
                "INSERT INTO series (point_id, metric, t, value) VALUES (?, ?, ?, ?)",
                series_rows(point_id, series),
            )
        return point_id

    def _insert_point(self, conn: sqlite3.Connection, row: tuple[Any, ...]) -> int:
        try:
            cur = conn.execute(
                "INSERT INTO points (run_id, key, params, repetition, metrics, started_at,"
                " ended_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                row,
            )
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" not in str(exc):
                raise
            run_id, key, _, repetition = row[:4]
            raise VacuumlabError(
                f"point {key} repetition {repetition} of run {run_id} is already recorded"
                f" in {self.path}"
            ) from exc
        return cast(int, cur.lastrowid)

    def points(self, run_id: int) -> list[Point]:
        """The run's points in the order they were recorded."""
        self._require_run(run_id)
        rows = self._conn.execute("SELECT * FROM points WHERE run_id = ? ORDER BY id", (run_id,))
        return [point_from_row(row) for row in rows]

    def done(self, run_id: int) -> set[tuple[str, int]]:
        """The (key, repetition) pairs already recorded for the run: what a resume skips."""
        self._require_run(run_id)
        rows = self._conn.execute("SELECT key, repetition FROM points WHERE run_id = ?", (run_id,))
        return {(row[0], row[1]) for row in rows}

    # -- series --------------------------------------------------------------------------

    def series(self, point_id: int, metric: str) -> list[tuple[float, float | None]]:
        """The (t, value) samples of one metric of a point, ordered by t; [] if none."""
        self._require_point(point_id)
        rows = self._conn.execute(
            "SELECT t, value FROM series WHERE point_id = ? AND metric = ? ORDER BY t, rowid",
            (point_id, metric),
        )
        return [(row[0], row[1]) for row in rows]

    def metrics_of_series(self, point_id: int) -> list[str]:
        """The names of the metrics that have series for the point, sorted."""
        self._require_point(point_id)
        rows = self._conn.execute(
            "SELECT DISTINCT metric FROM series WHERE point_id = ? ORDER BY metric", (point_id,)
        )
        return [row[0] for row in rows]

    def _require_point(self, point_id: int) -> None:
        found = self._conn.execute("SELECT 1 FROM points WHERE id = ?", (point_id,)).fetchone()
        if found is None:
            raise VacuumlabError(f"no point {point_id} in {self.path}")
