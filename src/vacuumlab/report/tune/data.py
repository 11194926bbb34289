"""The tune report's data: a run's points read as the tune's spec stores them (the simulator's
stage, the measured trials grouped by trial, the latest verdict), and the figures the sections
derive from them (the winner, the comparisons, the simulator's calibration). Pure: values in,
values out; nothing here draws or formats."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from vacuumlab.records.tune import OBJECTIVES, Objective, TrialPoint, TuneConfig
from vacuumlab.records.tune_spec import (
    PREDICTIONS,
    SIMULATOR_STAGE,
    STAGE_BEST,
    STAGE_CURRENT,
    STAGE_FRONT,
    STAGE_IMPORTANCE,
    STAGE_SCORED,
    STAGE_SECONDS,
    STAGE_SPACE,
    VERDICT_IMPORTANCE,
    VERDICT_IMPROVED,
    VERDICT_P,
    VERDICT_SQL,
    VERDICT_STAGE,
    VERDICT_TEXT,
    VERDICT_WINNER,
    kind,
    predicted,
)
from vacuumlab.report.page import is_int, stored_config, typed
from vacuumlab.stats.tune import DEAD, TrialResult, current_of, leader, value_of
from vacuumlab.store import Point, Run


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate the simulator scored: its settings and what it predicts of them."""

    values: dict[str, str]
    prediction: dict[str, float]


@dataclass(frozen=True, slots=True)
class Stage:
    """The simulator's stage as stored (any part may be missing from a damaged store)."""

    scored: int | None
    seconds: float | None
    front: list[Candidate]
    best: Candidate | None
    current: dict[str, float] | None
    space: list[str]
    #: Setting key → importance among the simulator's candidates (empty in older runs).
    importance: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StoredVerdict:
    """The verdict point's metrics."""

    text: str
    improved: bool
    winner: int | None
    p_value: float | None
    sql: str
    #: Setting key → share; None when the point holds none that can be read.
    importance: dict[str, float] | None
    measurements: int | None


@dataclass(frozen=True, slots=True)
class Trial:
    """One trial: every measurement of it (stats' view) and its points, in repetition order."""

    result: TrialResult
    points: list[Point]

    @property
    def number(self) -> int:
        return self.result.point.number

    @property
    def first(self) -> Point:
        return self.points[0]

    def predicted(self, name: str) -> float | None:
        """The simulator's prediction (the same for every repetition: the first's)."""
        return value_of(self.first.metrics, predicted(name))


@dataclass(frozen=True, slots=True)
class Tune:
    config: TuneConfig | None
    objective: Objective
    stage: Stage | None
    trials: list[Trial]
    verdict: StoredVerdict | None

    @property
    def results(self) -> list[TrialResult]:
        return [t.result for t in self.trials]

    def trial(self, number: int | None) -> Trial | None:
        return next((t for t in self.trials if t.number == number), None)

    @property
    def current(self) -> Trial | None:
        found = current_of(self.results)
        return None if found is None else self.trial(found.point.number)

    @property
    def best(self) -> Trial | None:
        """The verdict's winner (the best trial, improved or not), else the leader so far."""
        if self.verdict is not None and self.verdict.winner is not None:
            stored = self.trial(self.verdict.winner)
            if stored is not None:
                return stored
        found = leader(self.results, self.objective)
        return None if found is None else self.trial(found.point.number)


# -- reading the store ---------------------------------------------------------------------


def read(run: Run, points: Sequence[Point]) -> Tune:
    config = stored_config(TuneConfig, run.params)
    stored = run.params.get("objective")
    objective: Objective = (
        config.objective if config is not None
        else cast(Objective, stored) if stored in OBJECTIVES else "dead"
    )  # fmt: skip
    stage = next((_stage(p) for p in points if kind(p.params) == SIMULATOR_STAGE), None)
    verdicts = [p for p in points if kind(p.params) == VERDICT_STAGE]
    verdict = _verdict(verdicts[-1]) if verdicts else None
    return Tune(config, objective, stage, _trials(points), verdict)


def _trials(points: Sequence[Point]) -> list[Trial]:
    by_number: dict[int, list[tuple[TrialPoint, Point]]] = {}
    for p in points:
        if kind(p.params) != "trial":
            continue
        trial = typed(TrialPoint.from_params, p.params)
        if trial is not None:
            by_number.setdefault(trial.number, []).append((trial, p))
    found = []
    for number in sorted(by_number):
        pairs = sorted(by_number[number], key=lambda tp: (tp[1].repetition, tp[1].id))
        result = TrialResult(pairs[0][0], [p.metrics for _, p in pairs])
        found.append(Trial(result, [p for _, p in pairs]))
    return found


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return None


def _prediction(data: Any) -> dict[str, float] | None:
    if not isinstance(data, Mapping):
        return None
    found = {name: value_of(data, name) for name in PREDICTIONS}
    return {name: value for name, value in found.items() if value is not None}


def _candidate(data: Any) -> Candidate | None:
    if not isinstance(data, Mapping) or not isinstance(data.get("values"), Mapping):
        return None
    prediction = _prediction(data.get("prediction"))
    if prediction is None:
        return None
    return Candidate({str(k): str(v) for k, v in data["values"].items()}, prediction)


def _stage(point: Point) -> Stage:
    m = point.metrics
    front = _json(m.get(STAGE_FRONT))
    space = _json(m.get(STAGE_SPACE))
    scored = m.get(STAGE_SCORED)
    return Stage(
        scored=int(scored) if is_int(scored) else None,
        seconds=value_of(m, STAGE_SECONDS),
        front=[c for c in map(_candidate, front if isinstance(front, list) else []) if c],
        best=_candidate(_json(m.get(STAGE_BEST))),
        current=_prediction(_json(m.get(STAGE_CURRENT))),
        space=[str(line) for line in space] if isinstance(space, list) else [],
        importance=_shares(_json(m.get(STAGE_IMPORTANCE))) or {},
    )


def _shares(importance: object) -> dict[str, float] | None:
    """Setting key → share, from the stored JSON; None when it holds none that can be read."""
    if not isinstance(importance, Mapping):
        return None
    found = {str(k): value_of(importance, k) for k in importance}
    return {k: v for k, v in found.items() if v is not None}


def _verdict(point: Point) -> StoredVerdict:
    m = point.metrics
    winner, measurements = m.get(VERDICT_WINNER), point.params.get("measurements")
    shares = _shares(_json(m.get(VERDICT_IMPORTANCE)))
    return StoredVerdict(
        text=str(m.get(VERDICT_TEXT) or ""),
        improved=bool(value_of(m, VERDICT_IMPROVED)),
        winner=int(winner) if is_int(winner) else None,
        p_value=value_of(m, VERDICT_P),
        sql=str(m.get(VERDICT_SQL) or ""),
        importance=shares,
        measurements=int(measurements) if is_int(measurements) else None,
    )


# -- the simulator's calibration -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Calibrated:
    """One trial's predicted dead-tuple peak beside the measured one (its mean)."""

    number: int
    predicted: float | None
    measured: float | None
    flagged: bool

    @property
    def ratio(self) -> float | None:
        """Predicted over measured."""
        if self.predicted is None or not self.measured:
            return None
        return self.predicted / self.measured

    @property
    def error(self) -> float | None:
        """|predicted − measured| / measured."""
        ratio = self.ratio
        return None if ratio is None else abs(ratio - 1.0)


@dataclass(frozen=True, slots=True)
class Calibration:
    rows: list[Calibrated]
    median: float | None  # of the errors of the trials whose replay kept its rates
    worst: float | None
    used: int
    left_out: int  # flagged trials: their replay missed the captured rates


def calibration(trials: Sequence[Trial]) -> Calibration:
    rows = [
        Calibrated(t.number, t.predicted("dead_peak"), t.result.mean(DEAD),
                   t.result.flagged is not None)
        for t in trials
    ]  # fmt: skip
    errors = [r.error for r in rows if not r.flagged and r.error is not None]
    left_out = sum(1 for r in rows if r.flagged and r.error is not None)
    if not errors:
        return Calibration(rows, None, None, 0, left_out)
    return Calibration(rows, statistics.median(errors), max(errors), len(errors), left_out)


def best_so_far(values: Sequence[float | None]) -> list[float | None]:
    """The running minimum of ``values`` (a None is skipped, and repeats the minimum)."""
    found: list[float | None] = []
    low: float | None = None
    for v in values:
        if v is not None and (low is None or v < low):
            low = v
        found.append(low)
    return found
