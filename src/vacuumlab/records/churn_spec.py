"""What the churn study measures and stores: the contract between the run and its report.

The study reproduces "Optimizing Postgres's Auto-Vacuum for Blazingly-High-Churn Tables"
(Tembo blog, 2023): a queue table under six autovacuum settings. Each stored point is one step (one
repetition); its metrics and per-second series use the names below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vacuumlab.records.churn import POST_STEPS, Step
from vacuumlab.records.publication import Publication

__all__ = [
    "POST_STEPS",
    "PUBLICATION",
    "PUBLISHED",
    "STUDY",
    "Published",
    "Step",
    "reloption_metric",
    "reloptions_in_force",
    "setting_metric",
    "settings_in_force",
]

STUDY = "churn"
#: The published work this study reproduces.
PUBLICATION = Publication(
    title="Optimizing Postgres's Auto-Vacuum for Blazingly-High-Churn Tables",
    site="Tembo blog",
    year=2023,
)


@dataclass(frozen=True, slots=True)
class Published:
    """The post's pgbench summary for a step (15 clients, 300 s, 8 vCPU, 16 GB)."""

    tps: float
    latency_ms: float
    stddev_ms: float


#: By step number (1-based); the post printed no figures for step 4.
PUBLISHED: dict[int, Published | None] = {
    1: Published(4377.108929, 3.408, 1.043),
    2: Published(4602.512592, 3.237, 0.847),
    3: Published(4587.258737, 3.250, 0.950),
    4: None,
    5: Published(4806.122368, 3.106, 0.950),
    6: Published(5267.879897, 2.825, 0.812),
}


#: Per-step metrics (``points.metrics``); latencies in ms, sizes in bytes, CIs are 95 %.
METRICS: tuple[str, ...] = (
    "transactions", "failed", "duration_s", "warmup_s",
    "tps", "tps_ci_low", "tps_ci_high",
    "latency_mean_ms", "latency_mean_ci_low", "latency_mean_ci_high",
    "latency_stddev_ms", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms",
    "latency_p99_ci_low", "latency_p99_ci_high",
    "autovacuum_count", "dead_tuples_peak",
    "heap_bytes_start", "heap_bytes_end", "index_bytes_start", "index_bytes_end",
    "toast_bytes_start", "toast_bytes_end",
    "sawtooth_amplitude", "latency_dead_correlation",
    "autovacuum_read_bytes", "autovacuum_write_bytes",
)  # fmt: skip


#: What a step ran with, read back from the server just before its load started (string
#: metrics, beside those above): every autovacuum_* and vacuum_* setting and any other a step of
#: the run names, and each storage parameter set on the study's tables. A step runs on the
#: server's settings as they were before the run plus its own; these say what that came to.
SETTING_PREFIX = "setting:"
RELOPTION_PREFIX = "reloption:"


def setting_metric(name: str) -> str:
    """A point's metric name for a server setting in force when its load started; its value
    is ``pg_settings.setting`` as a string, in the setting's base unit (naptime ``60``, in s)."""
    return f"{SETTING_PREFIX}{name}"


def reloption_metric(table: str, option: str) -> str:
    """A point's metric name for a storage parameter set on one of the study's tables when its
    load started (``pg_class.reloptions``; the TOAST relation's as ``toast.NAME``, as ALTER
    TABLE names them); its value as the catalog spells it. A parameter not set has no metric.
    The option goes last, after the last colon."""
    return f"{RELOPTION_PREFIX}{table}:{option}"


def settings_in_force(metrics: Mapping[str, object]) -> dict[str, str]:
    """The server settings a point recorded, by name (empty for a point stored before they
    were recorded)."""
    return {
        name.removeprefix(SETTING_PREFIX): str(value)
        for name, value in metrics.items()
        if name.startswith(SETTING_PREFIX) and value is not None
    }


def reloptions_in_force(metrics: Mapping[str, object]) -> dict[str, dict[str, str]]:
    """The storage parameters a point recorded, by table, then option."""
    found: dict[str, dict[str, str]] = {}
    for name, value in metrics.items():
        if name.startswith(RELOPTION_PREFIX) and value is not None:
            table, option = name.removeprefix(RELOPTION_PREFIX).rsplit(":", 1)
            found.setdefault(table, {})[option] = str(value)
    return found


#: Per-second series (``series.metric``); t is seconds since the step's load started.
SERIES_PGBENCH = ("tps", "latency_mean_ms", "latency_p50_ms", "latency_p95_ms",
                  "latency_p99_ms", "latency_max_ms")  # fmt: skip
SERIES_SAMPLER = ("n_dead_tup", "n_live_tup", "heap_bytes", "index_bytes", "toast_bytes",
                  "vacuum_running", "autovacuum_read_bytes", "autovacuum_write_bytes")  # fmt: skip
#: One sample per autovacuum of the queue table: t = its start, value = its duration in s.
SERIES_AUTOVACUUM = "autovacuum"
