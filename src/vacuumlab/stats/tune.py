"""Which measured trial wins, and whether its win is larger than the noise.

Every trial is measured once; the best of them and the current settings are measured again
(``--confirm``), so the two can be compared with their spread. The winner must beat the current
settings in Welch's test at 5 % (``stats.significance``); otherwise the answer is "no
significant improvement: keep your settings", which is a valid answer. With the dead-tuple
objective, latency is a constraint: the winner's p99 must not be significantly worse than the
current settings'. A trial whose replay missed the captured rates is flagged and cannot win:
it did not measure the user's workload.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from vacuumlab.records.custom_spec import checks
from vacuumlab.records.tune import Objective, TrialPoint
from vacuumlab.stats.significance import (
    NEEDS_REPEATS,
    Comparison,
    MeanInterval,
    mean_interval,
    welch,
)

#: The metric each objective minimises.
DEAD = "dead_tuples_peak"
LATENCY = "latency_p99_ms"


def objective_metrics(objective: Objective) -> tuple[str, ...]:
    if objective == "dead":
        return (DEAD,)
    if objective == "latency":
        return (LATENCY,)
    return (DEAD, LATENCY)


def value_of(metrics: Mapping[str, object], name: str) -> float | None:
    value = metrics.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


@dataclass
class TrialResult:
    """One trial's measurements, every repetition of it."""

    point: TrialPoint
    measurements: list[Mapping[str, object]] = field(default_factory=list)

    def values(self, metric: str) -> list[float]:
        found = (value_of(m, metric) for m in self.measurements)
        return [v for v in found if v is not None]

    def mean(self, metric: str) -> float | None:
        values = self.values(metric)
        return sum(values) / len(values) if values else None

    def interval(self, metric: str) -> MeanInterval | None:
        return mean_interval(self.values(metric))

    @property
    def flagged(self) -> str | None:
        """Why the trial cannot win: its replay missed the captured insert, update or delete
        rates. The HOT share is not among them: it is an outcome the settings move, not an
        input (vacuuming often hands pruned space to the free space map, where inserts take
        it before updates can: a queue's HOT share fell from 0.98 to 0.5 at naptime 1 s)."""
        for metrics in self.measurements:
            seconds = value_of(metrics, "rate_seconds") or 0.0
            off = [c for c in checks(metrics, seconds) if c.off and c.what != "HOT share"]
            if off:
                c = off[0]
                return (f"replay off: {c.table} {c.what} {c.replayed:,.1f} against "
                        f"{c.captured:,.1f} captured")  # fmt: skip
        return None


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer of a tune."""

    objective: Objective
    current: TrialResult | None
    best: TrialResult | None
    comparison: Comparison | None
    latency: Comparison | None
    improved: bool
    text: str


def group(points: Sequence[tuple[TrialPoint, Mapping[str, object]]]) -> list[TrialResult]:
    """Measured points grouped by trial, in trial order."""
    by_number: dict[int, TrialResult] = {}
    for point, metrics in points:
        by_number.setdefault(point.number, TrialResult(point)).measurements.append(metrics)
    return [by_number[n] for n in sorted(by_number)]


def leader(
    results: Sequence[TrialResult], objective: Objective, *, confirmed: bool = False
) -> TrialResult | None:
    """The best trial by the mean of its first objective, flagged trials and the current
    settings left out. ``confirmed``: among the trials measured more than once, when any
    is: the best of many single measurements is the luckiest as much as the best (the
    winner's curse), so the verdict judges the one that was measured again."""
    metric = objective_metrics(objective)[0]
    candidates = [
        r for r in results
        if r.point.origin != "current" and r.flagged is None and r.mean(metric) is not None
    ]  # fmt: skip
    repeated = [r for r in candidates if len(r.values(metric)) > 1]
    if confirmed and repeated:
        candidates = repeated
    return min(candidates, key=lambda r: r.mean(metric) or 0.0, default=None)


def current_of(results: Sequence[TrialResult]) -> TrialResult | None:
    return next((r for r in results if r.point.origin == "current"), None)


def decide(results: Sequence[TrialResult], objective: Objective) -> Verdict:
    """Compare the leader with the current settings; say whether it wins beyond the noise."""
    current, best = current_of(results), leader(results, objective, confirmed=True)
    metric = objective_metrics(objective)[0]
    if current is None or best is None:
        flagged = [r.flagged for r in results if r.point.origin != "current" and r.flagged]
        why = (
            f"every other trial missed the captured rates, e.g. {flagged[0]}"
            if flagged and best is None and current is not None
            else "not enough trials measured to compare"
        )
        return Verdict(objective, current, best, None, None, False, why)
    test = welch(best.values(metric), current.values(metric))
    latency = welch(best.values(LATENCY), current.values(LATENCY)) if metric != LATENCY else None
    lower = (best.mean(metric) or 0.0) < (current.mean(metric) or 0.0)
    worse_latency = (
        latency is not None
        and latency.verdict == "significant"
        and (latency.mean_a or 0.0) > (latency.mean_b or 0.0)
    )
    improved = test.verdict == "significant" and lower and not worse_latency
    if improved:
        text = f"trial {best.point.number} beats the current settings beyond the noise"
    elif worse_latency:
        text = ("no significant improvement: keep your settings (the best trial's p99 latency "
                "is significantly worse than the current settings')")  # fmt: skip
    elif test.verdict == "not testable":
        why = (
            "not testable: each was measured once; --confirm 1 or more measures them again"
            if test.text == NEEDS_REPEATS
            else test.text
        )
        text = f"no significant improvement: keep your settings ({why})"
    else:
        text = "no significant improvement: keep your settings"
    return Verdict(objective, current, best, test, latency, improved, text)
