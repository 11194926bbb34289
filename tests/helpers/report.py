"""Synthetic churn runs in a real results store, for report tests (no server needed).

`make_churn_run` records what the churn study records: the run with its parameters, then one
point per step and repetition with every metric of `churn_spec.METRICS` and plausible series:
dead tuples that climb until an autovacuum removes them, latency that follows them (a
sawtooth), TPS that moves the other way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import numpy as np

from vacuumlab.records.churn_spec import POST_STEPS, SERIES_AUTOVACUUM
from vacuumlab.store import Store

XSS = '<script>alert(1)</script> "quotes" & ampersands'
T0 = datetime(2025, 1, 15, 9, 30, 0, tzinfo=UTC)
MACHINE = {
    "hostname": "lab-1",
    "platform": "Linux-6.1-x86_64",
    "machine": "x86_64",
    "python": "3.11.2",
    "cpu_count": 8,
    "memory_bytes": 16 * 2**30,
    "vacuumlab_version": "0.1.0",
}
SERVER_VERSION = "PostgreSQL 18.6 on x86_64-pc-linux-gnu, compiled by gcc, 64-bit"

Samples = list[tuple[float, float | None]]


def step_params(number: int, *, with_xss: bool = False) -> dict[str, Any]:
    """A step as the study stores it in the run's parameters (with 'number')."""
    step = POST_STEPS[(number - 1) % len(POST_STEPS)]
    settings = dict(step.settings)
    name = step.name
    if with_xss and number == 1:
        name = f"{XSS} {name}"
        settings["<script>alert(1)</script>"] = XSS
    return {"number": number, "name": name, "scope": step.scope, "settings": settings}


def synthetic_step(
    number: int, repetition: int = 0, seconds: int = 60, warmup: int = 10
) -> tuple[dict[str, Any], dict[str, Samples]]:
    """Metrics and series of one step: later steps vacuum more often and so keep fewer dead
    tuples and lower latency."""
    rng = np.random.default_rng(1000 * number + repetition)
    period = max(60.0 / number, 6.0)  # seconds between autovacuums
    duration = max(4.0 - 0.5 * number, 0.5)
    starts = np.arange(period / 2, seconds - 1, period)
    autovacuum: Samples = [(float(s), float(duration)) for s in starts]
    t = np.arange(0.0, seconds, 1.0)
    rate = 400.0
    dead = np.empty_like(t)
    last_clear = 0.0
    for i, ti in enumerate(t):
        done = [s + duration for s in starts if s + duration <= ti]
        if done:
            last_clear = done[-1]
        dead[i] = rate * (ti - last_clear) + 50.0
    p50 = 2.0 + dead / 8000.0 + rng.normal(0, 0.05, t.size)
    p99 = 3.0 * p50 + rng.normal(0, 0.3, t.size)
    tps = 1000.0 / p50 * 4 + rng.normal(0, 20, t.size)
    series: dict[str, Samples] = {
        "tps": [(float(a), float(b)) for a, b in zip(t, tps, strict=True)],
        "latency_p50_ms": [(float(a), float(b)) for a, b in zip(t, p50, strict=True)],
        "latency_p99_ms": [(float(a), float(b)) for a, b in zip(t, p99, strict=True)],
        "latency_mean_ms": [(float(a), float(b * 1.1)) for a, b in zip(t, p50, strict=True)],
        "n_dead_tup": [(float(a) + 0.25, float(b)) for a, b in zip(t, dead, strict=True)],
        SERIES_AUTOVACUUM: autovacuum,
    }
    # One second without transactions: stored as NULL, drawn as a gap.
    series["tps"][seconds // 2] = (float(seconds // 2), None)
    measured = slice(warmup, seconds)
    mean = float(np.mean(p50[measured]) * 1.1)
    mean_tps = float(np.mean(tps[measured]))
    metrics: dict[str, Any] = {
        "transactions": int(mean_tps * (seconds - warmup)),
        "failed": 0,
        "duration_s": float(seconds - warmup),
        "warmup_s": float(warmup),
        "tps": mean_tps,
        "tps_ci_low": mean_tps * 0.98,
        "tps_ci_high": mean_tps * 1.02,
        "latency_mean_ms": mean,
        "latency_mean_ci_low": mean * 0.97,
        "latency_mean_ci_high": mean * 1.03,
        "latency_stddev_ms": float(np.std(p99[measured]) / 2),
        "latency_p50_ms": float(np.median(p50[measured])),
        "latency_p95_ms": float(np.percentile(p99[measured], 50)),
        "latency_p99_ms": float(np.percentile(p99[measured], 95)),
        "latency_p99_ci_low": float(np.percentile(p99[measured], 90)),
        "latency_p99_ci_high": float(np.percentile(p99[measured], 99)),
        "autovacuum_count": len(autovacuum),
        "dead_tuples_peak": int(dead.max()),
        "heap_bytes_start": 8 * 2**20,
        "heap_bytes_end": int(8 * 2**20 * (1 + 0.5 / number)),
        "index_bytes_start": 2 * 2**20,
        "index_bytes_end": int(2 * 2**20 * (1 + 0.3 / number)),
        "toast_bytes_start": 0,
        "toast_bytes_end": 0,
        "sawtooth_amplitude": float(np.ptp(p50[measured])),
        "latency_dead_correlation": 0.9 - 0.1 * number,
        "autovacuum_read_bytes": 2**20 * number,
        "autovacuum_write_bytes": None,  # missing values are null
    }
    assert all(not isinstance(v, float) or math.isfinite(v) for v in metrics.values())
    return metrics, series


def make_churn_run(
    store: Store,
    steps: int = 3,
    *,
    with_xss: bool = False,
    planned: int | None = None,
    status: Literal["running", "done", "failed", "interrupted"] = "done",
    repeat: int = 1,
    seconds: int = 60,
    warmup: int = 10,
) -> int:
    """A churn run with `steps` recorded steps (of `planned`, default all of them), each
    `repeat` times, finished with `status` ('running' leaves it unfinished); returns its id.

    With `with_xss`, strings from the "database" (step name, a setting name and value, the
    server version, a parameter, the host name, the note) carry markup and quotes.
    """
    planned = steps if planned is None else planned
    plan = [step_params(n, with_xss=with_xss) for n in range(1, planned + 1)]
    params: dict[str, Any] = {
        "preset": "quick",
        "seconds": seconds,
        "warmup": warmup,
        "backlog": 100_000,
        "clients": 4,
        "jobs": 2,
        "repeat": repeat,
        "continuous": False,
        "target": XSS if with_xss else "sandbox",
        "steps": plan,
    }
    machine = MACHINE | ({"hostname": XSS} if with_xss else {})
    run_id = store.create_run(
        "churn",
        params,
        server_version=f"{SERVER_VERSION} {XSS}" if with_xss else SERVER_VERSION,
        settings={"autovacuum": "on", "autovacuum_naptime": "60s", "shared_buffers": "128MB"}
        | ({"application_name": XSS} if with_xss else {}),
        machine=machine,
        note=XSS if with_xss else None,
    )
    at = T0
    for step in plan[:steps]:
        number = step["number"]
        point = {
            "step": number,
            "name": step["name"],
            "scope": step["scope"],
            "settings": step["settings"],
        }
        for repetition in range(repeat):
            metrics, series = synthetic_step(number, repetition, seconds, warmup)
            store.record_point(
                run_id,
                point,
                repetition,
                metrics,
                started_at=at,
                ended_at=at + timedelta(seconds=seconds),
                series=series,
            )
            at += timedelta(seconds=seconds + 5)
    if status != "running":
        store.finish_run(run_id, status)
    return run_id


@dataclass(frozen=True)
class Rendered:
    """A run of the module's store, rendered once: its id, HTML and output directory."""

    run_id: int
    html: str
    out: Path
