"""What a tune stores and its report reads: the contract between the tuner and its report.

A tune is a run of the study ``tune``. Its points are of three kinds, told apart by their
parameters:

- **the simulator's stage** (``{"stage": "simulator"}``), once: how many candidates the
  simulator scored and in how long, its Pareto front and its pick, as JSON text;
- **a measured trial** (``{"trial": N, "origin": …, "server": {…}, "tables": {…}}``, see
  :class:`~vacuumlab.records.tune.TrialPoint`), one point per measurement (a confirmation is
  another repetition of the same trial): every metric and series a step of the custom study
  stores (``records/custom_spec.py``), plus the simulator's prediction of it
  (:func:`predicted`);
- **the verdict** (``{"stage": "verdict", "measurements": M}``), written when the tune ends
  after M measurements (a resumed tune that measures more writes another): the winner, the
  test against the current settings, the SQL and the settings' importance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from vacuumlab.records.publication import Publication

STUDY: Final = "tune"
#: The user's own workload: no published work.
PUBLICATION: Publication | None = None

SIMULATOR_STAGE: Final = "simulator"
VERDICT_STAGE: Final = "verdict"

#: What the simulator predicts of a trial (model: studies/tune/simulated.py, Prediction).
PREDICTIONS: Final = ("dead_peak", "past_threshold_s", "worker_s", "io_pages", "vacuums")

#: The simulator stage's metrics: counts and seconds, and JSON text for the rest.
STAGE_SCORED: Final = "scored"
STAGE_SECONDS: Final = "seconds"
STAGE_FRONT: Final = "front_json"  # [{"values": {key: value}, "prediction": {...}}, …]
STAGE_BEST: Final = "best_json"  # {"values": …, "prediction": …}
STAGE_CURRENT: Final = "current_json"  # the current settings' prediction
STAGE_SPACE: Final = "space_json"  # [line, …]: the space as printed before the search
STAGE_IMPORTANCE: Final = "importance_json"  # {key: share}: the settings' importance there

#: The verdict's metrics.
VERDICT_TEXT: Final = "verdict"
VERDICT_IMPROVED: Final = "improved"  # 1 or 0
VERDICT_WINNER: Final = "winner"  # trial number, or None
VERDICT_P: Final = "p_value"
VERDICT_SQL: Final = "sql"
VERDICT_IMPORTANCE: Final = "importance_json"  # {key: share}; {} below IMPORTANCE_TRIALS
#: Measured trials the settings' importance needs among them: with fewer, a ranking of ten
#: settings by a handful of trials is noise (seven trials ranked naptime last where it
#: decided every result), and the report shows the simulator's ranking instead.
IMPORTANCE_TRIALS: Final = 10


def predicted(name: str) -> str:
    """A trial's metric: the simulator's prediction ``name`` (one of :data:`PREDICTIONS`)."""
    return f"predicted:{name}"


def kind(params: Mapping[str, Any]) -> str:
    """``trial``, ``simulator`` or ``verdict``: which kind of point ``params`` belong to."""
    if "trial" in params:
        return "trial"
    return str(params.get("stage", ""))
