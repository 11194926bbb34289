"""The simulation's chart draws what a reader looks for when vacuums take milliseconds in an
hour: the dead tuples of the busiest relations, climbing and brought down by each vacuum."""

from __future__ import annotations

import itertools

from matplotlib.collections import PathCollection

from helpers.advise import changed, relation, snapshot
from vacuumlab.model.forecast import forecast
from vacuumlab.records.simulation import Simulation
from vacuumlab.records.snapshot import Table
from vacuumlab.report.simulation.charts import (
    BUCKETS,
    DRAWN,
    dead_series,
    timeline_figure,
    timeline_svg,
)
from vacuumlab.report.simulation.data import busiest

#: (dead tuples in the minute between the snapshots, live rows) of small, busy tables.
TABLES = ((6000, 1000), (3000, 5000), (1500, 2000), (800, 20000), (400, 3000), (100, 1000),
          (50, 500))  # fmt: skip


def small_tables(hours: float = 1) -> Simulation:
    before, after = [], []
    for i, (dead, live) in enumerate(TABLES):
        rel = relation(100 + i, f"t{i}", reltuples=float(live), relpages=max(1, live // 50),
                       n_live_tup=live)  # fmt: skip
        before.append(Table(heap=rel, toast=None))
        after.append(Table(heap=changed(rel, n_dead_tup=dead, n_tup_del=dead), toast=None))
    return forecast(snapshot(*before), snapshot(*after, seconds=60), hours=hours)


def test_the_vacuums_take_milliseconds_in_the_hour() -> None:
    """The case the chart is for: a bar per vacuum would be thinner than a pixel."""
    sim = small_tables()
    assert sim.hours == 1
    assert all(s.end_s - s.start_s < 0.1 for s in sim.spans)
    assert sum(r.vacuums for r in sim.relations) > 100


def test_the_chart_draws_the_dead_tuples_of_the_busiest_relations_and_their_vacuums() -> None:
    sim = small_tables()
    top = timeline_figure(sim).axes[0]
    drawn = busiest(sim, DRAWN)
    lines = top.get_lines()
    assert len(lines) == DRAWN == len(drawn)
    marks = [c for c in top.collections if isinstance(c, PathCollection)]
    assert sum(len(c.get_offsets()) for c in marks) == sum(r.vacuums for r in drawn)
    for line, r in zip(lines, drawn, strict=True):
        ys = list(line.get_ydata())
        assert ys[0] == r.dead_at_start
        assert round(max(ys)) == r.peak_dead  # the simulator's peak, before a vacuum ends
        drops = sum(1 for a, b in itertools.pairwise(ys) if b < a)
        assert drops == r.vacuums  # each vacuum brings the line down
        assert line.get_xdata()[-1] == sim.hours
    svg = timeline_svg(sim)
    assert svg.count("<use ") >= sum(r.vacuums for r in drawn)  # a marker per vacuum
    assert "t0" not in svg  # no relation name reaches the SVG


def test_a_day_of_busy_tables_stays_small() -> None:
    """Thousands of vacuums are drawn as the range of each bucket, not corner by corner, and
    the peaks survive."""
    sim = small_tables(hours=24)
    top = timeline_figure(sim).axes[0]
    drawn = busiest(sim, DRAWN)
    assert drawn[0].vacuums > BUCKETS
    for line, r in zip(top.get_lines(), drawn, strict=True):
        assert len(line.get_ydata()) <= 2 * BUCKETS + 2
        assert round(max(line.get_ydata())) == r.peak_dead
    marks = [c for c in top.collections if isinstance(c, PathCollection)]
    assert all(len(c.get_offsets()) <= BUCKETS for c in marks)
    corners, vacuums = dead_series(drawn[0], [s for s in sim.spans if s.relation ==
                                              drawn[0].relation], sim.seconds)  # fmt: skip
    assert len(vacuums) == drawn[0].vacuums
    assert len(corners) == 2 + 2 * len(vacuums)
