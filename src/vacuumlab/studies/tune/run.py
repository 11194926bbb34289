"""``vacuumlab tune``: a table's settings searched on the simulator, then proven on a replay of
its own captured workload.

1. **The simulator's stage**: thousands of candidates scored in seconds (``simulated.py``);
   its front and pick are stored as the run's first point.
2. **The measured trials**, each a step of the custom study's replay (the same build, warm-up
   and load, ``studies/custom.py``) with its settings in force, on the run's baseline plus
   its own: first three references (the captured settings, what ``advise`` recommends for
   them, the simulator's pick), then what Optuna proposes (``search.py``), warm-started with
   the simulator's best.
3. **The confirmation**: the leader and the current settings measured ``--confirm`` more
   times, and the verdict (``stats/tune.py``): a winner only when it beats the current
   settings beyond the noise. The verdict, its SQL and the settings' importance are stored
   as the run's last point.

Every measured trial is committed before the next starts: Ctrl-C keeps them, and ``--resume``
continues the search from its journal. ``--budget`` starts no trial that cannot end within it.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Mapping
from datetime import datetime
from functools import cached_property
from typing import Any

from vacuumlab.advise import advise
from vacuumlab.model.knobs import KNOBS, knob
from vacuumlab.model.profiled import snapshots
from vacuumlab.pg.connect import connect
from vacuumlab.records.custom import CustomConfig
from vacuumlab.records.profile import Profile
from vacuumlab.records.snapshot import Setting, Snapshot
from vacuumlab.records.tune import Origin, TrialPoint, TrialSettings, TuneConfig
from vacuumlab.records.tune_spec import (
    SIMULATOR_STAGE,
    STUDY,
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
from vacuumlab.stats.tune import TrialResult, decide, group, leader, objective_metrics
from vacuumlab.store import Metric, point_key
from vacuumlab.studies.base import Measured, Planned, StudyRun, now
from vacuumlab.studies.custom import CustomRun
from vacuumlab.studies.tune.answer import recommendations, script
from vacuumlab.studies.tune.search import Search
from vacuumlab.studies.tune.simulated import (
    UNSIMULATED,
    Candidate,
    FirstStage,
    Predictor,
    first_stage,
)
from vacuumlab.studies.tune.space import Space
from vacuumlab.studies.tune.stored import stage_metrics, stage_of

#: Seconds a trial takes beyond its load before one has been measured (building and loading
#: the tables, the vacuum and checkpoint after): the budget's first guess.
SETUP_GUESS_S = 15.0
#: Candidates from the simulator's stage that the measured search tries first, beyond its pick.
WARM_START = 2
_METRIC_WORDS = {"dead_tuples_peak": "dead-tuple peak", "latency_p99_ms": "p99 latency (ms)"}
_ORIGIN_WORDS: dict[Origin, str] = {
    "current": "the captured settings",
    "advice": "what advise recommends",
    "simulator": "the simulator's pick",
    "search": "the search's proposal",
}


class TuneRun(StudyRun[TuneConfig, TrialPoint]):
    """One tune on one target, recording into one store."""

    study = STUDY
    config_type = TuneConfig

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._search: Search | None = None
        self._costs: list[float] = []
        self._deadline: float | None = None

    # -- what the run is ----------------------------------------------------------------------

    @cached_property
    def profile(self) -> Profile:
        assert self.config.profile is not None
        return Profile.model_validate(self.config.profile)

    @cached_property
    def replay(self) -> CustomRun:
        """The custom study's replay of the profile, measuring each trial as one of its steps."""
        c = self.config
        custom = CustomConfig(
            profile=c.profile, profile_file=c.profile_file, scale=c.scale, seconds=c.seconds,
            warmup=c.warmup, clients=c.clients, jobs=c.jobs, target=c.target,
        )  # fmt: skip
        return CustomRun(custom, self.target, self.store, self.progress, run_id=self.run_id)

    @cached_property
    def predictor(self) -> Predictor:
        return Predictor(self.profile, self.config.scale, self.config.trial_seconds)

    @cached_property
    def captured(self) -> tuple[Snapshot, Snapshot]:
        """The profile's tables as snapshots, at the captured scale: what advise reads."""
        return snapshots(self.profile)

    def describe(self) -> str:
        c = self.config
        tables = len(self.profile.tables)
        return (
            f"{tables} table(s) of {c.profile_file or 'a profile'} at scale {c.scale:g}; "
            f"{len(c.space)} settings searched on the simulator ({c.candidates:,} candidates), "
            f"then {c.trials} trials × ({c.warmup} + {c.seconds}) s measured and "
            f"{c.confirm} confirmations; objective {c.objective}"
        )

    def plan(self) -> list[Planned[TrialPoint]]:
        """Nothing in advance: each trial is proposed once the ones before it are measured."""
        return []

    def label(self, planned: Planned[TrialPoint]) -> str:
        point = planned.point
        text = f"trial {point.number}/{self.config.trials}: {_ORIGIN_WORDS[point.origin]}"
        if planned.repetition:
            text += f" (measured again, {planned.repetition + 1})"
        return text

    def seconds(self, planned: Planned[TrialPoint]) -> int:
        return self.config.trial_seconds

    def own_tables(self) -> tuple[str, ...]:
        return self.replay.own_tables()

    def validate(self) -> None:
        """Every server setting a trial may set must be settable here."""
        names = {d.setting: d.value(d.high) for d in self.config.space if d.table is None}
        names |= {k.split(".", 1)[1]: v for k, v in self.config.fixed.items()
                  if k.startswith("server.")}  # fmt: skip
        names |= self.captured_server()
        self.target.check(names)

    # -- the settings of a trial -------------------------------------------------------------

    def captured_server(self) -> dict[str, str]:
        """The profile's server-wide autovacuum settings that the lab's server has and reads
        otherwise: every trial starts from them, so the current settings' trial runs as
        production does. Those it already reads are left alone (one needing a restart would
        otherwise restart the sandbox at every trial)."""
        return {
            name: value
            for name, value in self._captured_wanted.items()
            if self._lab_settings.get(name) != value
        }

    @cached_property
    def _captured_wanted(self) -> dict[str, str]:
        version, _ = self._lab
        found = {}
        for s in self.profile.settings:
            k = KNOBS.get(s.name)
            if k is None or "server" not in k.scopes or version < k.since:
                continue
            found[s.name] = s.setting
        return found

    @property
    def _lab_settings(self) -> dict[str, str]:
        return self._lab[1]

    @cached_property
    def _lab(self) -> tuple[int, dict[str, str]]:
        """The lab's server's version and settings before the tune changed any, in one
        session."""
        with connect(self.target.dsn) as session:
            rows = session.fetch("settings", Setting)
            return int(session.info.version_num), {row.name: row.setting for row in rows}

    def measure_point(self, planned: Planned[TrialPoint]) -> Measured:
        """One trial: the replay under the captured settings plus the trial's own, with the
        simulator's prediction of it beside the measurement."""
        point = planned.point
        settings = point.settings
        server = self.captured_server() | settings.server
        directory = f"trial-{point.number}-rep-{planned.repetition}"
        measured = self.replay.measure_settings(directory, server, per_table=settings.tables)
        prediction = self.predictor.predict(settings)
        metrics = dict(measured.metrics)
        metrics |= {predicted(k): v for k, v in prediction.as_dict().items()}
        return Measured(metrics, measured.series, started_at=measured.started_at)

    # -- the loop ------------------------------------------------------------------------------

    def dispatch(self, todo: list[Planned[TrialPoint]]) -> None:
        """The tune's own loop, here, with or without an executor: it proposes each round of
        trials from the ones measured before, and hands the round to the executor."""
        self.measure(todo)

    def measure(self, todo: list[Planned[TrialPoint]]) -> None:
        """The simulator's stage, the references, the search, the confirmation, the verdict."""
        assert self.run_id is not None
        self.prepare()
        if self.config.budget_s is not None:
            self._deadline = time.monotonic() + self.config.budget_s
        self.progress.message("the search space:")
        for line in self.space_lines():
            self.progress.message(f"  {line}")
        for line in self.config.left_out:
            self.progress.message(f"  left out: {line}")
        stage = self._first_stage()
        search = Search(
            self.artifacts / "optuna.journal", self.config.space, self.config.fixed,
            self.config.objective, self.config.seed,
        )  # fmt: skip
        self._search = search
        trials = self._stored_trials()
        for number, (point, metrics) in sorted(trials.items()):
            if point.origin in ("simulator", "search"):
                search.add(number, point.settings.flat(), metrics)
        search.warm_start([c.values for c in self._warm(stage)])
        self.progress.started(self.config.trials + 2 * self.config.confirm)
        references = [Planned(p, 0) for p in self._references(stage) if p.number not in trials]
        self._in_rounds(references)
        numbers = self._numbers()
        while len(numbers) < self.config.trials and self._fits():
            first = max(numbers, default=0) + 1
            count = min(self._slots, self.config.trials - len(numbers))
            batch = [
                Planned(TrialPoint(n, "search", search.ask(n)), 0)
                for n in range(first, first + count)
            ]
            self._measure_batch(batch)
            numbers = self._numbers()
        self._confirm()
        self._record_verdict(search)

    @cached_property
    def _slots(self) -> int:
        """Trials measured at once: one, or one per slot of the executor's nodes."""
        if self.executor is None:
            return 1
        return max(1, sum(self.executor.nodes().values()))

    def _in_rounds(self, todo: list[Planned[TrialPoint]]) -> None:
        """Measure ``todo`` a round of :attr:`_slots` at a time, while the budget lasts."""
        for start in range(0, len(todo), self._slots):
            if not self._fits():
                return
            self._measure_batch(todo[start : start + self._slots])

    def _fits(self) -> bool:
        """Whether one more trial can end within the budget."""
        if self._deadline is None:
            return True
        guess = max(self._costs, default=self.config.trial_seconds + SETUP_GUESS_S)
        left = self._deadline - time.monotonic()
        if left < guess:
            self.progress.message(
                f"the budget has {max(left, 0):.0f} s left, less than a trial takes "
                f"(about {guess:.0f} s): no more trials start"
            )
            return False
        return True

    def _measure_batch(self, batch: list[Planned[TrialPoint]]) -> None:
        """Each trial of ``batch``: here one after another, or side by side on an executor's
        servers (each recorded as it ends)."""
        if self.executor is not None:
            self.executor.measure(self, batch)
            return
        for planned in batch:
            self.progress.point_started(self.label(planned), self.seconds(planned))
            started = now()
            measured = self.measure_point(planned)
            self.record(planned, measured, started, now())

    def record(
        self, planned: Planned[TrialPoint], measured: Measured, started: datetime, ended: datetime
    ) -> None:
        """Commit the trial, tell the search, say where the search stands."""
        super().record(planned, measured, started, ended)
        self._costs.append((ended - started).total_seconds())
        if self._search is not None and planned.repetition == 0:
            point = planned.point
            if point.origin == "simulator":
                self._search.add(point.number, point.settings.flat(), measured.metrics)
            else:
                self._search.tell(point.number, measured.metrics)
        self._say_best()

    def _say_best(self) -> None:
        results = self._results()
        best = leader(results, self.config.objective)
        if best is None:
            return
        metric = objective_metrics(self.config.objective)[0]
        interval = best.interval(metric)
        spread = (
            f" (95 % interval {interval.low:,.0f} to {interval.high:,.0f})"
            if interval is not None
            else ""
        )
        measured = sum(len(r.measurements) for r in results)
        to_go = max(self.config.trials + 2 * self.config.confirm - measured, 0)
        left = f"; about {to_go * statistics.fmean(self._costs) / 60:.0f} min to go"
        if self._deadline is not None:
            budget = max(self._deadline - time.monotonic(), 0) / 60
            left = (
                f"; about {min(to_go * statistics.fmean(self._costs) / 60, budget):.0f} min to go"
            )
            left += f" ({budget:.0f} min of the budget left)"
        words = _METRIC_WORDS.get(metric, metric)
        digits = 2 if metric == "latency_p99_ms" else 0
        self.progress.message(
            f"best so far: trial {best.point.number}, {words} {best.mean(metric) or 0:,.{digits}f}"
            f"{spread}{left}"
        )

    # -- the simulator's stage ----------------------------------------------------------------

    def _first_stage(self) -> FirstStage:
        """The stage from the store when a resumed tune has it, else computed and stored."""
        assert self.run_id is not None
        for p in self.store.points(self.run_id):
            if kind(p.params) == SIMULATOR_STAGE:
                return stage_of(p.metrics)
        self.progress.message(f"scoring {self.config.candidates:,} candidates on the simulator")
        stage = first_stage(
            self.predictor, self.config.space, self.config.fixed,
            candidates=self.config.candidates, seed=self.config.seed,
        )  # fmt: skip
        self.store.record_point(
            self.run_id, {"stage": SIMULATOR_STAGE}, 0, stage_metrics(stage, self.space_lines()),
            started_at=now(), ended_at=now(),
        )  # fmt: skip
        self.progress.message(
            f"simulator: {stage.scored:,} candidates in {stage.seconds:.1f} s; its pick "
            f"predicts a dead-tuple peak of {stage.best.prediction.dead_peak:,.0f} against "
            f"{stage.current.dead_peak:,.0f} for the captured settings"
        )
        return stage

    def space_lines(self) -> list[str]:
        return Space(self.config.space, self.config.fixed).describe()

    def _warm(self, stage: FirstStage) -> list[Candidate]:
        """The lowest predicted peaks unlike the pick (measured already, as a reference)."""
        others = [c for c in stage.front if c.values != stage.best.values]
        others.sort(key=lambda c: c.prediction.dead_peak)
        return [self._completed(c) for c in others[:WARM_START]]

    def _completed(self, candidate: Candidate) -> Candidate:
        """The candidate with the settings the simulator cannot see at their captured value
        (inside the space), so the measured trial is the one the simulator scored."""
        values = dict(candidate.values)
        for d in self.config.space:
            if d.key in values or d.setting not in UNSIMULATED:
                continue
            shape = next(t.shape for t in self.profile.tables if t.shape.name == d.table)
            now_value = float(shape.fillfactor or 100)
            if d.levels:
                now_value = min(d.levels, key=lambda level: abs(level - now_value))
            values[d.key] = d.value(min(max(now_value, d.low), d.high))
        return Candidate(values, candidate.prediction)

    # -- the reference trials -----------------------------------------------------------------

    def _references(self, stage: FirstStage) -> list[TrialPoint]:
        """The captured settings, what advise recommends (when it recommends anything), and
        the simulator's pick, numbered from 1 in that order."""
        found: list[tuple[Origin, TrialSettings]] = [("current", TrialSettings())]
        advice = self.advice()
        if advice.flat():
            found.append(("advice", advice))
        else:
            self.progress.message("advise recommends no change for these tables")
        fixed = self.config.fixed
        found.append(("simulator", TrialSettings.of(fixed | self._completed(stage.best).values)))
        return [TrialPoint(n, origin, s) for n, (origin, s) in enumerate(found, start=1)]

    def advice(self) -> TrialSettings:
        """What ``advise`` recommends for the captured tables, as a trial's settings: their
        table settings and the server's, in base units (TOAST settings are left out: the
        replay's TOAST relations are not the captured ones)."""
        before, after = self.captured
        names = {t.shape.qualified: t.shape.name for t in self.profile.tables}
        server: dict[str, str] = {}
        tables: dict[str, dict[str, str]] = {}
        for finding in advise(before, after).findings:
            for rec in finding.recommendations:
                if rec.setting not in KNOBS or rec.scope == "toast":
                    continue
                value = knob(rec.setting).in_base_unit(rec.value)
                if rec.scope == "server":
                    server[rec.setting] = value
                elif rec.target in names:
                    tables.setdefault(names[rec.target], {})[rec.setting] = value
        return TrialSettings(server, tables)

    # -- confirmation and verdict ---------------------------------------------------------------

    def _confirm(self) -> None:
        """The leader and the current settings measured again, alternately."""
        results = self._results()
        best = leader(results, self.config.objective)
        current = next((r for r in results if r.point.origin == "current"), None)
        if best is None or current is None:
            return
        done = self.store.done(self.run_id or 0)
        todo = [
            Planned(result.point, repetition)
            for repetition in range(1, self.config.confirm + 1)
            for result in (best, current)
        ]
        self._in_rounds([p for p in todo if (point_key(p.params), p.repetition) not in done])

    def _record_verdict(self, search: Search) -> None:
        assert self.run_id is not None
        results = self._results()
        verdict = decide(results, self.config.objective)
        sql = ""
        if verdict.improved and verdict.best is not None:
            names = {t.shape.name: t.shape.qualified for t in self.profile.tables}
            recs = recommendations(
                verdict.best.point.settings, self.captured[1], names,
                self.profile.server_version_num,
            )  # fmt: skip
            sql = script(recs)
        metrics: dict[str, Metric] = {
            VERDICT_TEXT: verdict.text,
            VERDICT_IMPROVED: int(verdict.improved),
            VERDICT_WINNER: verdict.best.point.number if verdict.best is not None else None,
            VERDICT_P: verdict.comparison.p_value if verdict.comparison is not None else None,
            VERDICT_SQL: sql,
            VERDICT_IMPORTANCE: json.dumps(search.importance()),
        }
        measurements = sum(len(r.measurements) for r in results)
        self.store.record_point(
            self.run_id, {"stage": VERDICT_STAGE, "measurements": measurements}, 0, metrics,
            started_at=now(), ended_at=now(),
        )  # fmt: skip
        self.progress.message(verdict.text)

    # -- what the store holds -----------------------------------------------------------------

    def _stored_trials(self) -> dict[int, tuple[TrialPoint, Mapping[str, Any]]]:
        """Each trial's first measurement, by number."""
        assert self.run_id is not None
        found: dict[int, tuple[TrialPoint, Mapping[str, Any]]] = {}
        for p in self.store.points(self.run_id):
            if kind(p.params) == "trial" and p.repetition == 0:
                point = TrialPoint.from_params(p.params)
                found[point.number] = (point, p.metrics)
        return found

    def _numbers(self) -> set[int]:
        return set(self._stored_trials())

    def _results(self) -> list[TrialResult]:
        assert self.run_id is not None
        return group(
            [
                (TrialPoint.from_params(p.params), p.metrics)
                for p in self.store.points(self.run_id)
                if kind(p.params) == "trial"
            ]
        )
