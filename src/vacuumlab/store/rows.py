"""What the results store holds, as Python values: runs, their executions and points, and the
conversions between them and SQLite rows (timestamps as fixed-width UTC text, metrics and
parameters as JSON)."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal, cast

from vacuumlab.errors import VacuumlabError

RunStatus = Literal["running", "done", "failed", "interrupted"]
Metric = float | int | str | None
Sample = tuple[float, float | None]

# An immutable default, so the signature can say "no series" without a mutable `{}`.
NO_SERIES: Mapping[str, Sequence[Sample]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Run:
    """One execution of a study, with the environment it ran in."""

    id: int
    study: str
    params: dict[str, Any]
    server_version: str
    settings: dict[str, str]
    machine: dict[str, Any]
    vacuumlab_version: str
    started_at: datetime
    ended_at: datetime | None
    status: RunStatus
    note: str | None
    #: How its points were run, once per start or resume (read by ``Store.run``).
    executions: tuple[Execution, ...] = ()


@dataclass(frozen=True, slots=True)
class Execution:
    """One start (or resume) of a run: which executor ran its points, and how many points
    each node ran at once (``{"host": 1}`` for the local loop)."""

    executor: str
    nodes: dict[str, int]
    started_at: datetime

    @property
    def side_by_side(self) -> bool:
        """Whether points ran concurrently on one node, sharing its CPU and disk."""
        return any(slots > 1 for slots in self.nodes.values())


@dataclass(frozen=True, slots=True)
class Point:
    """One measured parameter combination (one repetition) of a run."""

    id: int
    run_id: int
    key: str
    params: dict[str, Any]
    repetition: int
    metrics: dict[str, Metric]
    started_at: datetime
    ended_at: datetime


def point_key(params: Mapping[str, Any]) -> str:
    """The canonical JSON of `params`: equal parameter sets give equal keys, whatever the order."""
    try:
        return json.dumps(dict(params), sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise VacuumlabError(f"parameters are not plain JSON values: {exc}") from exc


def to_text(when: datetime) -> str:
    """A fixed-width UTC ISO string, so text order is time order and SQLite can parse it."""
    if when.tzinfo is None:
        raise VacuumlabError(f"timestamp {when.isoformat()} has no time zone; pass an aware one")
    return when.astimezone(UTC).isoformat(timespec="microseconds")


def from_text(text: str) -> datetime:
    return datetime.fromisoformat(text)


def check_metrics(metrics: Mapping[str, Metric]) -> str:
    """The metrics as JSON; NaN/inf are rejected because JSON has no spelling for them."""
    for name, value in metrics.items():
        if isinstance(value, float) and not math.isfinite(value):
            raise VacuumlabError(f"metric {name!r} is {value}; only finite numbers can be stored")
        if value is not None and not isinstance(value, int | float | str):
            raise VacuumlabError(f"metric {name!r} is a {type(value).__name__}, not a number")
    return json.dumps(dict(metrics), sort_keys=True)


def series_rows(
    point_id: int, series: Mapping[str, Sequence[Sample]]
) -> Iterator[tuple[int, str, float, float | None]]:
    """Series rows, checked lazily: a bad sample aborts the insert mid-way, and the
    surrounding transaction then drops the whole point."""
    for metric, samples in series.items():
        for t, value in samples:
            if not math.isfinite(t) or (value is not None and not math.isfinite(value)):
                raise VacuumlabError(
                    f"series {metric!r} has sample ({t}, {value}); only finite numbers are stored"
                )
            yield point_id, metric, float(t), None if value is None else float(value)


def loads_object(text: str) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(text))


def run_from_row(row: sqlite3.Row) -> Run:
    ended = row["ended_at"]
    return Run(
        id=row["id"],
        study=row["study"],
        params=loads_object(row["params"]),
        server_version=row["server_version"],
        settings=loads_object(row["settings"]),
        machine=loads_object(row["machine"]),
        vacuumlab_version=row["vacuumlab_version"],
        started_at=from_text(row["started_at"]),
        ended_at=None if ended is None else from_text(ended),
        status=cast(RunStatus, row["status"]),  # the CHECK constraint guarantees the values
        note=row["note"],
    )


def point_from_row(row: sqlite3.Row) -> Point:
    return Point(
        id=row["id"],
        run_id=row["run_id"],
        key=row["key"],
        params=loads_object(row["params"]),
        repetition=row["repetition"],
        metrics=loads_object(row["metrics"]),
        started_at=from_text(row["started_at"]),
        ended_at=from_text(row["ended_at"]),
    )
