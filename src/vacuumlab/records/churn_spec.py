"""What the churn study measures and stores: the contract between the run and its report.

The study reproduces "Optimizing Postgres's Auto-Vacuum for Blazingly-High-Churn Tables"
(Tembo blog, 2023): a queue table under six autovacuum settings. Each stored point is one step (one
repetition); its metrics and per-second series use the names below.
"""

from __future__ import annotations

from dataclasses import dataclass

from vacuumlab.records.churn import POST_STEPS, Step
from vacuumlab.records.publication import Publication

__all__ = ["POST_STEPS", "PUBLICATION", "PUBLISHED", "STUDY", "Published", "Step"]

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


#: Per-second series (``series.metric``); t is seconds since the step's load started.
SERIES_PGBENCH = ("tps", "latency_mean_ms", "latency_p50_ms", "latency_p95_ms",
                  "latency_p99_ms", "latency_max_ms")  # fmt: skip
SERIES_SAMPLER = ("n_dead_tup", "n_live_tup", "heap_bytes", "index_bytes", "toast_bytes",
                  "vacuum_running", "autovacuum_read_bytes", "autovacuum_write_bytes")  # fmt: skip
#: One sample per autovacuum of the queue table: t = its start, value = its duration in s.
SERIES_AUTOVACUUM = "autovacuum"
