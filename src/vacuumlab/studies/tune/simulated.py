"""The tune's first stage: candidates scored on the simulator of autovacuum, in milliseconds
each, before any is measured.

A candidate is scored over exactly what a measured trial will see: the replay's tables built
afresh and vacuumed (no dead tuples, every page all-visible), loaded at the profile's rates
times ``--scale`` for the trial's warm-up and measured seconds. Its scores are the dead-tuple
peak of the busiest table (what the replay's sampler follows, so the two stages measure the
same thing) and the seconds relations waited past their threshold, against the worker time
and the pages its vacuums read. Fillfactor is not simulated: the simulator has no pages to
fill, so the first stage leaves it at the captured value and the measured trials search it.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import optuna

from vacuumlab.model import forecast
from vacuumlab.model.profiled import inputs, snapshots
from vacuumlab.model.simulator import Outcome, simulate
from vacuumlab.model.whatif import Change
from vacuumlab.records.profile import Profile
from vacuumlab.records.tune import Dimension, TrialSettings

#: Settings the simulator cannot see: left to the measured trials.
UNSIMULATED = frozenset({"fillfactor"})
#: Where in its launch interval the launcher's first visit falls, as shares of the interval.
#: A trial starts at no particular moment of the launcher's schedule: the first autovacuum
#: after its settings change comes anywhere from 0 to one interval later (autovacuum.c,
#: launcher_determine_sleep()), so a trial's prediction is the mean over four phases.
PHASES: Final = (0.125, 0.375, 0.625, 0.875)
#: Candidates within this share of the lowest predicted peak count as equally good; of those
#: the cheapest is the simulator's pick (a peak 1 % lower is not worth twice the worker time).
EQUAL_PEAK = 0.02


@dataclass(frozen=True, slots=True)
class Prediction:
    """What the simulator expects of one trial."""

    dead_peak: float
    past_threshold_s: float
    worker_s: float
    io_pages: float
    vacuums: int

    def as_dict(self) -> dict[str, float]:
        return {
            "dead_peak": self.dead_peak,
            "past_threshold_s": self.past_threshold_s,
            "worker_s": self.worker_s,
            "io_pages": self.io_pages,
            "vacuums": float(self.vacuums),
        }


@dataclass(frozen=True, slots=True)
class Candidate:
    values: dict[str, str]  # dimension key -> value
    prediction: Prediction


@dataclass(frozen=True, slots=True)
class FirstStage:
    """The simulator's search: how many candidates in how long, its Pareto front (lowest
    peak against least worker time) and its pick."""

    scored: int
    seconds: float
    front: tuple[Candidate, ...]
    best: Candidate
    current: Prediction
    #: Each simulated setting's importance to a low predicted peak among the candidates.
    importance: dict[str, float] = field(default_factory=dict)


def scaled(profile: Profile, scale: float) -> Profile:
    """The profile as the replay runs it: rows, sizes and rates times ``scale``."""
    if scale == 1:
        return profile
    tables = []
    for t in profile.tables:
        s = t.shape
        shape = s.model_copy(
            update={
                "rows": s.rows * scale,
                "pages": max(1, round(s.pages * scale)),
                "heap_bytes": round(s.heap_bytes * scale),
                "toast_bytes": round(s.toast_bytes * scale),
                "index_bytes": round(s.index_bytes * scale),
            }
        )
        r = t.rates
        rates = r.model_copy(
            update={
                name: getattr(r, name) * scale
                for name in ("inserts", "updates", "hot_updates", "deletes", "dead_tuples")
            }
        )
        tables.append(t.model_copy(update={"shape": shape, "rates": rates}))
    return profile.model_copy(update={"tables": tables})


def busiest(profile: Profile) -> str:
    """The table with the most changes a second: the one the replay's sampler follows."""
    table = max(profile.tables, key=lambda t: t.rates.inserts + t.rates.updates + t.rates.deletes)
    return table.shape.name


class Predictor:
    """Scores settings on the simulator, for one profile and one trial's length."""

    def __init__(self, profile: Profile, scale: float, window_s: float) -> None:
        self.profile = scaled(profile, scale)
        self.window_s = float(window_s)
        self.before, self.after = snapshots(self.profile)
        self.qualified = {t.shape.name: t.shape.qualified for t in self.profile.tables}
        self.label = self.qualified[busiest(self.profile)]

    def changes(self, settings: TrialSettings) -> list[Change]:
        found = [Change(k, v) for k, v in settings.server.items() if k not in UNSIMULATED]
        for table, options in settings.tables.items():
            found += [
                Change(k, v, table=self.qualified[table])
                for k, v in options.items()
                if k not in UNSIMULATED
            ]
        return found

    def outcomes(self, settings: TrialSettings) -> list[Outcome]:
        """The trial simulated once per launcher phase (:data:`PHASES`)."""
        # A trial starts on tables just built and vacuumed, which is where the profile's
        # snapshots start every table (model/profiled.py: as a vacuum leaves it).
        given = inputs(self.before, self.after, self.changes(settings))
        every = given.launcher.launch_every_s
        return [
            simulate(
                given.subjects,
                replace(given.launcher, first_launch_s=phase * every),
                self.window_s,
            )
            for phase in PHASES
        ]

    def predict(self, settings: TrialSettings) -> Prediction:
        """The mean over the launcher's phases of what one trial would show."""
        found = [self._prediction(outcome) for outcome in self.outcomes(settings)]
        n = len(found)
        return Prediction(
            dead_peak=sum(p.dead_peak for p in found) / n,
            past_threshold_s=sum(p.past_threshold_s for p in found) / n,
            worker_s=sum(p.worker_s for p in found) / n,
            io_pages=sum(p.io_pages for p in found) / n,
            vacuums=round(sum(p.vacuums for p in found) / n),
        )

    def _prediction(self, outcome: Outcome) -> Prediction:
        index = forecast.index_of(outcome, self.label)
        peak = 0.0
        if index is not None:
            peak = forecast.dead_between(outcome, index, 0.0, self.window_s)
        spans = outcome.columns
        ends = (min(end, self.window_s) for end in spans.ends)
        worker_s = sum(end - start for start, end in zip(spans.starts, ends, strict=True))
        io = sum(
            outcome.subjects[i].pages + outcome.subjects[i].index_pages for i in spans.subjects
        )
        waited = sum(t.waited for t in outcome.active.values())
        return Prediction(peak, waited, worker_s, io, len(spans.subjects))


def distributions(space: tuple[Dimension, ...]) -> dict[str, Any]:
    """Each dimension as Optuna's distribution, by its key."""
    found: dict[str, Any] = {}
    for d in space:
        if d.levels:
            found[d.key] = optuna.distributions.CategoricalDistribution(list(d.levels))
        elif d.integer:
            found[d.key] = optuna.distributions.IntDistribution(
                int(d.low), int(d.high), log=d.log and d.low > 0
            )
        else:
            found[d.key] = optuna.distributions.FloatDistribution(
                d.low, d.high, log=d.log and d.low > 0
            )
    return found


def as_values(space: tuple[Dimension, ...], params: Mapping[str, Any]) -> dict[str, str]:
    """Optuna's parameters as setting values, by dimension key."""
    by_key = {d.key: d for d in space}
    return {key: by_key[key].value(float(value)) for key, value in params.items()}


def quiet_optuna() -> None:
    """Optuna says nothing on the terminal: the tune's own progress display speaks."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optuna.logging.disable_default_handler()
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def first_stage(
    predictor: Predictor,
    space: tuple[Dimension, ...],
    fixed: Mapping[str, str],
    *,
    candidates: int,
    seed: int,
    on_progress: Callable[[int], None] | None = None,
) -> FirstStage:
    """Score ``candidates`` settings of ``space`` (plus ``fixed``) on the simulator with
    NSGA-II (lowest peak against least worker time); the front and the pick."""
    quiet_optuna()
    started = time.monotonic()
    dists = {k: v for k, v in distributions(space).items() if k.split(".", 1)[1] not in UNSIMULATED}
    study = optuna.create_study(
        directions=["minimize", "minimize"],
        sampler=optuna.samplers.NSGAIISampler(seed=seed, population_size=50),
    )
    simulated_space = tuple(d for d in space if d.key in dists)
    scored: list[Candidate] = []
    for number in range(candidates):
        trial = study.ask(dists)
        values = as_values(simulated_space, trial.params)
        prediction = predictor.predict(TrialSettings.of(dict(fixed) | values))
        scored.append(Candidate(values, prediction))
        study.tell(trial, [prediction.dead_peak, prediction.worker_s])
        if on_progress is not None and (number + 1) % 100 == 0:
            on_progress(number + 1)
    front_numbers = {t.number for t in study.best_trials}
    front = tuple(
        sorted(
            (c for n, c in enumerate(scored) if n in front_numbers),
            key=lambda c: (c.prediction.dead_peak, c.prediction.worker_s),
        )
    )
    return FirstStage(
        scored=len(scored),
        seconds=time.monotonic() - started,
        front=_distinct(front),
        best=pick(scored),
        current=predictor.predict(TrialSettings()),
        importance=importance(study),
    )


def importance(study: optuna.Study) -> dict[str, float]:
    """Each setting's importance to a low first objective (Optuna's PED-ANOVA evaluator,
    which needs no scikit-learn, unlike its fANOVA); empty when it cannot say."""
    try:
        with warnings.catch_warnings():
            # It says that it ranks settings by how they reach low values: as wanted.
            warnings.simplefilter("ignore", UserWarning)
            found = optuna.importance.get_param_importances(
                study,
                evaluator=optuna.importance.PedAnovaImportanceEvaluator(),
                target=lambda t: t.values[0],
            )
    except (RuntimeError, ValueError, ZeroDivisionError):
        return {}
    return {str(k): float(v) for k, v in found.items()}


def pick(scored: list[Candidate]) -> Candidate:
    """The lowest peak, and among candidates within :data:`EQUAL_PEAK` of it the cheapest."""
    lowest = min(c.prediction.dead_peak for c in scored)
    near = [c for c in scored if c.prediction.dead_peak <= lowest * (1 + EQUAL_PEAK) + 1]
    return min(near, key=lambda c: (c.prediction.worker_s, c.prediction.dead_peak))


def _distinct(front: tuple[Candidate, ...]) -> tuple[Candidate, ...]:
    seen: set[tuple[float, float]] = set()
    kept = []
    for c in front:
        key = (round(c.prediction.dead_peak), round(c.prediction.worker_s, 3))
        if key not in seen:
            seen.add(key)
            kept.append(c)
    return tuple(kept)
