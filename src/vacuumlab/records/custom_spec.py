"""What the custom study measures and stores: the contract between the run and its report.

Each stored point is one settings step (one repetition). Beside what the churn study measures
of one table (TPS, latency percentiles, dead tuples, autovacuums, growth, the sawtooth: the same
metric and series names, ``records/churn_spec.py``), it stores each replayed table's change
rates from ``pg_stat_all_tables`` over the step, and for a profile the captured rates times
``--scale``: the replay's fidelity. Like a churn step, it stores the settings in force when its
load started (:func:`setting_metric`) and each table's storage parameters
(:func:`reloption_metric`), as the churn study names them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from vacuumlab.records.churn_spec import METRICS as CHURN_METRICS
from vacuumlab.records.churn_spec import (
    reloption_metric,
    reloptions_in_force,
    setting_metric,
    settings_in_force,
)
from vacuumlab.records.publication import Publication

__all__ = [
    "ARRIVAL_Z",
    "CAPTURE_SECONDS",
    "FLUSH_INTERVAL_S",
    "HOT_TOLERANCE",
    "METRICS",
    "PUBLICATION",
    "RATES",
    "RATE_SECONDS",
    "SAMPLED_TABLE",
    "STUDY",
    "TOLERANCE",
    "Check",
    "Rate",
    "Side",
    "checks",
    "rate_metric",
    "rate_tables",
    "reloption_metric",
    "reloptions_in_force",
    "setting_metric",
    "settings_in_force",
]

STUDY = "custom"
#: The user's own workload: no published work.
PUBLICATION: Publication | None = None
#: Per-step metrics shared with the churn study, for the table the sampler follows.
METRICS = CHURN_METRICS
#: The table the sampler followed (metric ``sampled_table``, a string).
SAMPLED_TABLE = "sampled_table"
#: Seconds the counters' rates are taken over (the whole load, warm-up included).
RATE_SECONDS = "rate_seconds"
#: Seconds of the capture's window, for a profile replay.
CAPTURE_SECONDS = "capture_seconds"
#: How far behind a busy backend's table counters may be when read: it flushes them at most
#: once a second (PGSTAT_MIN_INTERVAL, pgstat.c). The capture reads them while the load runs,
#: so its rates over a window of W seconds are uncertain by about this / W of themselves (the
#: replay reads them after its load has exited and flushed: exactly).
FLUSH_INTERVAL_S = 1.0

Rate = Literal["inserts", "updates", "hot_updates", "deletes", "dead_tuples", "hot_share"]
RATES: Final[tuple[Rate, ...]] = ("inserts", "updates", "hot_updates", "deletes", "dead_tuples")
#: A replayed rate further than this share from the captured one puts a warning on top.
TOLERANCE = 0.10
#: The replay's transactions arrive at random (pgbench --rate schedules them as a Poisson
#: process and draws each script by its weight), so a rate r over S seconds is itself
#: uncertain by sqrt(r / S): a 4-second trial at 100 rows a second, by 5 a second. A check
#: allows this many of those on top of :data:`TOLERANCE` (a false flag about 3 in 1,000).
ARRIVAL_Z = 3.0
#: The HOT share may differ by this much (an absolute share, 0 to 1).
HOT_TOLERANCE = 0.10
Side = Literal["replayed", "captured"]


def rate_metric(side: Side, rate: Rate, table: str) -> str:
    """A point's metric name for one table's rate, per second (the table name last, whole);
    ``hot_share`` is the replay's HOT share after the warm-up."""
    return f"rate:{side}:{rate}:{table}"


def rate_tables(metrics: Mapping[str, object]) -> list[str]:
    """The tables a point stored rates of, in name order."""
    prefix = "rate:replayed:inserts:"
    return sorted(name[len(prefix) :] for name in metrics if name.startswith(prefix))


@dataclass(frozen=True, slots=True)
class Check:
    """One table's replayed rate against the captured one times the scale."""

    table: str
    what: str  # inserts, updates, deletes, HOT share
    replayed: float
    captured: float
    off: bool

    @property
    def deviation(self) -> float | None:
        """(replayed − captured) / captured, or the share difference for the HOT share."""
        if self.what == "HOT share":
            return self.replayed - self.captured
        return None if self.captured == 0 else (self.replayed - self.captured) / self.captured


def _get(metrics: Mapping[str, object], side: Side, rate: Rate, table: str) -> float | None:
    value = metrics.get(rate_metric(side, rate, table))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def checks(metrics: Mapping[str, object], seconds: float) -> list[Check]:
    """The fidelity checks of one point: per table, inserts, updates and deletes within
    :data:`TOLERANCE`, plus one row over the ``seconds`` the rates cover (for rare changes),
    the random arrivals' own spread over them (:data:`ARRIVAL_Z`) and the captured rate's
    own uncertainty (:data:`FLUSH_INTERVAL_S` over the capture's window); the HOT share
    within :data:`HOT_TOLERANCE`. Empty when nothing was captured."""
    window = metrics.get(CAPTURE_SECONDS)
    flush = FLUSH_INTERVAL_S / window if isinstance(window, int | float) and window > 0 else 0.0
    found = []
    for table in rate_tables(metrics):
        for rate in ("inserts", "updates", "deletes"):
            replayed = _get(metrics, "replayed", rate, table)
            captured = _get(metrics, "captured", rate, table)
            if replayed is None or captured is None:
                continue
            arrivals = ARRIVAL_Z * math.sqrt(captured / seconds) + 1 / seconds if seconds > 0 else 0
            slack = (TOLERANCE + flush) * captured + arrivals
            found.append(Check(table, rate, replayed, captured, abs(replayed - captured) > slack))
        hot = _hot_check(metrics, table)
        if hot is not None:
            found.append(hot)
    return found


def _hot_check(metrics: Mapping[str, object], table: str) -> Check | None:
    values = [
        _get(metrics, side, rate, table)
        for side in ("replayed", "captured")
        for rate in ("updates", "hot_updates")
    ]
    updates, hot, captured_updates, captured_hot = values
    if None in values or not captured_updates:
        return None
    assert hot is not None
    assert captured_hot is not None
    assert captured_updates is not None
    after_warmup = _get(metrics, "replayed", "hot_share", table)
    replayed = after_warmup if after_warmup is not None else hot / updates if updates else 0.0
    captured = captured_hot / captured_updates
    return Check(table, "HOT share", replayed, captured, abs(replayed - captured) > HOT_TOLERANCE)
