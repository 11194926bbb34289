"""The parallel experiment's timelines as the study records them (a point's timeline_json):
who ran what, when, and what each session was seen doing, checked as they are read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from vacuumlab.records.toast import Span
from vacuumlab.report.toast.data import Data
from vacuumlab.store import Metric

ARM_TITLES = {
    "sequential": "sequential: one VACUUM of the table, heap then TOAST",
    "overlapping": "overlapping: the TOAST relation by name, and the whole table (the post's)",
    "separate": "separate: the TOAST relation by name, and the table with PROCESS_TOAST false",
}
ROLE_NAMES = {"toast": "TOAST session", "table": "table session"}


@dataclass(frozen=True, slots=True)
class Timeline:
    """A parallel point's timeline_json, checked."""

    extents: dict[str, tuple[float, float]]
    statements: dict[str, str]
    spans: tuple[Span, ...]
    notices: tuple[tuple[str, float, str], ...]


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("not a number")
    return float(value)


def _parse_span(raw: Any) -> Span:
    """The study's own record, once its times are checked: ``from_json`` would also take a
    quoted number or a bool, which the study never writes."""
    _number(raw["start"]), _number(raw["end"])
    return Span.from_json(raw)


def parse_timeline(raw: Metric) -> Timeline | None:
    """The timeline, or None when the metric is missing or is not what the study writes."""
    if not isinstance(raw, str):
        return None
    try:
        data = json.loads(raw)
        extents = {
            str(s["role"]): (_number(s["start"]), _number(s["end"])) for s in data["sessions"]
        }
        statements = {str(s["role"]): str(s["statement"]) for s in data["sessions"]}
        spans = tuple(_parse_span(s) for s in data["spans"])
        notices = tuple(
            (str(n["session"]), _number(n["t"]), str(n["text"])) for n in data["notices"]
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return Timeline(extents, statements, spans, notices)


def read_timelines(data: Data) -> tuple[dict[str, Timeline], list[str]]:
    """The first repetition's timeline of each arm, and the arms whose timeline is broken."""
    found: dict[str, Timeline] = {}
    broken: list[str] = []
    for arm, group in data.parallel.items():
        timeline = parse_timeline(group[0].metrics.get("timeline_json"))
        if timeline is None:
            broken.append(arm)
        else:
            found[arm] = timeline
    return found, broken


def waits(timeline: Timeline) -> list[Span]:
    return [s for s in timeline.spans if s.category == "lock"]
