"""The watch report's sections: what was watched and how the refreshes went, the timelines
chart and one row per relation, the most dead tuples first. Plain strings, escaped by the
template."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vacuumlab.report.common import DASH
from vacuumlab.report.page import Chart, Header, chart, header, overview, param_rows, status_notice
from vacuumlab.report.watch import charts
from vacuumlab.report.watch.timeline import Timeline, timeline
from vacuumlab.store import Point, Run, Store
from vacuumlab.units import count, duration

ABOUT = (
    "What `vacuumlab watch --record` saw, one point per refresh: each relation's dead tuples, "
    "the vacuums under way and the workers busy."
)
PARAM_LABELS = (
    ("target", "server"),
    ("database", "database"),
    ("refresh_s", "seconds between refreshes"),
)
#: Relations the chart draws, the most dead tuples first; the table lists them all.
CHART_TABLES = 8


@dataclass(frozen=True, slots=True)
class RelationRow:
    label: str
    peak: str
    last: str
    vacuums: str
    vacuumed_for: str
    charted: bool


@dataclass(frozen=True, slots=True)
class Report:
    header: Header
    summary: list[tuple[str, str]]
    chart: Chart
    relations: list[RelationRow]


def build_report(store: Store, run: Run, points: Sequence[Point], out_dir: Path) -> Report:
    line = timeline(points)
    ranked = sorted(line.dead, key=lambda label: (-line.peak(label), label))
    ranked = [label for label in ranked if line.peak(label) > 0 or label in line.vacuums]
    drawn = ranked[:CHART_TABLES]
    fig = charts.timelines(line, drawn)
    place = ("Timelines", "timelines.png")
    caption = (
        f"Dead tuples of the {len(drawn)} relations with the most, each shaded in its colour "
        "from the first refresh that saw it being vacuumed to the last; below, the autovacuum "
        "workers busy against those available. Grey: refreshes that could not read the server."
    )
    head = header(
        run,
        None,
        status_notice(run.status, "refreshes"),
        overview(run, ("refreshes recorded", f"{len(points):,}")),
        param_rows(run.params, PARAM_LABELS),
        about=ABOUT,
    )
    return Report(
        header=head,
        summary=_summary(line),
        chart=chart("timelines", fig, place, caption, out_dir),
        relations=[_row(line, label, label in drawn) for label in ranked],
    )


def _summary(line: Timeline) -> list[tuple[str, str]]:
    span = line.times[-1] - line.times[0] if line.times else 0.0
    lost = sum(1 for up in line.up if not up)
    statements = sorted(set(line.statements))
    return [
        ("period watched", duration(span)),
        ("refreshes", f"{len(line.times):,}, {lost:,} could not read the server"),
        (
            "refresh time, median (max)",
            DASH
            if not line.refresh_s
            else f"{statistics.median(line.refresh_s):.3f} s ({max(line.refresh_s):.3f} s)",
        ),
        ("statements per refresh", ", ".join(map(str, statements)) or DASH),
        ("relations seen being vacuumed", f"{len(line.vacuums):,}"),
        ("workers busy, most", _most(line)),
    ]


def _most(line: Timeline) -> str:
    busy = [v for _, v in line.busy if v is not None]
    available = [v for _, v in line.available if v is not None]
    if not busy:
        return DASH
    return f"{max(busy):.0f} of {max(available):.0f}" if available else f"{max(busy):.0f}"


def _row(line: Timeline, label: str, charted: bool) -> RelationRow:
    known = [v for _, v in line.dead[label] if v is not None]
    spans = line.vacuums.get(label, [])
    return RelationRow(
        label=label,
        peak=count(line.peak(label)),
        last=count(known[-1]) if known else DASH,
        vacuums=f"{len(spans):,}",
        vacuumed_for=duration(sum(s.end - s.start for s in spans)) if spans else DASH,
        charted=charted,
    )
