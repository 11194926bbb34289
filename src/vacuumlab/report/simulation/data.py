"""What a simulation's outputs and its chart all draw: the busiest relations, and the worker use
an hour at a time. Its own module, so the page (``html``) and its chart (``charts``) need not
import each other."""

from __future__ import annotations

from dataclasses import dataclass

from vacuumlab.records.simulation import RelationForecast, Simulation

#: Relations a report lists, busiest first.
LIMIT = 40


@dataclass(frozen=True, slots=True)
class Hour:
    """One hour of the window: how many workers were busy on average, vacuums started."""

    start_s: float
    busy_workers: float
    started: int


def hours(sim: Simulation) -> list[Hour]:
    """The worker-use timeline, an hour at a time (the last hour may be shorter)."""
    buckets = max(1, int(-(-sim.seconds // 3600)))
    busy = [0.0] * buckets
    started = [0] * buckets
    for span in sim.spans:
        started[min(int(span.start_s // 3600), buckets - 1)] += 1
        at, end = span.start_s, min(span.end_s, sim.seconds)
        while at < end:
            bucket = min(int(at // 3600), buckets - 1)
            edge = min(end, (bucket + 1) * 3600.0)
            busy[bucket] += edge - at
            at = edge if edge > at else end
    widths = [min(3600.0, sim.seconds - b * 3600.0) for b in range(buckets)]
    return [
        Hour(b * 3600.0, busy[b] / widths[b] if widths[b] > 0 else 0.0, started[b])
        for b in range(buckets)
    ]


def busiest(sim: Simulation, limit: int = LIMIT) -> list[RelationForecast]:
    """Relations by the peak of dead tuples they reach, then by how often they are vacuumed."""
    return sorted(sim.relations, key=lambda r: (-r.peak_dead, -r.vacuums, r.relation))[:limit]
