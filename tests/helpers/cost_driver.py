"""Synthetic cost-driver runs in a real results store, for report tests (no server needed).

`make_cost_driver_run` records what the cost-driver study records: the run with its
parameters and settings, then one point per combination, mode and repetition with every
metric of `cost_driver_spec.METRICS`. The numbers follow the seed's story: the duration grows
with the dirty-page share (a spread DELETE dirties every page, a compact one only its share),
each index adds a fixed time, the autovacuum worker writes more of the pages as indexes are
added, and the predicted sleep is close to the measured one.

The expected values are exposed (`autovacuum_duration`, `manual_duration`) so tests can
compute medians, ratios and fits on their own.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from itertools import product
from typing import Any, Literal

import numpy as np

from helpers.report import MACHINE, SERVER_VERSION, T0, XSS
from vacuumlab.records.cost_driver_spec import METRICS, STUDY, point_params
from vacuumlab.store import Metric, Store

ROWS = 1_000_000
HEAP_PAGES = 5_406
INDEX_PAGES = 2_745  # pages of one index
SECONDS_PER_DIRTY_PCT = 0.044  # throttled: cost-based delay dominates
SECONDS_PER_INDEX = 0.6
WORK_SHARE = 0.12  # unthrottled time / throttled time
COST_DELAY_MS = 2.0
COST_LIMIT = 200

SETTINGS = {
    "autovacuum": "on",
    "autovacuum_naptime": "1s",
    "autovacuum_vacuum_cost_delay": "2ms",
    "autovacuum_vacuum_cost_limit": "-1",
    "maintenance_work_mem": "64MB",
    "shared_buffers": "128MB",
    "track_cost_delay_timing": "on",
    "vacuum_cost_delay": "0",
    "vacuum_cost_limit": "200",
    "vacuum_cost_page_dirty": "20",
    "vacuum_cost_page_hit": "1",
    "vacuum_cost_page_miss": "2",
}
XSS_TAG = "<script>alert(1)</script>"


def dirty_pct(distribution: str, dead_pct: int) -> float:
    """A compact DELETE dirties its share of the pages, a spread one every page."""
    return 100.0 if distribution == "spread" else float(dead_pct)


def _noise(distribution: str, dead_pct: int, indexes: int, repetition: int, mode: int) -> float:
    seed = [sum(distribution.encode()), dead_pct, indexes, repetition, mode]
    return 1.0 + float(np.random.default_rng(seed).uniform(-0.04, 0.04))


def autovacuum_duration(distribution: str, dead_pct: int, indexes: int, repetition: int) -> float:
    """The measured (throttled) duration of one autovacuum run, in seconds."""
    base = 0.05 + SECONDS_PER_DIRTY_PCT * dirty_pct(distribution, dead_pct)
    base += SECONDS_PER_INDEX * indexes
    return base * _noise(distribution, dead_pct, indexes, repetition, 0)


def manual_duration(distribution: str, dead_pct: int, indexes: int, repetition: int) -> float:
    """The duration of one unthrottled manual VACUUM, in seconds."""
    throttled = autovacuum_duration(distribution, dead_pct, indexes, repetition)
    return throttled * WORK_SHARE * _noise(distribution, dead_pct, indexes, repetition, 1)


def _writes(dirty_pages: float, indexes: int) -> dict[str, Metric]:
    total = dirty_pages + 0.1 * indexes * INDEX_PAGES
    worker = total * min(0.15 + 0.15 * indexes, 0.9)
    rest = total - worker
    return {
        "writes_worker_pages": round(worker),
        "writes_checkpointer_pages": round(rest * 0.7),
        "writes_bgwriter_pages": round(rest * 0.2),
        "writes_other_pages": round(rest * 0.1),
        "worker_write_pages": round(worker),
    }


def _blocks(
    distribution: str, dead_pct: int, indexes: int, dirty_pages: float
) -> dict[str, Metric]:
    scanned = HEAP_PAGES if distribution == "spread" else dirty_pages
    return {
        "pages_scanned": round(scanned),
        "pages_removed": 0,
        "tuples_removed": ROWS * dead_pct // 100,
        "index_scans": 1 if indexes else 0,
        "index_pages_total": indexes * INDEX_PAGES,
        "index_pages_newly_deleted": round(indexes * INDEX_PAGES * dead_pct / 400),
        "heap_blks_hit": round(scanned * 0.9),
        "heap_blks_read": round(scanned * 0.1),
        "idx_blks_hit": round(indexes * INDEX_PAGES * 0.8),
        "idx_blks_read": round(indexes * INDEX_PAGES * 0.2),
        "buffer_hits": round(scanned + indexes * INDEX_PAGES),
        "buffer_reads": 0,
        "buffer_dirtied": round(dirty_pages),
        "worker_read_pages": 0,
        "worker_hits": round(scanned + indexes * INDEX_PAGES),
    }


def _cost(delay_s: float) -> dict[str, Metric]:
    return {
        "cost_page_hit": 1,
        "cost_page_miss": 2,
        "cost_page_dirty": 20,
        "cost_limit": COST_LIMIT,
        "cost_delay_ms": COST_DELAY_MS,
        "predicted_cost": delay_s / (COST_DELAY_MS / 1000) * COST_LIMIT,
        "predicted_delay_s": delay_s,
    }


def synthetic_metrics(
    distribution: str, dead_pct: int, indexes: int, repetition: int, mode: str
) -> dict[str, Metric]:
    """Every metric of one point, plausible and mutually consistent."""
    manual = mode == "manual"
    duration = (manual_duration if manual else autovacuum_duration)(
        distribution, dead_pct, indexes, repetition
    )
    work = manual_duration(distribution, dead_pct, indexes, repetition)
    asleep = 0.0 if manual else duration - work
    dirty = dirty_pct(distribution, dead_pct)
    dirty_pages = HEAP_PAGES * dirty / 100
    metrics: dict[str, Metric] = {
        "duration_wall_s": duration + 0.6,
        "duration_stats_s": duration,
        "duration_log_s": round(duration, 2),
        "delay_time_s": asleep,
        "heap_pages": HEAP_PAGES,
        "dead_tuples": ROWS * dead_pct // 100,
        "dirty_pages": round(dirty_pages),
        "dirty_pct": dirty,
        "vm_all_visible_before": HEAP_PAGES,
        "vm_all_frozen_before": HEAP_PAGES,
        "vm_all_visible_after": HEAP_PAGES,
        "vm_all_frozen_after": HEAP_PAGES - round(dirty_pages),
        "freeze_attempts": 0,
        "wal_records": round(dirty_pages * 3),
        "wal_fpi": round(dirty_pages),
        "wal_bytes": round(dirty_pages * 8300),
    }
    metrics |= _writes(dirty_pages, indexes)
    metrics |= _blocks(distribution, dead_pct, indexes, dirty_pages)
    metrics |= _cost(asleep * 1.03)
    assert set(metrics) == set(METRICS)
    return metrics


def make_cost_driver_run(
    store: Store,
    *,
    distributions: tuple[str, ...] = ("compact", "spread"),
    dead_pcts: tuple[int, ...] = (10, 50),
    indexes: tuple[int, ...] = (0, 1, 3),
    repeat: int = 3,
    manual: bool = False,
    with_xss: bool = False,
    status: Literal["running", "done", "failed", "interrupted"] = "done",
    none_metrics: Collection[str] = (),
    recorded: int | None = None,
) -> int:
    """A cost-driver run over every combination (`repeat` times each, autovacuum then, with
    `manual`, manual), finished with `status` ('running' leaves it unfinished); its id.

    `none_metrics` are recorded as None in every point; `recorded` keeps only the first that
    many combinations. With `with_xss`, the server version, a cost setting, the target, the
    host name and the note carry markup.
    """
    params: dict[str, Any] = {
        "preset": "quick",
        "rows": ROWS,
        "distributions": list(distributions),
        "dead_pcts": list(dead_pcts),
        "indexes": list(indexes),
        "repeat": repeat,
        "manual": manual,
        "target": XSS if with_xss else "sandbox",
    }
    settings = SETTINGS | ({"autovacuum_vacuum_cost_delay": XSS_TAG} if with_xss else {})
    run_id = store.create_run(
        STUDY,
        params,
        server_version=f"{SERVER_VERSION} {XSS_TAG}" if with_xss else SERVER_VERSION,
        settings=settings,
        machine=MACHINE | ({"hostname": XSS} if with_xss else {}),
        note=XSS if with_xss else None,
    )
    combos = list(product(distributions, dead_pcts, indexes))[:recorded]
    modes = ("autovacuum", "manual") if manual else ("autovacuum",)
    for n, ((distribution, dead, count), mode, repetition) in enumerate(
        product(combos, modes, range(repeat))
    ):
        metrics = synthetic_metrics(distribution, dead, count, repetition, mode)
        metrics |= dict.fromkeys(none_metrics)
        at = T0 + timedelta(minutes=n)
        store.record_point(
            run_id,
            point_params(distribution, dead, count, ROWS, mode),
            repetition,
            metrics,
            started_at=at,
            ended_at=at + timedelta(seconds=30),
        )
    if status != "running":
        store.finish_run(run_id, status)
    return run_id
