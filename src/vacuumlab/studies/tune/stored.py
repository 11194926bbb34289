"""The simulator's stage as the tune stores it: one point of counts and JSON text
(``records/tune_spec.py``), read back when a tune resumes so its references stay the same."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.tune_spec import (
    STAGE_BEST,
    STAGE_CURRENT,
    STAGE_FRONT,
    STAGE_IMPORTANCE,
    STAGE_SCORED,
    STAGE_SECONDS,
    STAGE_SPACE,
)
from vacuumlab.store import Metric
from vacuumlab.studies.tune.simulated import Candidate, FirstStage, Prediction


def stage_metrics(stage: FirstStage, space: list[str]) -> dict[str, Metric]:
    def candidate(c: Candidate) -> dict[str, Any]:
        return {"values": c.values, "prediction": c.prediction.as_dict()}

    return {
        STAGE_SCORED: stage.scored,
        STAGE_SECONDS: stage.seconds,
        STAGE_FRONT: json.dumps([candidate(c) for c in stage.front]),
        STAGE_BEST: json.dumps(candidate(stage.best)),
        STAGE_CURRENT: json.dumps(asdict(stage.current)),
        STAGE_SPACE: json.dumps(space),
        STAGE_IMPORTANCE: json.dumps(stage.importance),
    }


def stage_of(metrics: Mapping[str, Any]) -> FirstStage:
    def prediction(data: Mapping[str, float]) -> Prediction:
        return Prediction(
            data["dead_peak"], data["past_threshold_s"], data["worker_s"], data["io_pages"],
            int(data["vacuums"]),
        )  # fmt: skip

    def candidate(data: Mapping[str, Any]) -> Candidate:
        return Candidate(dict(data["values"]), prediction(data["prediction"]))

    try:
        front = tuple(candidate(c) for c in json.loads(str(metrics[STAGE_FRONT])))
        best = candidate(json.loads(str(metrics[STAGE_BEST])))
        current = prediction(json.loads(str(metrics[STAGE_CURRENT])))
    except (KeyError, ValueError, TypeError) as exc:
        raise VacuumlabError(f"the stored simulator stage cannot be read: {exc}") from None
    ranked = json.loads(str(metrics.get(STAGE_IMPORTANCE) or "{}"))
    return FirstStage(
        int(metrics[STAGE_SCORED] or 0), float(metrics[STAGE_SECONDS] or 0), front, best, current,
        {str(k): float(v) for k, v in ranked.items()},
    )  # fmt: skip
