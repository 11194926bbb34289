"""The tune's measured search: Optuna's ask and tell over the space, warm-started with the
simulator's best candidates, its state kept in a journal file beside the results store so
``--resume`` continues where the tune stopped.

Each asked trial carries the tune's own trial number (a user attribute), so a measurement
comes back to the Optuna trial it answers, and a trial asked but never measured (the tune was
interrupted) is marked failed when the tune resumes: the search asks again instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from vacuumlab.records.tune import Dimension, Objective, TrialSettings
from vacuumlab.records.tune_spec import IMPORTANCE_TRIALS
from vacuumlab.stats.tune import objective_metrics, value_of
from vacuumlab.studies.tune.simulated import as_values, distributions, importance, quiet_optuna

_NAME = "vacuumlab-tune"
_TRIAL = "vacuumlab_trial"


class Search:
    """Optuna's study of the measured trials."""

    def __init__(
        self,
        journal: Path,
        space: tuple[Dimension, ...],
        fixed: Mapping[str, str],
        objective: Objective,
        seed: int,
    ) -> None:
        quiet_optuna()
        journal.parent.mkdir(parents=True, exist_ok=True)
        storage = JournalStorage(JournalFileBackend(str(journal)))
        self.metrics = objective_metrics(objective)
        self.space, self.fixed = space, dict(fixed)
        self.dists = distributions(space)
        sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=2)
        self.seed = seed
        self.study = optuna.create_study(
            study_name=_NAME, storage=storage, load_if_exists=True, sampler=sampler,
            directions=["minimize"] * len(self.metrics),
        )  # fmt: skip
        self._abandon_unfinished()

    def _abandon_unfinished(self) -> None:
        """Trials asked before an interruption and never measured: failed, asked again."""
        for trial in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            self.study.tell(trial.number, state=TrialState.FAIL)

    def told(self) -> set[int]:
        """The tune's trial numbers the study holds a finished measurement of."""
        return {
            int(t.user_attrs[_TRIAL])
            for t in self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if _TRIAL in t.user_attrs
        }

    def warm_start(self, candidates: Sequence[Mapping[str, str]]) -> None:
        """Have the next asks propose these first (the simulator's best), unless they were."""
        if self.study.get_trials(deepcopy=False):
            return  # a resumed tune: they were enqueued when it started
        for values in candidates:
            params = {k: float(v) for k, v in values.items() if k in self.dists}
            self.study.enqueue_trial(params, skip_if_exists=True)

    def ask(self, number: int) -> TrialSettings:
        """The settings of trial ``number``: the fixed ones and the search's proposal."""
        trial = self.study.ask(self.dists)
        trial.set_user_attr(_TRIAL, number)
        return TrialSettings.of(self.fixed | as_values(self.space, trial.params))

    def tell(self, number: int, metrics: Mapping[str, Any]) -> None:
        """The measurement of trial ``number``, if the study asked for it."""
        for trial in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            if trial.user_attrs.get(_TRIAL) != number:
                continue
            values = [value_of(metrics, name) for name in self.metrics]
            if any(v is None for v in values):
                self.study.tell(trial.number, state=TrialState.FAIL)
            else:
                self.study.tell(trial.number, [float(v) for v in values if v is not None])
            return

    def add(self, number: int, values: Mapping[str, str], metrics: Mapping[str, Any]) -> None:
        """A measured trial the study did not ask for (the simulator's pick, a trial measured
        before the journal heard of it), when its settings lie inside the space."""
        if number in self.told():
            return
        params: dict[str, Any] = {}
        for d in self.space:
            if d.key not in values:
                return
            number_value = float(values[d.key])
            if d.levels and number_value not in d.levels:
                return
            if not d.low <= number_value <= d.high:
                return
            params[d.key] = int(number_value) if d.integer and not d.levels else number_value
        measured = [value_of(metrics, name) for name in self.metrics]
        if any(v is None for v in measured):
            return
        told = [float(v) for v in measured if v is not None]
        trial = optuna.trial.create_trial(
            params=params, distributions=self.dists, values=told, user_attrs={_TRIAL: number}
        )
        self.study.add_trial(trial)

    def importance(self) -> dict[str, float]:
        """Each setting's importance among the measured trials; empty below
        :data:`IMPORTANCE_TRIALS` of them."""
        complete = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if len(complete) < IMPORTANCE_TRIALS:
            return {}
        return importance(self.study)
