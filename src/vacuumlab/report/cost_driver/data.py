"""Reading a cost-driver run: one observation per point with its combination, mode and
duration, grouped by combination in report order; and the statistics the sections and charts
share."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from vacuumlab.records.cost_driver import CostDriverConfig, CostDriverPoint
from vacuumlab.report.common import metric
from vacuumlab.report.cost_driver.figures import KNOWN_DISTRIBUTIONS
from vacuumlab.report.page import Obs, typed
from vacuumlab.stats.aggregate import Fit, Spread, linear_fit, spread
from vacuumlab.store import Metric, Point

AUTOVACUUM = "autovacuum"
MANUAL = "manual"

#: Where a point's duration comes from, in order of preference, with what each one is.
DURATION_SOURCES = (
    (
        "duration_stats_s",
        "the server's own count (the total_autovacuum_time delta, or VACUUM's elapsed time)",
    ),
    ("duration_log_s", "the elapsed time of the autovacuum log line"),
    ("duration_wall_s", "the wall clock from enabling autovacuum to seeing it done"),
)

#: (distribution, dead %, index count)
Combo = tuple[str, int, int]


@dataclass(frozen=True, slots=True)
class CdObs(Obs[Combo]):
    """A point: its combination (the key), mode and chosen duration."""

    mode: str = AUTOVACUUM
    duration: float | None = None
    source: str | None = None


Groups = dict[Combo, list[CdObs]]


@dataclass(frozen=True, slots=True)
class Data:
    """The run's observations, grouped by combination in report order."""

    auto: Groups
    manual: Groups
    skipped: int

    def all(self) -> list[CdObs]:
        return [o for group in (*self.auto.values(), *self.manual.values()) for o in group]


def _duration_of(metrics: Mapping[str, Metric]) -> tuple[float | None, str | None]:
    for name, _ in DURATION_SOURCES:
        value = metric(metrics, name)
        if value is not None:
            return value, name
    return None, None


def _observation(point: Point) -> CdObs | None:
    p = typed(CostDriverPoint.from_params, point.params)
    if p is None:
        return None
    duration, source = _duration_of(point.metrics)
    combo = (p.distribution, p.dead_pct, p.indexes)
    return CdObs(combo, point.repetition, point.metrics, p.mode, duration, source)


def combo_key(combo: Combo) -> tuple[int, str, int, int]:
    distribution, dead, indexes = combo
    known = KNOWN_DISTRIBUTIONS
    rank = known.index(distribution) if distribution in known else len(known)
    return rank, distribution, dead, indexes


def _group(observations: Iterable[CdObs]) -> Groups:
    groups: Groups = {}
    for o in sorted(observations, key=lambda o: (combo_key(o.key), o.repetition)):
        groups.setdefault(o.key, []).append(o)
    return groups


def read(points: Sequence[Point]) -> Data:
    observations = [_observation(p) for p in points]
    found = [o for o in observations if o is not None]
    auto = [o for o in found if o.mode == AUTOVACUUM]
    manual = [o for o in found if o.mode == MANUAL]
    return Data(_group(auto), _group(manual), len(points) - len(auto) - len(manual))


# -- what the run planned ------------------------------------------------------------------


def planned(config: CostDriverConfig | None) -> list[Combo]:
    if config is None:
        return []
    combos = itertools.product(config.distributions, config.dead_pcts, config.indexes)
    return sorted(combos, key=combo_key)


# -- statistics ----------------------------------------------------------------------------


def durations(observations: Sequence[CdObs]) -> Spread | None:
    return spread([o.duration for o in observations])


def sum_of(o: CdObs, *names: str) -> float | None:
    found = [o.get(name) for name in names]
    return None if any(v is None for v in found) else sum(v for v in found if v is not None)


def dirty_pct(o: CdObs) -> float | None:
    pct = o.get("dirty_pct")
    if pct is not None:
        return pct
    dirty, heap = o.get("dirty_pages"), o.get("heap_pages")
    return None if dirty is None or not heap else dirty / heap * 100


def lines(auto: Mapping[Combo, list[CdObs]]) -> dict[tuple[str, int], list[CdObs]]:
    """Observations by distribution × dead share, across index counts."""
    found: dict[tuple[str, int], list[CdObs]] = {}
    for (distribution, dead, _), group in auto.items():
        found.setdefault((distribution, dead), []).extend(group)
    return found


def index_fit(observations: Sequence[CdObs]) -> Fit | None:
    pairs = [(float(o.key[2]), o.duration) for o in observations if o.duration is not None]
    return linear_fit([x for x, _ in pairs], [y for _, y in pairs])
