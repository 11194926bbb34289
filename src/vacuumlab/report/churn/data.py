"""Reading a churn run: its steps as planned in the run's parameters and as recorded in its
points, and how each compares with the post's steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vacuumlab.report.common import text
from vacuumlab.report.page import is_int
from vacuumlab.store import Point, Run
from vacuumlab.studies.churn_spec import POST_STEPS


@dataclass(frozen=True, slots=True)
class Step:
    """A step as planned in the run's parameters or as recorded in a point."""

    number: int
    name: str
    scope: str
    settings: dict[str, str]


#: The points of one step, one per repetition, with the step as each recorded it.
Recorded = list[tuple[Step, Point]]


def as_step(raw: Mapping[str, Any], fallback_number: int) -> Step:
    number = raw.get("step", raw.get("number"))
    if not is_int(number):
        number = fallback_number
    settings = raw.get("settings")
    return Step(
        number=number,
        name=str(raw.get("name") or f"step {number}"),
        scope=str(raw.get("scope") or "server"),
        settings=(
            {str(k): text(v) for k, v in settings.items()} if isinstance(settings, dict) else {}
        ),
    )


def planned_steps(run: Run) -> dict[int, Step]:
    raw = run.params.get("steps")
    if not isinstance(raw, list):
        return {}
    steps = [as_step(s, i + 1) for i, s in enumerate(raw) if isinstance(s, dict)]
    return {s.number: s for s in steps}


def recorded(points: Sequence[Point]) -> Recorded:
    """Every point with its step, in step, repetition and recording order."""
    return sorted(
        ((as_step(p.params, i + 1), p) for i, p in enumerate(points)),
        key=lambda sp: (sp[0].number, sp[1].repetition, sp[1].id),
    )


def by_step(points: Recorded) -> dict[int, Recorded]:
    steps: dict[int, Recorded] = {}
    for step, point in points:
        steps.setdefault(step.number, []).append((step, point))
    return steps


def differs_from_post(step: Step) -> bool:
    """Whether the step's settings miss or change any of the post's settings for its number.
    Extra settings are allowed; a step the post does not have counts as different."""
    if not 1 <= step.number <= len(POST_STEPS):
        return True
    post = POST_STEPS[step.number - 1].settings
    return any(step.settings.get(name) != value for name, value in post.items())
