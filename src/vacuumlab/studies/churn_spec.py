"""What the churn study measures and stores: the contract between the run and its report.

The study reproduces "Optimizing Postgres's Auto-Vacuum for Blazingly-High-Churn Tables"
(Tembo blog, 2023): a queue table under six autovacuum settings. Each stored point is one step (one
repetition); its metrics and per-second series use the names below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vacuumlab.records.publication import Publication

STUDY = "churn"
#: The published work this study reproduces.
PUBLICATION = Publication(
    title="Optimizing Postgres's Auto-Vacuum for Blazingly-High-Churn Tables",
    site="Tembo blog",
    year=2023,
)


@dataclass(frozen=True, slots=True)
class Step:
    """A named set of settings, applied server-wide or to the queue table only."""

    name: str
    settings: dict[str, str]
    scope: Literal["server", "table"] = "server"


_DEFAULTS = {
    "autovacuum_vacuum_scale_factor": "0.2",
    "autovacuum_vacuum_cost_delay": "20ms",
    "autovacuum_vacuum_cost_limit": "-1",
    "vacuum_cost_limit": "200",
    "autovacuum_naptime": "1min",
}
_COST = _DEFAULTS | {
    "autovacuum_vacuum_cost_delay": "10ms",
    "autovacuum_vacuum_cost_limit": "10000",
}
_SCALE = _COST | {"autovacuum_vacuum_scale_factor": "0.1"}
_NAP30 = _SCALE | {"autovacuum_naptime": "30s"}
_NODELAY = _NAP30 | {"autovacuum_vacuum_cost_delay": "0"}
_NAP10 = _NODELAY | {"autovacuum_naptime": "10s"}

#: The post's six steps, in its order; each carries every setting it runs with.
POST_STEPS: tuple[Step, ...] = (
    Step("defaults", _DEFAULTS),
    Step("cost_delay 10ms, cost_limit 10000", _COST),
    Step("+ scale_factor 0.1", _SCALE),
    Step("+ naptime 30s", _NAP30),
    Step("+ cost_delay 0", _NODELAY),
    Step("+ naptime 10s", _NAP10),
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


@dataclass(frozen=True, slots=True)
class Preset:
    seconds: int
    warmup: int
    clients: int | None  # None: suited to the machine
    backlog: int = 100_000


PRESETS: dict[str, Preset] = {
    "quick": Preset(seconds=90, warmup=10, clients=None),
    "demo": Preset(seconds=35, warmup=5, clients=None, backlog=50_000),
    "paper": Preset(seconds=300, warmup=10, clients=15),
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
