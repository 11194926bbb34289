"""What the scheduling study measures and stores: the contract between the run and its report.

The study has no published source: it holds vacuumlab's own simulator of the autovacuum
launcher and workers (``model.simulator``) against PostgreSQL. Each stored point is one arm
(one repetition): forty tables churned at rates spread from hot to quiet (the spread
workload) or ten of HOT-only tables, non-HOT churners and one busy table (the mixed one), every
autovacuum's start and end per table, the dead tuples per table at 1 Hz, and what the
simulator predicted from two snapshots taken early in the arm. ``hot_share`` is the share of a
table's updates between the two snapshots that were HOT.
"""

from __future__ import annotations

from vacuumlab.records.publication import Publication
from vacuumlab.records.scheduling import PAPER_ARMS, QUICK_ARMS, Arm

__all__ = ["ABOUT", "PAPER_ARMS", "PUBLICATION", "QUICK_ARMS", "STUDY", "Arm"]

STUDY = "scheduling"
#: No published work: the study validates the simulator.
PUBLICATION: Publication | None = None
ABOUT = (
    "It validates vacuumlab's simulator of the autovacuum launcher and workers against "
    "PostgreSQL: no published work is reproduced."
)
#: The goal the issue sets: the median error per table within 15 % for counts and peaks.
GOAL = 0.15

#: Per-arm metrics (``points.metrics``). Errors are relative, |predicted − measured| /
#: max(measured, 1), medians over the tables each compares; first starts in seconds.
METRICS: tuple[str, ...] = (
    "window_start_s", "window_s", "transactions", "tps", "launches_measured",
    "tables_counted", "median_count_error", "median_peak_error", "median_duration_error",
    "median_first_start_error_s", "vacuums_measured", "vacuums_predicted",
    "busy_share_measured", "busy_share_predicted",
)  # fmt: skip

#: Per-table metrics are stored as ``<table>|<name>``.
TABLE_METRICS: tuple[str, ...] = (
    "dead_per_second", "vacuums_measured", "vacuums_predicted",
    "first_start_measured_s", "first_start_predicted_s",
    "mean_duration_measured_s", "mean_duration_predicted_s",
    "peak_dead_measured", "peak_dead_predicted", "count_error", "peak_error",
    "duration_error", "hot_share",
)  # fmt: skip

#: Series, one per table: t = seconds since the arm's load started.
DEAD = "dead"  # n_dead_tup at 1 Hz
MEASURED = "measured"  # one sample per autovacuum: t = its start, value = its duration
PREDICTED = "predicted"  # the same, as the simulator predicted it
LAUNCHES = "launches"  # one sample per worker seen starting: t = its backend_start


def series_name(kind: str, table: str) -> str:
    return f"{kind}|{table}"


def table_metric(table: str, name: str) -> str:
    return f"{table}|{name}"
