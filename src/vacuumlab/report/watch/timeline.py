"""A recorded watch as timelines: the points of the run (one per refresh, records/watch_spec.py)
turned into per-relation series of dead tuples, the spans each relation was seen being
vacuumed, the workers busy and the refreshes that could not read the server. Pure: it reads
the points' metrics, never a snapshot (each kept one is large; the timelines need none)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from vacuumlab.records.watch_spec import DEAD, ENDED, RECORD_TABLES, TOOK, VACUUM, split_metric
from vacuumlab.report.common import metric
from vacuumlab.store import Point

#: (t, value) samples, t in seconds since the first refresh; None: not known at t.
Samples = list[tuple[float, float | None]]


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of the timeline: a vacuum, from its start to its end when the server says
    when it ended and how long it took, else from the first refresh that saw it running to
    the last one in a row; or refreshes that could not read the server."""

    start: float
    end: float


@dataclass(slots=True)
class Timeline:
    times: list[float] = field(default_factory=list)
    up: list[bool] = field(default_factory=list)
    dead: dict[str, Samples] = field(default_factory=dict)
    vacuums: dict[str, list[Span]] = field(default_factory=dict)
    busy: Samples = field(default_factory=list)
    available: Samples = field(default_factory=list)
    refresh_s: list[float] = field(default_factory=list)
    statements: list[int] = field(default_factory=list)

    @property
    def down(self) -> list[Span]:
        """The stretches of refreshes that could not read the server."""
        return _runs([not up for up in self.up], self.times)

    def peak(self, label: str) -> float:
        return max((v for _, v in self.dead.get(label, ()) if v is not None), default=0.0)


def timeline(points: Sequence[Point]) -> Timeline:
    """The run's points in time order as timelines."""
    ordered = sorted(points, key=lambda p: (p.started_at, p.id))
    found = Timeline()
    if not ordered:
        return found
    origin = ordered[0].started_at
    labels = sorted({s[1] for p in ordered for n in p.metrics if (s := split_metric(n))})
    seen: dict[str, list[bool]] = {label: [] for label in labels}
    ends: dict[str, dict[float, float]] = {label: {} for label in labels}
    for point in ordered:
        t = (point.started_at - origin).total_seconds()
        m = point.metrics
        up = metric(m, "up") == 1
        found.times.append(t)
        found.up.append(up)
        found.busy.append((t, metric(m, "workers_busy") if up else None))
        found.available.append((t, metric(m, "workers_available") if up else None))
        if up:
            found.refresh_s.append(metric(m, "refresh_s") or 0.0)
            found.statements.append(int(metric(m, "statements") or 0))
        complete = up and (metric(m, "dead_relations") or 0) <= RECORD_TABLES
        for label in labels:
            value = metric(m, f"{DEAD}|{label}")
            if value is None and complete:
                value = 0.0  # every relation with dead tuples was recorded: this one had none
            found.dead.setdefault(label, []).append((t, value))
            seen[label].append(f"{VACUUM}|{label}" in m)
            end = metric(m, f"{ENDED}|{label}")
            if end is not None:
                ends[label][end] = metric(m, f"{TOOK}|{label}") or 0.0
    epoch = origin.timestamp()
    for label, flags in seen.items():
        done = [Span(end - epoch - took, end - epoch) for end, took in ends[label].items()]
        spans = merged(_runs(flags, found.times) + done)
        if spans:
            found.vacuums[label] = spans
    return found


def merged(spans: Sequence[Span]) -> list[Span]:
    """Overlapping spans as one: a vacuum seen running and then ended is one vacuum."""
    found: list[Span] = []
    for span in sorted(spans, key=lambda s: s.start):
        if found and span.start <= found[-1].end:
            found[-1] = Span(found[-1].start, max(found[-1].end, span.end))
        else:
            found.append(span)
    return found


def _runs(flags: Sequence[bool], times: Sequence[float]) -> list[Span]:
    """Stretches of consecutive true flags, from the first time to the last."""
    spans: list[Span] = []
    start: float | None = None
    for i, flag in enumerate(flags):
        if flag and start is None:
            start = times[i]
        if start is not None and (not flag or i == len(flags) - 1):
            spans.append(Span(start, times[i] if flag else times[i - 1]))
            start = None
    return spans
