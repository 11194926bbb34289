"""One step's load and what it measured, as the churn and custom studies share them: pgbench
runs while a 1 Hz sampler polls the table under study; the per-transaction logs become TPS and
latency percentiles (per second and over the step), the samples dead tuples, sizes and the
autovacuums, and together the latency sawtooth."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from vacuumlab.collect.sampler import Sample, Sampler, autovacuum_runs
from vacuumlab.pg import pgbench
from vacuumlab.pg.target import Target
from vacuumlab.stats import analysis
from vacuumlab.studies.base import Progress, Series


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What one step's load left: the transactions, the samples, and when it started."""

    transactions: analysis.Transactions
    samples: list[Sample]
    load_start: float  # epoch seconds
    started_at: datetime


def run_load(
    target: Target, load: pgbench.Load, relid: int, progress: Progress, dsn: str | None = None
) -> LoadResult:
    """Run the load (on ``dsn``, by default the target's) while the sampler polls table
    ``relid``; live TPS (pgbench's own) and dead tuples (the sampler's) go to the progress
    display."""
    sampler = Sampler(target.dsn, relid).start()

    def on_line(line: str) -> None:
        seen = pgbench.parse_progress(line)
        if seen is not None:
            latest = sampler.latest
            live = {"tps": seen[1], "dead tuples": latest.n_dead_tup if latest else None}
            progress.tick(seen[0], live)

    started_at = datetime.now(UTC)
    load_start = started_at.timestamp()
    process = pgbench.Process(pgbench.command(target.pgbench, load, dsn or target.dsn), on_line)
    try:
        process.wait()
    finally:
        process.terminate()
        samples = sampler.stop()
    assert load.log_prefix is not None
    transactions = analysis.read_pgbench_logs(pgbench.log_files(load.log_prefix))
    return LoadResult(transactions, samples, load_start, started_at)


def summarize_step(result: LoadResult, warmup: int, seconds: int) -> tuple[dict[str, Any], Series]:
    """Metrics and per-second series of one step of ``seconds`` (the first ``warmup`` left out
    of the summary), from its transactions and samples."""
    start = result.load_start
    summary = analysis.summarize(result.transactions, start + warmup, start + seconds)
    per_second = analysis.per_second(result.transactions, start, seconds)
    series: Series = {
        "tps": _pairs(per_second.t, per_second.tps),
        "latency_mean_ms": _pairs(per_second.t, per_second.latency_mean_ms),
        "latency_p50_ms": _pairs(per_second.t, per_second.latency_p50_ms),
        "latency_p95_ms": _pairs(per_second.t, per_second.latency_p95_ms),
        "latency_p99_ms": _pairs(per_second.t, per_second.latency_p99_ms),
        "latency_max_ms": _pairs(per_second.t, per_second.latency_max_ms),
    }
    series |= _sampler_series(result.samples, result.started_at)
    runs = autovacuum_runs(result.samples, result.started_at)
    series["autovacuum"] = [(r.start, r.duration) for r in runs]
    metrics = _metrics(summary, warmup) | _sample_metrics(result.samples)
    ends = [r.start + r.duration for r in runs]
    metrics["autovacuum_count"] = len(runs)
    metrics["sawtooth_amplitude"] = analysis.sawtooth_amplitude(
        per_second.t, per_second.latency_mean_ms, ends
    )
    dead_t, dead = _arrays(series["n_dead_tup"])
    metrics["latency_dead_correlation"] = analysis.correlation(
        per_second.t, per_second.latency_mean_ms, dead_t, dead
    )
    return metrics, series


def _metrics(summary: analysis.Summary, warmup: int) -> dict[str, Any]:
    return {
        "transactions": summary.transactions,
        "failed": summary.failed,
        "duration_s": summary.duration_s,
        "warmup_s": warmup,
        "tps": summary.tps,
        "tps_ci_low": summary.tps_ci.low,
        "tps_ci_high": summary.tps_ci.high,
        "latency_mean_ms": summary.latency_mean_ms,
        "latency_mean_ci_low": summary.latency_mean_ci.low,
        "latency_mean_ci_high": summary.latency_mean_ci.high,
        "latency_stddev_ms": summary.latency_stddev_ms,
        "latency_p50_ms": summary.latency_p50_ms,
        "latency_p95_ms": summary.latency_p95_ms,
        "latency_p99_ms": summary.latency_p99_ms,
        "latency_p99_ci_low": summary.latency_p99_ci.low,
        "latency_p99_ci_high": summary.latency_p99_ci.high,
    }


def _sample_metrics(samples: Sequence[Sample]) -> dict[str, Any]:
    if not samples:
        return {}
    first, last = samples[0], samples[-1]
    dead = [s.n_dead_tup for s in samples if s.n_dead_tup is not None]
    return {
        "dead_tuples_peak": max(dead) if dead else None,
        "heap_bytes_start": first.heap_bytes,
        "heap_bytes_end": last.heap_bytes,
        "index_bytes_start": first.index_bytes,
        "index_bytes_end": last.index_bytes,
        "toast_bytes_start": first.toast_bytes,
        "toast_bytes_end": last.toast_bytes,
        "autovacuum_read_bytes": _delta(first.autovacuum_read_bytes, last.autovacuum_read_bytes),
        "autovacuum_write_bytes": _delta(first.autovacuum_write_bytes, last.autovacuum_write_bytes),
    }


def _delta(first: int | None, last: int | None) -> int | None:
    return None if first is None or last is None else last - first


def _sampler_series(samples: Sequence[Sample], origin: datetime) -> Series:
    """Sampler values against seconds since the load started; I/O as the delta since then."""
    if not samples:
        return {}
    t = [(s.at - origin).total_seconds() for s in samples]
    read0 = samples[0].autovacuum_read_bytes
    write0 = samples[0].autovacuum_write_bytes
    columns: dict[str, Callable[[Sample], float | None]] = {
        "n_dead_tup": lambda s: s.n_dead_tup,
        "n_live_tup": lambda s: s.n_live_tup,
        "heap_bytes": lambda s: s.heap_bytes,
        "index_bytes": lambda s: s.index_bytes,
        "toast_bytes": lambda s: s.toast_bytes,
        "vacuum_running": lambda s: s.vacuum_running,
        "autovacuum_read_bytes": lambda s: _delta(read0, s.autovacuum_read_bytes),
        "autovacuum_write_bytes": lambda s: _delta(write0, s.autovacuum_write_bytes),
    }
    return {name: list(zip(t, map(get, samples), strict=True)) for name, get in columns.items()}


def _pairs(
    t: np.ndarray[Any, Any], values: np.ndarray[Any, Any]
) -> list[tuple[float, float | None]]:
    """Series rows; NaN (a second without transactions) is stored as NULL."""
    return [
        (float(x), None if math.isnan(float(y)) else float(y))
        for x, y in zip(t, values, strict=True)
    ]


def _arrays(rows: Sequence[tuple[float, float | None]]) -> tuple[Any, Any]:
    t = np.array([r[0] for r in rows], dtype=np.float64)
    v = np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=np.float64)
    return t, v
