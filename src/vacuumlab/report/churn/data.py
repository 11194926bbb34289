"""Reading a churn run: its steps as planned in the run's parameters and as recorded in its
points, and how each compares with the post's steps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vacuumlab.records.churn import ChurnConfig, ChurnPoint
from vacuumlab.records.churn_spec import POST_STEPS
from vacuumlab.report.common import text
from vacuumlab.report.page import stored_config, typed
from vacuumlab.store import Point, Run


@dataclass(frozen=True, slots=True)
class Step:
    """A step as planned in the run's parameters or as recorded in a point."""

    number: int
    name: str
    scope: str
    settings: dict[str, str]


#: The points of one step, one per repetition, with the step as each recorded it.
Recorded = list[tuple[Step, Point]]


def as_step(point: ChurnPoint) -> Step:
    """The step as the report shows it: its number beside the study's own step."""
    step = point.step
    settings = {str(k): text(v) for k, v in step.settings.items()}
    return Step(number=point.number, name=step.name, scope=step.scope, settings=settings)


def planned_steps(run: Run) -> dict[int, Step]:
    """The steps the run's config planned, by their 1-based number."""
    config = stored_config(ChurnConfig, run.params)
    steps = () if config is None else config.steps
    return {n: as_step(ChurnPoint(n, s)) for n, s in enumerate(steps, start=1)}


def recorded(points: Sequence[Point]) -> Recorded:
    """Every point with its step, in step, repetition and recording order."""
    steps = ((typed(ChurnPoint.from_params, p.params), p) for p in points)
    return sorted(
        ((as_step(step), p) for step, p in steps if step is not None),
        key=lambda sp: (sp[0].number, sp[1].repetition, sp[1].id),
    )


def by_step(points: Recorded) -> dict[int, Recorded]:
    steps: dict[int, Recorded] = {}
    for step, point in points:
        steps.setdefault(step.number, []).append((step, point))
    return steps


def post_number(step: Step) -> int | None:
    """The number of the post's step whose settings this step runs with (extra settings
    allowed): its own number when that one matches, as in the post's six; else the first that
    does, as in the demo's two steps (the post's first and last); None for a step of its own."""

    def matches(number: int) -> bool:
        post = POST_STEPS[number - 1].settings
        return all(step.settings.get(name) == value for name, value in post.items())

    if 1 <= step.number <= len(POST_STEPS) and matches(step.number):
        return step.number
    return next((n for n in range(1, len(POST_STEPS) + 1) if matches(n)), None)
