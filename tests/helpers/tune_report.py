"""A small tune in a real results store, for report tests (no server needed): the simulator's
stage, five trials (the current settings, advise's, the simulator's pick and two of the
search's, one of which missed the captured rates), two confirmations of the best and of the
current settings, and the verdict with its SQL. The store is real; the values are test data.

The replayed table's name holds a ``<`` so that the tests can prove every string is escaped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

import numpy as np

from helpers.custom import tiny_profile
from helpers.report import MACHINE, SERVER_VERSION, T0
from vacuumlab.records.custom_spec import rate_metric
from vacuumlab.records.tune import Dimension, Objective, TrialPoint, TrialSettings, TuneConfig
from vacuumlab.records.tune_spec import (
    SIMULATOR_STAGE,
    STAGE_BEST,
    STAGE_CURRENT,
    STAGE_FRONT,
    STAGE_IMPORTANCE,
    STAGE_SCORED,
    STAGE_SECONDS,
    STAGE_SPACE,
    STUDY,
    VERDICT_IMPORTANCE,
    VERDICT_IMPROVED,
    VERDICT_P,
    VERDICT_SQL,
    VERDICT_STAGE,
    VERDICT_TEXT,
    VERDICT_WINNER,
    predicted,
)
from vacuumlab.stats.significance import welch
from vacuumlab.store import Metric, Store

TABLE = "orders<x>"
SCALE = f"{TABLE}.autovacuum_vacuum_scale_factor"
DELAY = "server.autovacuum_vacuum_cost_delay"
FILLFACTOR = f"{TABLE}.fillfactor"
NAPTIME = "server.autovacuum_naptime"
SQL = (f'ALTER TABLE app."{TABLE}" SET (autovacuum_vacuum_scale_factor = 0.005, '
       "fillfactor = 90);\nALTER SYSTEM SET autovacuum_vacuum_cost_delay = '0';\n"
       "SELECT pg_reload_conf();")  # fmt: skip
IMPORTANCE = {SCALE: 0.71, DELAY: 0.21, FILLFACTOR: 0.08}
SPACE_LINES = [f"{SCALE}: 0.001 to 0.2, log scale", f"{DELAY}: 0 to 20",
               f"{FILLFACTOR}: 50 to 100"]  # fmt: skip
SECONDS, WARMUP = 60, 10


@dataclass(frozen=True)
class Trial:
    number: int
    origin: Literal["current", "advice", "simulator", "search"]
    values: dict[str, str]
    dead: list[float]  # the dead-tuple peak of each measurement
    p99: list[float]  # the p99 latency of each measurement
    predicted_peak: float
    updates: float = 100.0  # replayed updates per second; the capture's is 100
    extra: dict[str, float] = field(default_factory=dict)


TRIALS = (
    Trial(1, "current", {}, [52_000, 50_500, 51_200], [12.0, 12.6, 11.8], 45_000),
    Trial(2, "advice", {SCALE: "0.05"}, [21_000], [11.0], 24_000),
    Trial(3, "simulator", {SCALE: "0.01", DELAY: "2", FILLFACTOR: "100", NAPTIME: "15"},
          [9_000], [10.4], 8_000),
    Trial(4, "search", {SCALE: "0.005", DELAY: "0", FILLFACTOR: "90", NAPTIME: "15"},
          [6_100, 6_400, 5_900], [10.1, 10.5, 10.2], 7_000),
    # Lower still, but its replay ran 40 % short of the captured updates: it cannot lead.
    Trial(5, "search", {SCALE: "0.002", DELAY: "0", FILLFACTOR: "70", NAPTIME: "15"},
          [4_000], [9.9], 5_000, updates=60.0),
)  # fmt: skip
#: What the simulator predicts of the current settings and of its pick; its front.
CURRENT_PREDICTION = {"dead_peak": 45_000.0, "past_threshold_s": 41.0, "worker_s": 3.1,
                      "io_pages": 1_800.0, "vacuums": 2.0}  # fmt: skip
PICK = {"values": {SCALE: "0.01", DELAY: "2"},
        "prediction": {"dead_peak": 8_000.0, "past_threshold_s": 2.0, "worker_s": 9.5,
                       "io_pages": 7_400.0, "vacuums": 9.0}}  # fmt: skip


def _front() -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for i, (peak, worker) in enumerate([(30_000, 4.0), (15_000, 6.2), (8_000, 9.5), (7_800, 14.0)]):
        prediction = {"dead_peak": float(peak), "past_threshold_s": 10.0 - i, "worker_s": worker,
                      "io_pages": 2_000.0 * (i + 1), "vacuums": float(3 + 2 * i)}  # fmt: skip
        found.append({"values": {SCALE: f"{0.1 / (i + 1):.3g}", DELAY: str(8 - 2 * i)},
                      "prediction": prediction})  # fmt: skip
    return found


def config(objective: Objective = "dead") -> TuneConfig:
    space = (
        Dimension("autovacuum_vacuum_scale_factor", TABLE, 0.001, 0.2, log=True),
        Dimension("autovacuum_vacuum_cost_delay", None, 0, 20),
        Dimension("fillfactor", TABLE, 50, 100, integer=True),
    )
    return TuneConfig(
        profile=tiny_profile().model_dump(mode="json"), profile_file="orders.profile.json",
        objective=objective, trials=5, confirm=2, candidates=2000, space=space,
        fixed={NAPTIME: "15"}, seconds=SECONDS, warmup=WARMUP, clients=4, jobs=2,
    )  # fmt: skip


def _metrics(trial: Trial, repetition: int) -> dict[str, Metric]:
    dead, p99 = trial.dead[repetition], trial.p99[repetition]
    metrics: dict[str, Metric] = {
        "dead_tuples_peak": dead, "latency_p99_ms": p99,
        "latency_p99_ci_low": p99 * 0.95, "latency_p99_ci_high": p99 * 1.05,
        "latency_mean_ms": p99 / 4, "latency_p50_ms": p99 / 5, "tps": 1_800.0 + 10 * trial.number,
        "autovacuum_count": 2 + trial.number, "transactions": 108_000, "failed": 0,
        "duration_s": float(SECONDS), "warmup_s": float(WARMUP), "sampled_table": TABLE,
        "rate_seconds": float(SECONDS + WARMUP), "capture_seconds": 600.0,
    }  # fmt: skip
    for name, captured, replayed in (("inserts", 50.0, 50.0), ("updates", 100.0, trial.updates),
                                     ("deletes", 50.0, 49.0)):  # fmt: skip
        metrics[rate_metric("captured", name, TABLE)] = captured
        metrics[rate_metric("replayed", name, TABLE)] = replayed
    prediction = {"dead_peak": trial.predicted_peak, "past_threshold_s": 5.0, "worker_s": 6.0,
                  "io_pages": 3_000.0, "vacuums": 4.0}  # fmt: skip
    metrics |= {predicted(k): v for k, v in prediction.items()}
    return metrics


def _series(trial: Trial, repetition: int) -> dict[str, list[tuple[float, float | None]]]:
    """Dead tuples climbing to the peak and cut back by each autovacuum; latency following."""
    t = np.arange(0.0, SECONDS + WARMUP, 1.0)
    period = 30.0 / (1 + trial.number)
    dead = trial.dead[repetition] * ((t % period) / period)
    p99 = trial.p99[repetition] * (0.8 + 0.2 * (t % period) / period)
    return {
        "n_dead_tup": [(float(s), float(v)) for s, v in zip(t, dead, strict=True)],
        "latency_p99_ms": [(float(s), float(v)) for s, v in zip(t, p99, strict=True)],
        "latency_mean_ms": [(float(s), float(v) / 4) for s, v in zip(t, p99, strict=True)],
        "tps": [(float(s), 1_800.0) for s in t],
    }


def make_tune_run(
    store: Store,
    *,
    finished: bool = True,
    importance: dict[str, float] | None = None,
    simulated_importance: dict[str, float] | None = None,
    objective: Objective = "dead",
    ray: bool = False,
) -> int:
    """The tune in the store; ``finished=False``: interrupted before its confirmations and
    verdict."""
    cfg = config(objective)
    run_id = store.create_run(STUDY, cfg.params(), server_version=SERVER_VERSION,
                              settings={"autovacuum_naptime": "60"}, machine=MACHINE)  # fmt: skip
    store.record_execution(run_id, "ray" if ray else "local", {"10.0.0.5" if ray else "lab-1": 1})
    when = T0
    stage = {
        STAGE_SCORED: 2000, STAGE_SECONDS: 3.4, STAGE_FRONT: json.dumps(_front()),
        STAGE_BEST: json.dumps(PICK), STAGE_CURRENT: json.dumps(CURRENT_PREDICTION),
        STAGE_SPACE: json.dumps(SPACE_LINES),
    }  # fmt: skip
    if simulated_importance is not None:
        stage[STAGE_IMPORTANCE] = json.dumps(simulated_importance)
    store.record_point(run_id, {"stage": SIMULATOR_STAGE}, 0, stage, started_at=when,
                       ended_at=when)  # fmt: skip
    order = [(t, 0) for t in TRIALS]
    if finished:
        order += [(TRIALS[3], 1), (TRIALS[0], 1), (TRIALS[3], 2), (TRIALS[0], 2)]
    for trial, repetition in order:
        point = TrialPoint(trial.number, trial.origin, TrialSettings.of(trial.values))
        end = when + timedelta(seconds=SECONDS + WARMUP + 15)
        store.record_point(
            run_id, point.params(), repetition, _metrics(trial, repetition),
            started_at=when, ended_at=end, series=_series(trial, repetition),
        )  # fmt: skip
        when = end
    if finished:
        p = welch(TRIALS[3].dead, TRIALS[0].dead).p_value
        verdict: dict[str, Metric] = {
            VERDICT_TEXT: "trial 4 beats the current settings beyond the noise",
            VERDICT_IMPROVED: 1, VERDICT_WINNER: 4, VERDICT_P: p, VERDICT_SQL: SQL,
            VERDICT_IMPORTANCE: json.dumps(IMPORTANCE if importance is None else importance),
        }  # fmt: skip
        store.record_point(run_id, {"stage": VERDICT_STAGE, "measurements": len(order)}, 0,
                           verdict, started_at=when, ended_at=when)  # fmt: skip
    store.finish_run(run_id, "done" if finished else "interrupted")
    return run_id
