"""The tune report's view model, top to bottom: the answer, the search space and what the
simulator did, the trial history, the Pareto front, which settings mattered, the current
settings against the best trial over time, and the simulator's calibration on the user's own
table. Plain strings, escaped by the template; only the charts' SVG is marked safe."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vacuumlab.records.tune_spec import IMPORTANCE_TRIALS, PREDICTIONS
from vacuumlab.report.common import DASH, Cell, format_seconds
from vacuumlab.report.page import (
    Chart,
    Header,
    chart,
    executor_text,
    header,
    of,
    overview,
    param_rows,
    status_notice,
)
from vacuumlab.report.tune import charts
from vacuumlab.report.tune.answer import (
    METRICS,
    OBJECTIVE_WORDS,
    ORIGIN_WORDS,
    Answer,
    answer,
    count,
    interval_cell,
    ms,
    pct,
)
from vacuumlab.report.tune.data import Calibration, Trial, Tune, best_so_far, calibration, read
from vacuumlab.stats.tune import DEAD, LATENCY, objective_metrics
from vacuumlab.store import Point, Run, Store

PARAM_LABELS = (
    ("profile_file", "profile"),
    ("objective", "objective"),
    ("preset", "preset"),
    ("trials", "measured trials (three references included)"),
    ("confirm", "confirmations of the best and the current settings"),
    ("candidates", "candidates scored on the simulator"),
    ("budget_s", "budget (s)"),
    ("space_file", "space file"),
    ("scale", "scale (rows and rates)"),
    ("target", "target"),
    ("clients", "pgbench clients"),
    ("jobs", "pgbench threads (jobs)"),
    ("seconds", "seconds per trial (after warm-up)"),
    ("warmup", "warm-up (s, excluded)"),
    ("seed", "random seed"),
)
#: Too long for the header: the space has a section, the profile its file name.
HIDDEN = ("profile", "space", "fixed")
ABOUT = ("Your own table and workload, replayed on the lab's server under the settings a "
         "search proposes: no published work is reproduced.")  # fmt: skip
PREDICTION_LABELS = {
    "dead_peak": ("dead-tuple peak", count),
    "past_threshold_s": ("seconds tables waited past their threshold", format_seconds),
    "worker_s": ("worker seconds", format_seconds),
    "io_pages": ("pages vacuum reads", count),
    "vacuums": ("autovacuums", count),
}


@dataclass(frozen=True, slots=True)
class SearchSpace:
    lines: list[str]
    fixed: list[str]
    simulator: str | None  # what the simulator did, or None without its stage
    pick: str
    predictions: list[tuple[str, str, str, str]]  # quantity, current, pick, change


@dataclass(frozen=True, slots=True)
class TrialRow:
    number: int
    origin: str
    settings: list[str]  # one setting=value each; empty: as captured
    measurements: int
    dead: Cell
    predicted: str
    p99: Cell
    tps: str
    flag: str | None
    role: str | None  # "current settings", "winner", "best trial", "leader so far"


@dataclass(frozen=True, slots=True)
class Importance:
    rows: list[tuple[str, str]]  # setting key, share
    note: str | None
    chart: Chart | None


@dataclass(frozen=True, slots=True)
class CalibrationRow:
    number: int
    origin: str
    predicted: str
    measured: str
    ratio: str
    error: str
    flagged: bool


@dataclass(frozen=True, slots=True)
class Report:
    header: Header
    objective: str
    objective_metrics: list[str]  # "dead", "latency"
    answer: Answer
    space: SearchSpace
    trials: list[TrialRow]
    history: Chart | None
    pareto: Chart | None
    importance: Importance
    series: list[Chart]
    series_note: str | None
    calibration: list[CalibrationRow]
    calibration_summary: str
    ray: str | None


def build_report(store: Store, run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    tune = read(run, points)
    measurements = sum(len(t.points) for t in tune.trials)
    planned = tune.config.trials if tune.config is not None else 0
    notices = status_notice(run.status, "trials")
    if tune.verdict is None:
        notices.append("This tune did not finish: it recorded no verdict, so the answer below "
                       "is the leader so far, not a tested winner.")  # fmt: skip
    counts = [("trials measured", of(len(tune.trials), planned)),
              ("measurements (confirmations included)", str(measurements))]  # fmt: skip
    head = header(run, None, notices, overview(run, *counts),
                  param_rows(run.params, PARAM_LABELS, hidden=HIDDEN), about=ABOUT)  # fmt: skip
    calibrated = calibration(tune.trials)
    series, series_note = _series(store, tune, out_dir)
    return Report(
        header=head,
        objective=OBJECTIVE_WORDS[tune.objective],
        objective_metrics=_objectives(tune),
        answer=answer(tune),
        space=_space(tune),
        trials=[_trial_row(tune, t) for t in tune.trials],
        history=_history(tune, out_dir),
        pareto=_pareto(tune, out_dir),
        importance=_importance(tune, out_dir),
        series=series,
        series_note=series_note,
        calibration=_calibration_rows(tune, calibrated),
        calibration_summary=calibration_summary(calibrated),
        ray=_ray(store, run),
    )


def _objectives(tune: Tune) -> list[str]:
    return ["dead" if m == DEAD else "latency" for m in objective_metrics(tune.objective)]


# -- the search space ------------------------------------------------------------------------


def _values(values: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(values.items())) or "as captured"


def _change(pick: float | None, current: float | None) -> str:
    if pick is None or current is None or current == 0:
        return DASH
    relative = (pick - current) / current
    return f"{'+' if relative >= 0 else '−'}{pct(abs(relative))}"


def _space(tune: Tune) -> SearchSpace:
    config, stage = tune.config, tune.stage
    lines = stage.space if stage is not None and stage.space else [
        f"{d.key}: {d.describe()}" for d in (config.space if config is not None else ())
    ]  # fmt: skip
    fixed = [f"{k}={v}" for k, v in sorted(config.fixed.items())] if config is not None else []
    if stage is None:
        return SearchSpace(lines, fixed, None, DASH, [])
    scored = DASH if stage.scored is None else f"{stage.scored:,}"
    seconds = DASH if stage.seconds is None else f"{stage.seconds:.1f}"
    simulator = (f"The simulator scored {scored} candidates in {seconds} s. Its front holds "
                 f"{len(stage.front)}: the candidates no other beats on both the predicted "
                 "dead-tuple peak and the worker seconds.")  # fmt: skip
    current, pick = stage.current or {}, stage.best.prediction if stage.best else {}
    rows = []
    for name in PREDICTIONS:
        label, fmt = PREDICTION_LABELS[name]
        now, then = current.get(name), pick.get(name)
        rows.append((label, DASH if now is None else fmt(now),
                     DASH if then is None else fmt(then), _change(then, now)))  # fmt: skip
    picked = _values(stage.best.values) if stage.best is not None else DASH
    return SearchSpace(lines, fixed, simulator, picked, rows)


# -- the trials ------------------------------------------------------------------------------


def _role(tune: Tune, trial: Trial) -> str | None:
    if trial.result.point.origin == "current":
        return "current settings"
    if tune.best is not trial:
        return None
    if tune.verdict is None:
        return "leader so far"
    return "winner" if tune.verdict.improved else "best trial"


def _trial_row(tune: Tune, trial: Trial) -> TrialRow:
    result = trial.result
    point = result.point
    tps = result.mean("tps")
    return TrialRow(
        number=point.number,
        origin=ORIGIN_WORDS.get(point.origin, str(point.origin)),
        settings=[f"{k}={v}" for k, v in point.settings.flat().items()],
        measurements=len(trial.points),
        dead=interval_cell(result, DEAD, count),
        predicted=count(trial.predicted("dead_peak")),
        p99=interval_cell(result, LATENCY, ms),
        tps=DASH if tps is None else f"{tps:,.0f}" if tps >= 100 else f"{tps:.1f}",
        flag=result.flagged,
        role=_role(tune, trial),
    )


def _history(tune: Tune, out_dir: Path) -> Chart | None:
    if not tune.trials:
        return None
    panels = []
    for metric in objective_metrics(tune.objective):
        values = [
            charts.TrialValues(t.number, str(t.result.point.origin), t.result.values(metric),
                               t.result.flagged is not None)
            for t in tune.trials
        ]  # fmt: skip
        firsts = [None if v.flagged or not v.values else v.values[0] for v in values]
        panels.append(charts.Panel(METRICS[metric][0], values, best_so_far(firsts)))
    caption = (
        "Each trial's first measurement (filled, coloured by where it came from), its "
        "confirmations (hollow) and the best first measurement so far (the red step); a trial "
        "whose replay missed the captured rates is a grey cross and cannot lead."
    )
    place = ("The objective, trial by trial", "trials.png")
    return chart("history", charts.trial_history(panels), place, caption, out_dir)


# -- the Pareto front ------------------------------------------------------------------------


def _xy(prediction: dict[str, float] | None) -> tuple[float, float] | None:
    if prediction is None or "worker_s" not in prediction or "dead_peak" not in prediction:
        return None
    return prediction["worker_s"], prediction["dead_peak"]


def _pareto(tune: Tune, out_dir: Path) -> Chart | None:
    stage = tune.stage
    if stage is None and tune.objective != "both":
        return None
    front = [xy for xy in (_xy(c.prediction) for c in stage.front) if xy] if stage else []
    current = _xy(stage.current) if stage else None
    pick = _xy(stage.best.prediction) if stage and stage.best else None
    measured = None
    caption = ("The simulator's front: predicted dead-tuple peak against the worker seconds "
               "its vacuums take, the current settings' prediction (grey cross) and its pick "
               "(star).")  # fmt: skip
    if tune.objective == "both":
        measured = []
        for t in tune.trials:
            dead, latency = t.result.mean(DEAD), t.result.mean(LATENCY)
            if dead is None or latency is None:
                continue
            role = "current" if t is tune.current else "best" if t is tune.best else None
            flagged = t.result.flagged is not None
            measured.append(charts.Measured(t.number, latency, dead, role, flagged))
        caption += (
            " Below, the measured trials' mean dead-tuple peak against their mean p99 latency: "
            "the current settings a grey cross, the best trial a star, a trial whose replay "
            "missed the captured rates a light cross."
        )
    place = ("The Pareto front", "pareto.png")
    return chart("pareto", charts.pareto(front, current, pick, measured), place, caption, out_dir)


# -- which settings mattered -----------------------------------------------------------------

TOO_FEW = (f"Too few measured trials to tell which settings mattered: it takes "
           f"{IMPORTANCE_TRIALS} or more, whose outcomes differ.")  # fmt: skip
NOT_ENDED = "The settings' importance is computed when the tune ends; this one did not end."
ON_SIMULATOR = (" Among the simulator's candidates (fillfactor is not simulated), the settings "
                "ranked as below.")  # fmt: skip


def _importance(tune: Tune, out_dir: Path) -> Importance:
    verdict = tune.verdict
    measured = verdict.importance if verdict is not None else None
    note = None if verdict is not None else NOT_ENDED
    if measured:
        ranked, source = measured, "among the measured trials"
    else:
        note = note or TOO_FEW
        ranked = tune.stage.importance if tune.stage is not None else {}
        if not ranked:
            return Importance([], note, None)
        note += ON_SIMULATOR
        source = "among the simulator's candidates"
    shares = sorted(ranked.items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [(key, pct(share)) for key, share in shares]
    caption = (
        f"Each setting's importance {source} (Optuna's PED-ANOVA): how much the settings of "
        "those that reached the lowest dead-tuple peak differ from the rest in it."
    )
    place = ("Which settings mattered", "importance.png")
    drawn = chart("importance", charts.importance(shares), place, caption, out_dir)
    return Importance(rows, note, drawn)


# -- the current settings against the best trial ---------------------------------------------


def _series(store: Store, tune: Tune, out_dir: Path) -> tuple[list[Chart], str | None]:
    current, best = tune.current, tune.best
    if current is None:
        return [], "The current settings were not measured: there is nothing to compare with."
    if best is None or best is current:
        return [], "No other trial was measured beside the current settings."
    warmup = float(tune.config.warmup) if tune.config is not None else None
    label = f"trial {best.number}"
    found = []
    for metric, title, unit, png in (
        ("n_dead_tup", "Dead tuples of the busiest table", "dead tuples", "dead-tuples.png"),
        ("latency_p99_ms", "p99 latency per second", "p99 latency (ms)", "latency.png"),
    ):
        fig = charts.against(f"{title}: current settings against {label}", unit,
                             store.series(current.first.id, metric),
                             store.series(best.first.id, metric), label, warmup)  # fmt: skip
        caption = (f"The current settings' first measurement (grey) against {label}'s "
                   "(orange), second by second; the hatched start is the warm-up.")  # fmt: skip
        found.append(chart(metric.replace("_", "-"), fig, (title, png), caption, out_dir))
    return found, None


# -- the simulator's calibration -------------------------------------------------------------


def _calibration_rows(tune: Tune, calibrated: Calibration) -> list[CalibrationRow]:
    origins = {t.number: ORIGIN_WORDS.get(t.result.point.origin, "") for t in tune.trials}
    return [
        CalibrationRow(
            number=r.number, origin=origins[r.number], predicted=count(r.predicted),
            measured=count(r.measured),
            ratio=DASH if r.ratio is None else f"{r.ratio:.2f}×",
            error=DASH if r.error is None else pct(r.error),
            flagged=r.flagged,
        )
        for r in calibrated.rows
    ]  # fmt: skip


def calibration_summary(calibrated: Calibration) -> str:
    """``The simulator's peaks were within 12 % of the measured ones (median), worst 31 %,
    over 4 trials``, with the flagged trials left out."""
    left = calibrated.left_out
    aside = (f" ({left} trial{'s' if left != 1 else ''} whose replay missed the captured "
             "rates left out)") if left else ""  # fmt: skip
    if calibrated.median is None or calibrated.worst is None:
        return f"No trial has both a predicted and a measured dead-tuple peak{aside}."
    trials = f"{calibrated.used} trial{'s' if calibrated.used != 1 else ''}"
    return (f"The simulator's peaks were within {100 * calibrated.median:.0f} % of the "
            f"measured ones (median), worst {100 * calibrated.worst:.0f} %, over {trials}"
            f"{aside}.")  # fmt: skip


# -- where the trials ran --------------------------------------------------------------------


def _ray(store: Store, run: Run) -> str | None:
    executions = store.executions(run.id)
    if not any(e.executor.split(":")[0] == "ray" for e in executions):
        return None
    return (f"The trials ran as Ray tasks ({executor_text(run)}), each on a sandbox of its "
            "own but on a node it shared with Ray and with whatever else the node ran: their "
            "latencies and the seconds their vacuums took are timings of a shared node. The "
            "trials compare with one another, measured alike; set beside a run measured on a "
            "machine of its own, they may read slower.")  # fmt: skip
