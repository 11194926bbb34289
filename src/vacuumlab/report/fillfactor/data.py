"""Reading a fillfactor run: one observation per point, grouped by size and fillfactor, and
each group's values as the verdicts in `vacuumlab.stats.fillfactor` take them."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vacuumlab.records.fillfactor import FillfactorConfig, FillfactorPoint
from vacuumlab.records.fillfactor_spec import SIZE_LABELS, SIZES, Size, reference
from vacuumlab.report.page import Obs, typed, values
from vacuumlab.stats.fillfactor import Samples
from vacuumlab.store import Point

Key = tuple[Size, int]  # size, fillfactor

#: Every metric the verdicts read.
VERDICT_METRICS = ("hot_share", "table_bytes_end", "tps", "update_mean_ms")


@dataclass(frozen=True, slots=True)
class FfObs(Obs[Key]):
    """A point: its size and fillfactor (the key), and the pgbench scale it was loaded at."""

    scale: int | None = None

    @property
    def size(self) -> Size:
        return self.key[0]

    @property
    def fillfactor(self) -> int:
        return self.key[1]


@dataclass(frozen=True, slots=True)
class Data:
    groups: dict[Key, list[FfObs]]
    sizes: list[Size]
    fillfactors: list[int]  # descending, as the published table's columns
    reference: int
    skipped: int

    def get(self, size: Size, fillfactor: int) -> list[FfObs]:
        return self.groups.get((size, fillfactor), [])

    def samples(self, size: Size) -> dict[int, Samples]:
        """The size's groups, by fillfactor in column order, as the verdicts take them."""
        return {
            ff: {name: values(group, name) for name in VERDICT_METRICS}
            for ff in self.fillfactors
            if (group := self.get(size, ff))
        }


def _observation(point: Point) -> FfObs | None:
    p = typed(FillfactorPoint.from_params, point.params)
    if p is None or p.size not in SIZES:
        return None
    return FfObs((p.size, p.fillfactor), point.repetition, point.metrics, p.scale)


def read(points: Sequence[Point]) -> Data:
    found = [o for o in map(_observation, points) if o is not None]
    groups: dict[Key, list[FfObs]] = {}
    for o in found:
        groups.setdefault(o.key, []).append(o)
    sizes = [s for s in SIZES if any(o.size == s for o in found)]
    fillfactors = sorted({o.fillfactor for o in found}, reverse=True)
    ref = reference(fillfactors) if fillfactors else 100
    return Data(groups, sizes, fillfactors, ref, len(points) - len(found))


def median_of(group: Sequence[Obs[Any]], name: str) -> float | None:
    found = values(group, name)
    return statistics.median(found) if found else None


def extent(group: Sequence[Obs[Any]], name: str) -> tuple[float | None, float | None]:
    found = values(group, name)
    return (min(found), max(found)) if found else (None, None)


def planned(config: FillfactorConfig | None) -> list[Key]:
    if config is None:
        return []
    fillfactors = sorted(config.fillfactors, reverse=True)
    return [(s, f) for s in SIZES if s in config.sizes for f in fillfactors]


def key_text(key: Key) -> str:
    return f"{SIZE_LABELS[key[0]]}, fillfactor {key[1]}"


def ordered(data: Data) -> list[Key]:
    return [(s, f) for s in data.sizes for f in data.fillfactors if (s, f) in data.groups]
