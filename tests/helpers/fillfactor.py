"""Synthetic fillfactor runs in a real results store, for report tests (no server needed).

`make_fillfactor_run` records what the fillfactor study records: the run with its parameters,
then one point per size, fillfactor and repetition with every metric of
`fillfactor_spec.METRICS`. The numbers follow the seed's story: a lower fillfactor loads a
larger table, keeps more updates HOT and grows less; speed barely moves, except where
`faster` says a fillfactor is a few per cent faster (to exercise a significant difference).

`synthetic_metrics` is exposed so tests can compute medians, means and tests on their own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import timedelta
from itertools import product
from typing import Any, Literal

import numpy as np

from helpers.report import MACHINE, SERVER_VERSION, T0, XSS
from vacuumlab.records.fillfactor_spec import METRICS, STUDY, point_params, scale_for
from vacuumlab.store import Metric, Store

SHARED_BUFFERS = 128 * 2**20
BASE_TPS = {"fits": 2200.0, "2x": 2000.0, "10x": 1500.0}
BASE_UPDATE_MS = {"fits": 0.021, "2x": 0.025, "10x": 0.040}
HOT = {100: 0.80, 90: 0.97, 80: 0.995, 70: 1.0}
GROWTH = {100: 0.05, 90: 0.01, 80: 0.0, 70: 0.0}
HEAP_PER_SCALE = 13_430_000
INDEX_PER_SCALE = 2_250_000
SECONDS, WARMUP = 45, 5
XSS_TAG = "<script>alert(1)</script>"


def _noise(size: str, ff: int, repetition: int, which: int, spread: float) -> float:
    rng = np.random.default_rng([sum(size.encode()), ff, repetition, which])
    return 1.0 + float(rng.uniform(-spread, spread))


def synthetic_metrics(
    size: str, ff: int, repetition: int, faster: Mapping[tuple[str, int], float]
) -> dict[str, Metric]:
    """Every metric of one point, plausible and mutually consistent."""
    scale = scale_for(size, SHARED_BUFFERS)  # type: ignore[arg-type]
    gain = faster.get((size, ff), 0.0)
    tps = BASE_TPS[size] * (1 + gain) * _noise(size, ff, repetition, 0, 0.01)
    update = BASE_UPDATE_MS[size] * (1 - gain) * _noise(size, ff, repetition, 1, 0.02)
    transactions = round(tps * (SECONDS - WARMUP))
    hot = min(HOT.get(ff, 1.0) * _noise(size, ff, repetition, 2, 0.005), 1.0)
    hot_updates = round(transactions * hot)
    heap = round(scale * HEAP_PER_SCALE * 100 / ff)
    index = scale * INDEX_PER_SCALE
    growth = GROWTH.get(ff, 0.0)
    hits, reads = transactions * 12, round(transactions * 0.02 * (1 + scale / 100))
    metrics: dict[str, Metric] = {
        "tps": tps,
        "transactions": transactions,
        "latency_mean_ms": 2 / tps * 1000,
        "measured_s": SECONDS - WARMUP,
        "warmup_s": WARMUP,
        "update_calls": transactions,
        "update_mean_ms": update,
        "update_stddev_ms": update * 0.8,
        "n_tup_upd": transactions,
        "n_tup_hot_upd": hot_updates,
        "n_tup_newpage_upd": transactions - hot_updates,
        "hot_share": hot_updates / transactions,
        "newpage_share": (transactions - hot_updates) / transactions,
        "autovacuum_count": 1 if ff == 100 else 0,
        "heap_blks_hit": hits * 3 // 4,
        "heap_blks_read": reads * 3 // 4,
        "idx_blks_hit": hits - hits * 3 // 4,
        "idx_blks_read": reads - reads * 3 // 4,
        "hit_ratio": hits / (hits + reads),
        "table_bytes_init": heap,
        "table_bytes_end": round(heap * (1 + growth)),
        "index_bytes_init": index,
        "index_bytes_end": round(index * (1 + growth / 2)),
        "table_growth": round(heap * (1 + growth)) / heap - 1,
        "index_growth": round(index * (1 + growth / 2)) / index - 1,
        "shared_buffers_bytes": SHARED_BUFFERS,
        "init_s": 0.1 * scale,
    }
    assert set(metrics) == set(METRICS)
    return metrics


def make_fillfactor_run(
    store: Store,
    *,
    sizes: tuple[str, ...] = ("fits", "2x"),
    fillfactors: tuple[int, ...] = (70, 80, 90, 100),
    repeat: int = 3,
    faster: Mapping[tuple[str, int], float] | None = None,
    with_xss: bool = False,
    status: Literal["running", "done", "failed", "interrupted"] = "done",
    none_metrics: Collection[str] = (),
    recorded: int | None = None,
) -> int:
    """A fillfactor run over every size × fillfactor (`repeat` times each), finished with
    `status` ('running' leaves it unfinished); its id.

    `faster` maps (size, fillfactor) to a relative TPS gain (and the same UPDATE speed-up);
    `none_metrics` are recorded as None in every point; `recorded` keeps only the first that
    many combinations. With `with_xss`, the server version, the target, the host name and
    the note carry markup.
    """
    faster = faster or {}
    params: dict[str, Any] = {
        "preset": "quick",
        "sizes": list(sizes),
        "fillfactors": list(fillfactors),
        "seconds": SECONDS,
        "warmup": WARMUP,
        "repeat": repeat,
        "clients": 2,
        "jobs": 1,
        "shared_buffers": "128MB",
        "target": XSS if with_xss else "sandbox",
    }
    run_id = store.create_run(
        STUDY,
        params,
        server_version=f"{SERVER_VERSION} {XSS_TAG}" if with_xss else SERVER_VERSION,
        settings={"shared_buffers": "128MB" if not with_xss else "16384" + XSS_TAG},
        machine=MACHINE | ({"hostname": XSS} if with_xss else {}),
        note=XSS if with_xss else None,
    )
    combos = list(product(sizes, fillfactors))[:recorded]
    for n, ((size, ff), repetition) in enumerate(product(combos, range(repeat))):
        metrics = synthetic_metrics(size, ff, repetition, faster) | dict.fromkeys(none_metrics)
        at = T0 + timedelta(minutes=n)
        scale = scale_for(size, SHARED_BUFFERS)  # type: ignore[arg-type]
        store.record_point(
            run_id,
            point_params(size, ff, scale),  # type: ignore[arg-type]
            repetition,
            metrics,
            started_at=at,
            ended_at=at + timedelta(seconds=SECONDS),
        )
    if status != "running":
        store.finish_run(run_id, status)
    return run_id
