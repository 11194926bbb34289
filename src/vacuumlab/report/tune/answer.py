"""The tune report's answer: the verdict as the tune recorded it, its SQL, and the best trial
against the current settings, each objective's mean with its 95 % interval, the difference and
Welch's p, recomputed from the measurements; the latency check beside them. A tune that did not
finish has no verdict: the answer is then the leader so far, provisionally."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vacuumlab.records.tune import Objective
from vacuumlab.report.common import DASH, Cell
from vacuumlab.report.tune.data import Trial, Tune
from vacuumlab.stats.significance import Comparison, p_text, welch
from vacuumlab.stats.tune import DEAD, LATENCY, TrialResult, objective_metrics

Format = Callable[[float | None], str]


def pct(ratio: float) -> str:
    """A ratio as a percentage, the way the pages print them: ``12 %``."""
    return f"{100 * ratio:.0f} %"


def count(value: float | None) -> str:
    return DASH if value is None else f"{value:,.0f}"


def ms(value: float | None) -> str:
    if value is None:
        return DASH
    if abs(value) < 10:
        return f"{value:.3f}"
    return f"{value:.2f}" if abs(value) < 100 else f"{value:,.1f}"


#: What the report calls each measured metric, and how it prints it.
METRICS: dict[str, tuple[str, Format]] = {
    DEAD: ("dead-tuple peak", count),
    LATENCY: ("p99 latency (ms)", ms),
}
OBJECTIVE_WORDS: dict[Objective, str] = {
    "dead": "the dead-tuple peak of the busiest table",
    "latency": "the p99 latency",
    "both": "the dead-tuple peak and the p99 latency together",
}
ORIGIN_WORDS = {
    "current": "current settings",
    "advice": "what advise recommends",
    "simulator": "the simulator's pick",
    "search": "the search",
}


@dataclass(frozen=True, slots=True)
class CompareRow:
    """One metric of the best trial against the current settings."""

    label: str
    current: Cell
    best: Cell
    difference: str
    p: str
    test: str


@dataclass(frozen=True, slots=True)
class Answer:
    finished: bool
    text: str
    improved: bool
    sql: str
    best_name: str  # "the winner", "the best trial", "the leader so far"
    best: str | None  # "trial 4 (the search): t.autovacuum_vacuum_scale_factor=0.01"
    rows: list[CompareRow]
    latency: str | None


def interval_cell(result: TrialResult, metric: str, fmt: Format) -> Cell:
    """The mean, with its 95 % interval and every value when there are several."""
    values = result.values(metric)
    if not values:
        return Cell(DASH)
    if len(values) == 1:
        return Cell(fmt(values[0]), "one measurement")
    each = " · ".join(fmt(v) for v in values)
    interval = result.interval(metric)
    mean = sum(values) / len(values)
    ci = f"95 % [{fmt(interval.low)}, {fmt(interval.high)}]; " if interval is not None else ""
    return Cell(f"{fmt(mean)} (mean of {len(values)})", f"{ci}each: {each}")


def trial_words(trial: Trial) -> str:
    point = trial.result.point
    origin = ORIGIN_WORDS.get(point.origin, str(point.origin))
    return f"trial {point.number} ({origin}): {point.settings.describe()}"


def _difference(test: Comparison, fmt: Format) -> str:
    if test.mean_a is None or test.mean_b is None:
        return DASH
    delta = test.mean_a - test.mean_b
    sign = "+" if delta >= 0 else "−"
    relative = test.relative
    share = "" if relative is None else f" ({'+' if relative >= 0 else '−'}{pct(abs(relative))})"
    return f"{sign}{fmt(abs(delta))}{share}"


def welch_words(test: Comparison) -> str:
    if test.verdict != "not testable":
        return test.text
    if test.n_a < 2 or test.n_b < 2:
        return "not testable (each needs two measurements or more: --confirm)"
    return test.text


def _row(metric: str, best: TrialResult, current: TrialResult, check: bool) -> CompareRow:
    label, fmt = METRICS[metric]
    test = welch(best.values(metric), current.values(metric))
    return CompareRow(
        label=f"{label}, the latency check" if check else label,
        current=interval_cell(current, metric, fmt),
        best=interval_cell(best, metric, fmt),
        difference=_difference(test, fmt),
        p=p_text(test.p_value),
        test=welch_words(test),
    )


def _latency_check(objective: Objective, best: TrialResult, current: TrialResult) -> str:
    if objective_metrics(objective)[0] == LATENCY:
        return "The objective is the p99 latency itself: there is no separate latency check."
    test = welch(best.values(LATENCY), current.values(LATENCY))
    if test.verdict == "not testable":
        return f"The latency check is {welch_words(test)}."
    p = p_text(test.p_value)
    if test.verdict == "within noise":
        return (f"The latency check passes: the p99 latency is not significantly different "
                f"from the current settings' (Welch's p = {p}).")  # fmt: skip
    if (test.mean_a or 0.0) > (test.mean_b or 0.0):
        return (f"The latency check fails: the p99 latency is significantly worse than the "
                f"current settings' (Welch's p = {p}), so this trial cannot win.")  # fmt: skip
    return (f"The latency check passes: the p99 latency is significantly better than the "
            f"current settings' (Welch's p = {p}).")  # fmt: skip


def answer(tune: Tune) -> Answer:
    verdict, current, best = tune.verdict, tune.current, tune.best
    if verdict is None:
        name = "the leader so far"
        lead = "" if best is not None else " No trial beyond the current settings was measured."
        text = f"The tune did not finish: it recorded no verdict, so nothing was tested yet.{lead}"
    else:
        name = "the winner" if verdict.improved else "the best trial"
        text = verdict.text or DASH
    rows: list[CompareRow] = []
    latency = None
    if best is not None and current is not None and best is not current:
        metrics = objective_metrics(tune.objective)
        rows = [_row(m, best.result, current.result, False) for m in metrics]
        if LATENCY not in metrics:
            rows.append(_row(LATENCY, best.result, current.result, True))
        latency = _latency_check(tune.objective, best.result, current.result)
    return Answer(
        finished=verdict is not None,
        text=text,
        improved=verdict is not None and verdict.improved,
        sql=verdict.sql if verdict is not None and verdict.improved else "",
        best_name=name,
        best=trial_words(best) if best is not None else None,
        rows=rows,
        latency=latency,
    )
