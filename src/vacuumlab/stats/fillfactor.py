"""The fillfactor study's verdicts: what a lower fillfactor changes against the reference one,
whether that is more than noise, and which fillfactor to advise at one data size.

Pure functions over the measured values of each group of repetitions; the report words them.
Point estimates are medians over the repetitions; the tests compare means (Welch's t-test),
because that is what the test is about.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from vacuumlab.stats.significance import Comparison, welch

#: A HOT gain this close to the largest one counts as "nearly all of it".
NEARLY_ALL = 0.9

#: One group of repetitions: each metric's recorded values.
Samples = Mapping[str, Sequence[float]]


def median(group: Samples, name: str) -> float | None:
    values = group.get(name, ())
    return statistics.median(values) if values else None


def relative(a: float | None, b: float | None) -> float | None:
    """``a`` against ``b`` as a relative change (0.05 is 5 % more)."""
    return None if a is None or b is None or b == 0 else a / b - 1


def difference(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def compare(group: Samples, reference: Samples, name: str) -> Comparison:
    """Welch's test of the metric's mean in `group` against `reference`."""
    return welch(list(group.get(name, ())), list(reference.get(name, ())))


def _up(test: Comparison, change: float | None) -> bool:
    return test.verdict == "significant" and change is not None and change > 0


def _negated(value: float | None) -> float | None:
    return None if value is None else -value


@dataclass(frozen=True, slots=True)
class Effect:
    """A fillfactor against the reference at one size: median changes and the tests."""

    fillfactor: int
    hot: float | None  # difference of HOT shares
    table: float | None  # relative difference of the table size at the end
    tps: float | None  # relative difference of TPS
    update: float | None  # relative difference of the UPDATE mean
    tps_test: Comparison
    update_test: Comparison
    hot_test: Comparison

    def better(self) -> bool:
        """Significantly more TPS or a significantly faster UPDATE."""
        return _up(self.tps_test, self.tps) or _up(self.update_test, _negated(self.update))

    def worse(self) -> bool:
        return _up(self.tps_test, _negated(self.tps)) or _up(self.update_test, self.update)


def effect(fillfactor: int, group: Samples, reference: Samples) -> Effect:
    """One fillfactor's group against the reference fillfactor's group at the same size."""

    def change(name: str) -> float | None:
        return relative(median(group, name), median(reference, name))

    return Effect(
        fillfactor,
        difference(median(group, "hot_share"), median(reference, "hot_share")),
        change("table_bytes_end"),
        change("tps"),
        change("update_mean_ms"),
        compare(group, reference, "tps"),
        compare(group, reference, "update_mean_ms"),
        compare(group, reference, "hot_share"),
    )


def effects(groups: Mapping[int, Samples], reference: int) -> list[Effect]:
    """Every measured fillfactor but the reference, against it, in the order of `groups`
    (the fillfactors measured at one size). None without the reference."""
    ref = groups.get(reference)
    if ref is None:
        return []
    return [effect(ff, group, ref) for ff, group in groups.items() if ff != reference]


def cheapest_hot(found: Sequence[Effect]) -> Effect | None:
    """The highest fillfactor that gets nearly all of the largest HOT gain measured: the least
    table space paid for the HOT updates. None when no fillfactor raised the HOT share."""
    gains = [e for e in found if e.hot is not None and e.hot > 0]
    if not gains:
        return None
    best = max(e.hot or 0.0 for e in gains)
    return max(
        (e for e in gains if (e.hot or 0.0) >= NEARLY_ALL * best), key=lambda e: e.fillfactor
    )


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to advise at one size: `faster` (a fillfactor is significantly faster and nowhere
    slower), `hot` (the cheapest fillfactor for the HOT gain) or `no_hot` (no fillfactor raised
    the HOT share; the highest is shown). `slower` are the other fillfactors that were
    significantly slower than the reference."""

    kind: Literal["faster", "hot", "no_hot"]
    shown: Effect
    slower: tuple[int, ...]


def _pick(found: Sequence[Effect]) -> tuple[Literal["faster", "hot", "no_hot"], Effect]:
    gains = [e for e in found if e.better() and not e.worse()]
    if gains:
        return "faster", max(gains, key=lambda e: e.tps if e.tps is not None else float("-inf"))
    hot = cheapest_hot(found)
    if hot is None:
        return "no_hot", max(found, key=lambda e: e.fillfactor)
    return "hot", hot


def verdict(found: Sequence[Effect]) -> Verdict | None:
    """The verdict at one size from its effects; None when nothing was compared."""
    if not found:
        return None
    kind, shown = _pick(found)
    slower = tuple(e.fillfactor for e in found if e.worse() and e is not shown)
    return Verdict(kind, shown, slower)
