"""Synthetic TOAST runs in a real results store, for report tests (no server needed).

`make_toast_run` records what the toast study records: the run with its parameters and
settings, one point per table and repetition with every metric of
`toast_spec.STORAGE_METRICS`, and one point per parallel arm with every metric of
`toast_spec.PARALLEL_METRICS`, its timeline included. The numbers follow what the study
measures on the quick preset: in-line storage makes the heap a hundred times larger and its
UPDATE and VACUUM slower, the plain VACUUM freezes everything so the FREEZE after it is
nearly free, and in the overlapping arm the table session waits for the TOAST session.

The expected values are exposed (`seconds_of`, `heap_bytes`, `LOCK_WAIT`) so tests can
compute medians and ratios on their own.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import timedelta
from typing import Any, Literal

import numpy as np

from helpers.report import MACHINE, SERVER_VERSION, T0, XSS
from vacuumlab.records.toast_spec import (
    ARMS,
    PARALLEL_METRICS,
    PARTS,
    REL_FIELDS,
    REPORT_FIELDS,
    STAGES,
    STORAGE_METRICS,
    STUDY,
    VACUUM_STEPS,
    parallel_params,
    rel_metric,
    storage_params,
    vacuum_metric,
)
from vacuumlab.store import Metric, Point, Store

ROWS = 50_000
WIDTH = 4096
INLINE = ("main", "plain")
#: Median-ish seconds of each step by storage: (UPDATE, VACUUM, FREEZE after the UPDATE).
SECONDS = {
    "extended": (0.07, 0.52, 0.55),
    "main": (4.56, 1.39, 1.14),
    "external": (0.08, 0.36, 0.27),
    "plain": (1.68, 1.99, 0.85),
}
FREEZE_AFTER_VACUUM_S = 0.0011
TOAST_BYTES = 273_072_128
LOCK_WAIT = (0.0239, 0.5113)  # the table session's wait in the overlapping arm
SETTINGS = {
    "shared_buffers": "16384",
    "maintenance_work_mem": "65536kB",
    "max_wal_size": "1024MB",
    "wal_level": "replica",
    "full_page_writes": "on",
    "wal_compression": "off",
    "vacuum_freeze_min_age": "50000000",
    "vacuum_cost_delay": "0ms",
    "block_size": "8192",
}
XSS_TAG = "<script>alert(1)</script>"
STOPPED = 'table "pg_toast_4242": stopping truncate due to conflicting lock request'
TABLE_SESSION_S = {"sequential": 0.448, "overlapping": 0.5175, "separate": 0.0207}


def _noise(*key: object) -> float:
    seed = [sum(str(k).encode()) for k in key]
    return 1.0 + float(np.random.default_rng(seed).uniform(-0.05, 0.05))


def seconds_of(storage: str, target: int, step: int, repetition: int) -> float:
    """The seconds of step 0 (UPDATE), 1 (VACUUM) or 2 (FREEZE after the UPDATE)."""
    return SECONDS[storage][step] * _noise(storage, target, step, repetition)


def heap_bytes(storage: str, stage: str) -> int:
    loaded = ROWS * 8192 if storage in INLINE else 3_014_656
    return loaded if stage == "loaded" else 2 * loaded


def _relations(storage: str) -> dict[str, Metric]:
    metrics: dict[str, Metric] = {}
    for stage in STAGES:
        heap = heap_bytes(storage, stage)
        toast = 0 if storage in INLINE else TOAST_BYTES
        vacuumed = stage in ("vacuumed", "frozen")
        for part, size in (("heap", heap), ("toast", toast)):
            pages = size // 8192 if vacuumed else 0
            live = ROWS if part == "heap" else (0 if storage in INLINE else 3 * ROWS)
            values: dict[str, Metric] = {
                "bytes": size,
                "relpages": pages,
                "relallvisible": pages,
                "relallfrozen": pages,
                "n_live_tup": live,
                "n_dead_tup": ROWS if (part, stage) == ("heap", "updated") else 0,
                "frozenxid_age": 0 if vacuumed else STAGES.index(stage) + 3,
            }
            metrics |= {rel_metric(part, f, stage): values[f] for f in REL_FIELDS}
    return metrics


def _report(storage: str, step: str, part: str, elapsed: float) -> dict[str, Metric]:
    pages = (heap_bytes(storage, "updated") if part == "heap" else TOAST_BYTES) // 8192
    if storage in INLINE and part == "toast":
        pages = 0
    scanned = 1 if step == "freeze_vacuumed" else pages
    values: dict[str, Metric] = {
        "elapsed_s": round(elapsed, 2),
        "cpu_s": round(elapsed * 0.8, 2),
        "pages_scanned": scanned,
        "pages_removed": 0,
        "tuples_removed": ROWS if (part, step) == ("heap", "vacuum") else 0,
        "frozen_pages": 0 if step == "freeze_vacuumed" else pages // 2,
        "vm_all_frozen": 0 if step == "freeze_vacuumed" else pages,
        "buffer_hits": scanned,
        "buffer_reads": scanned // 2,
        "buffer_dirtied": 0 if step == "freeze_vacuumed" else pages,
        "wal_fpi": 0 if step == "freeze_vacuumed" else pages,
        "wal_bytes": 0 if step == "freeze_vacuumed" else pages * 8300,
    }
    return {vacuum_metric(step, part, f): values[f] for f in REPORT_FIELDS}


def _update(storage: str, target: int, repetition: int) -> dict[str, Metric]:
    inline = storage in INLINE
    return {
        "update_s": seconds_of(storage, target, 0, repetition),
        "update_exec_s": seconds_of(storage, target, 0, repetition) * 0.95,
        "update_wal_records": 2 * ROWS,
        "update_wal_fpi": 50_013 if inline else 368,
        "update_wal_bytes": 420_357_133 if inline else 10_710_700,
        "update_lsn_bytes": 420_360_000 if inline else 10_712_000,
        "update_buffers_hit": 150_000 if inline else 100_736,
        "update_buffers_read": 0,
        "update_buffers_dirtied": 100_013 if inline else 736,
        "update_buffers_written": 0,
    }


def storage_metrics(storage: str, target: int, repetition: int) -> dict[str, Metric]:
    """Every metric of one table, plausible and mutually consistent."""
    metrics: dict[str, Metric] = {
        "duration_wall_s": 12.0,
        "compressed_values": 0,
        "data_checksums": "on",
        "default_toast_compression": "pglz",
        "rebuilt_heap_bytes": heap_bytes(storage, "updated"),
        "rebuilt_toast_bytes": 0 if storage in INLINE else TOAST_BYTES,
        "vacuum_s": seconds_of(storage, target, 1, repetition),
        "freeze_vacuumed_s": FREEZE_AFTER_VACUUM_S,
        "freeze_updated_s": seconds_of(storage, target, 2, repetition),
    }
    metrics |= _relations(storage) | _update(storage, target, repetition)
    for step in VACUUM_STEPS:
        for part in PARTS:
            metrics |= _report(storage, step, part, float(metrics[f"{step}_s"] or 0) / 2)
    assert set(metrics) == set(STORAGE_METRICS)
    return metrics


# -- the parallel experiment ---------------------------------------------------------------


def _span(session: str, start: float, end: float, category: str, **extra: Any) -> dict[str, Any]:
    span: dict[str, Any] = {
        "session": session, "start": start, "end": end, "category": category,
        "phase": "scanning heap", "wait_event": None, "lock_mode": None, "relation": "toast",
        "granted": None, "blocked_by": [],
    }  # fmt: skip
    return span | extra


def _timeline(arm: str, *, with_xss: bool, skipped: bool) -> dict[str, Any]:
    toast_name = f'"pg_toast"."pg_toast_4242{XSS_TAG if with_xss else ""}"'
    table = '"vacuumlab"."toast_parallel"'
    sessions = {
        "toast": {"role": "toast", "pid": 101, "start": 0.0001, "end": 0.5147,
                  "statement": f"VACUUM (FREEZE, VERBOSE) {toast_name}"},
        "table": {"role": "table", "pid": 102, "start": 0.0027, "end": 0.5202,
                  "statement": f"VACUUM (FREEZE, VERBOSE) {table}"},
    }  # fmt: skip
    truncated = f'table "pg_toast_4242": truncated 33334 to 25000 pages{XSS if with_xss else ""}'
    heap_truncated = 'table "toast_parallel": truncated 736 to 644 pages'
    notices = [
        {"session": "table", "t": 0.02, "text": heap_truncated},
        {"session": "toast", "t": 0.51, "text": truncated},
    ]
    spans = [
        _span("table", 0.0038, 0.0165, "working", relation="heap"),
        _span("table", 0.0165, 0.0239, "truncating", phase="truncating heap", relation="heap"),
    ]
    if arm == "sequential":
        sessions["table"] |= {"start": 0.0, "end": 0.448}
        sessions.pop("toast")
        spans.append(_span("table", 0.0239, 0.448, "working"))
        notices[1] |= {"session": "table", "t": 0.44}
    else:
        spans.append(_span("toast", 0.0038, 0.4863, "working"))
        spans.append(_span("toast", 0.4863, 0.5113, "truncating", phase="truncating heap"))
    if arm == "overlapping":
        spans.append(
            _span("table", *LOCK_WAIT, "lock", phase=None, wait_event="Lock:relation",
                  lock_mode="ShareUpdateExclusiveLock", granted=False, blocked_by=["toast"])
        )  # fmt: skip
        if skipped:
            spans.append(
                _span("toast", 0.30, 0.4863, "truncate-wait", wait_event="Timeout:VacuumTruncate")
            )
            notices[1] = {"session": "toast", "t": 0.4863, "text": STOPPED}
    if arm == "separate":
        sessions["table"] |= {"end": 0.0207}
    return {"arm": arm, "interval_ms": 20.0, "samples": 40, "sessions": list(sessions.values()),
            "spans": spans, "notices": notices}  # fmt: skip


def parallel_metrics(
    arm: str, repetition: int, *, with_xss: bool = False, skipped: bool = False
) -> dict[str, Metric]:
    """Every metric of one arm, with its timeline."""
    timeline = _timeline(arm, with_xss=with_xss, skipped=skipped)
    walls = {"sequential": 0.448, "overlapping": 0.5202, "separate": 0.3701}
    two = arm != "sequential"
    metrics: dict[str, Metric] = {
        "duration_wall_s": 6.5,
        "wall_s": walls[arm] * _noise(arm, repetition),
        "toast_session_s": 0.5146 if two else None,
        "table_session_s": TABLE_SESSION_S[arm],
        "table_session_start_s": 0.0027 if two else 0.0,
        "lock_waits": 1 if arm == "overlapping" else 0,
        "lock_wait_table_s": LOCK_WAIT[1] - LOCK_WAIT[0] if arm == "overlapping" else 0.0,
        "lock_wait_toast_s": 0.0,
        "truncate_wait_s": 0.1863 if skipped and arm == "overlapping" else 0.0,
        "truncations": 2,
        "truncate_suspended": 0,
        "truncate_skipped": 1 if skipped and arm == "overlapping" else 0,
        "heap_bytes_before": 6_029_312, "heap_bytes_after": 5_275_648,
        "toast_bytes_before": TOAST_BYTES, "toast_bytes_after": 204_800_000,
        "heap_vacuum_truncate": "default", "toast_vacuum_truncate": "default",
        "samples": 40, "sample_interval_ms": 20.0,
        "timeline_json": json.dumps(timeline, sort_keys=True),
    }  # fmt: skip
    for role in ("toast", "table"):
        for part in PARTS:
            ran = (role, part) != ("toast", "heap") and (two or role == "table")
            ran = ran and not (arm == "separate" and (role, part) == ("table", "toast"))
            removed = 8334 if part == "toast" else 92
            if (role, part) == ("table", "toast") and arm == "overlapping":
                removed = 0
            values = {"elapsed_s": 0.4, "pages_scanned": 33_334, "pages_removed": removed}
            values["tuples_removed"] = 37_500
            for name, value in values.items():
                metrics[vacuum_metric(role, part, name)] = value if ran else None
    assert set(metrics) == set(PARALLEL_METRICS)
    return metrics


# -- the run -------------------------------------------------------------------------------


def variants(storages: tuple[str, ...], targets: tuple[int, ...]) -> list[tuple[str, int]]:
    return [(s, t) for s in storages for t in (targets if s == "extended" else (2032,))]


def make_toast_run(
    store: Store,
    *,
    storages: tuple[str, ...] = ("extended", "main", "external", "plain"),
    targets: tuple[int, ...] = (2032, 128),
    repeat: int = 1,
    parallel: bool = True,
    width: int = WIDTH,
    with_xss: bool = False,
    skipped: bool = False,
    status: Literal["running", "done", "failed", "interrupted"] = "done",
    none_metrics: Collection[str] = (),
    recorded: int | None = None,
    broken_timeline: bool = False,
) -> int:
    """A toast run over every table and arm (`repeat` times each), finished with `status`
    ('running' leaves it unfinished); its id. `none_metrics` are None in every point;
    `recorded` keeps only the first that many points; `broken_timeline` stores an unreadable
    timeline for every arm. With `with_xss`, the server version, a setting, the target, the
    host name, the note, a statement and a notice carry markup."""
    params: dict[str, Any] = {
        "preset": "quick", "rows": ROWS, "width": width, "storages": list(storages),
        "toast_tuple_targets": list(targets), "repeat": repeat, "parallel": parallel,
        "target": XSS if with_xss else "sandbox",
    }  # fmt: skip
    run_id = store.create_run(
        STUDY,
        params,
        server_version=f"{SERVER_VERSION} {XSS_TAG}" if with_xss else SERVER_VERSION,
        settings=SETTINGS | ({"wal_level": XSS_TAG} if with_xss else {}),
        machine=MACHINE | ({"hostname": XSS} if with_xss else {}),
        note=XSS if with_xss else None,
    )
    points: list[tuple[dict[str, object], int, dict[str, Metric]]] = []
    for rep in range(repeat):
        for storage, target in variants(storages, targets):
            metrics = storage_metrics(storage, target, rep)
            points.append((storage_params(storage, target, ROWS, width), rep, metrics))
        for arm in ARMS if parallel else ():
            metrics = parallel_metrics(arm, rep, with_xss=with_xss, skipped=skipped)
            if broken_timeline:
                metrics["timeline_json"] = '{"sessions": 5'
            points.append((parallel_params(arm, ROWS, width), rep, metrics))
    for n, (p, rep, metrics) in enumerate(points[:recorded]):
        at = T0 + timedelta(minutes=n)
        metrics |= dict.fromkeys(none_metrics)
        store.record_point(
            run_id, p, rep, metrics, started_at=at, ended_at=at + timedelta(seconds=9)
        )
    if status != "running":
        store.finish_run(run_id, status)
    return run_id


def table(points: list[Point], storage: str, target: int = 2032) -> dict[str, Any]:
    [point] = [
        p
        for p in points
        if p.params.get("storage") == storage and p.params["toast_tuple_target"] == target
    ]
    return point.metrics


def arm(points: list[Point], name: str, repetition: int = 0) -> dict[str, Any]:
    [point] = [p for p in points if p.params.get("arm") == name and p.repetition == repetition]
    return point.metrics
