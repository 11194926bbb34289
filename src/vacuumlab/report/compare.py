"""``vacuumlab compare``: runs of one study with the same parameters, measured on different
targets (server version, machine, executor, build), side by side.

Each metric is compared point by point: the same point (parameters and repetition averaged)
in the first run and in another, tested with the paired t-test (``stats.significance``), so a
difference counts as real only when it is larger than the way it scatters over the points.
Pure: runs and points in, a :class:`Comparison` out, rendered as Markdown, JSON or HTML.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from vacuumlab.errors import VacuumlabError
from vacuumlab.report.common import DASH, environment, format_seconds, machine_rows
from vacuumlab.report.page import executor_text, write
from vacuumlab.stats.significance import ALPHA, p_text, paired
from vacuumlab.store import Point, Run

#: Parameters that say where a run ran, not what it measured: they may differ.
TARGET_PARAMS = frozenset({"target"})
#: How many differing server settings the comparison names before it counts the rest.
SETTINGS_SHOWN = 12


@dataclass(frozen=True, slots=True)
class Side:
    """One run of the comparison: where it comes from and what it recorded."""

    label: str  # "3" or "other.sqlite:3"
    run: Run
    points: Sequence[Point]


@dataclass(frozen=True, slots=True)
class Difference:
    """What differs between the runs, as each run has it."""

    what: str
    values: list[str]


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One metric: its mean over the shared points in each run and, for each run after the
    first, the change against the first and the paired test's verdict."""

    metric: str
    means: list[float | None]
    changes: list[float | None]  # relative to the first run; None for the first
    verdicts: list[str]
    p_values: list[float | None]
    real: list[bool]


@dataclass(frozen=True, slots=True)
class Comparison:
    study: str
    runs: list[str]
    servers: list[str]
    differences: list[Difference]
    params: dict[str, Any]
    shared_points: int
    rows: list[MetricRow]


def compare(sides: Sequence[Side]) -> Comparison:
    """The runs side by side, or a one-line error saying why they cannot be compared."""
    if len(sides) < 2:
        raise VacuumlabError("compare needs two runs or more")
    first = sides[0]
    for side in sides[1:]:
        _comparable(first, side)
    means = [_point_means(s.points) for s in sides]
    shared = sorted(set.intersection(*(set(m) for m in means)))
    if len(shared) < 1:
        raise VacuumlabError(
            f"runs {first.label} and {sides[1].label} share no measured point to compare"
        )
    names = sorted(set.intersection(*(_numeric(m, shared) for m in means)))
    rows = [_row(name, [[m[k].get(name) for k in shared] for m in means]) for name in names]
    params = {k: v for k, v in first.run.params.items() if k not in TARGET_PARAMS}
    return Comparison(
        study=first.run.study,
        runs=[s.label for s in sides],
        servers=[s.run.server_version for s in sides],
        differences=differences(sides),
        params=params,
        shared_points=len(shared),
        rows=rows,
    )


def _comparable(a: Side, b: Side) -> None:
    if a.run.study != b.run.study:
        raise VacuumlabError(
            f"run {a.label} is a {a.run.study} run and run {b.label} a {b.run.study} run: "
            "compare runs of one study"
        )
    keys = (set(a.run.params) | set(b.run.params)) - TARGET_PARAMS
    differ = sorted(k for k in keys if a.run.params.get(k) != b.run.params.get(k))
    if differ:
        k = differ[0]
        raise VacuumlabError(
            f"runs {a.label} and {b.label} differ in {', '.join(differ)} "
            f"({k}: {a.run.params.get(k)!r} against {b.run.params.get(k)!r}); only the target "
            "may differ (server, machine, executor, build)"
        )


def _point_means(points: Sequence[Point]) -> dict[str, dict[str, float]]:
    """Each point's numeric metrics, averaged over its repetitions, by its key."""
    grouped: dict[str, dict[str, list[float]]] = {}
    for p in points:
        metrics = grouped.setdefault(p.key, {})
        for name, value in p.metrics.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                metrics.setdefault(name, []).append(float(value))
    return {key: {n: fmean(v) for n, v in m.items()} for key, m in grouped.items()}


def _numeric(means: Mapping[str, Mapping[str, float]], keys: Sequence[str]) -> set[str]:
    return {name for key in keys for name in means[key]}


def _row(name: str, columns: Sequence[Sequence[float | None]]) -> MetricRow:
    """The metric's columns (one per run, one value per shared point) compared to the first."""
    base = columns[0]
    means = [_mean(c) for c in columns]
    changes: list[float | None] = [None]
    p_values: list[float | None] = [None]
    verdicts, real = ["baseline"], [False]
    for other, mean in zip(columns[1:], means[1:], strict=True):
        test = paired(other, base)
        change = None if mean is None or not means[0] else (mean - means[0]) / abs(means[0])
        changes.append(change)
        verdicts.append(test.text)
        p_values.append(test.p_value)
        real.append(test.verdict == "significant")
    return MetricRow(name, means, changes, verdicts, p_values, real)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def differences(sides: Sequence[Side]) -> list[Difference]:
    """What differs between the runs' targets: server, machine, executor, build, settings."""
    found: list[Difference] = []

    def add(what: str, values: list[str]) -> None:
        if len(set(values)) > 1:
            found.append(Difference(what, values))

    add("server", [s.run.server_version for s in sides])
    add("executor", [executor_text(s.run) for s in sides])
    add("vacuumlab", [s.run.vacuumlab_version for s in sides])
    machines = [dict(machine_rows(s.run.machine)) for s in sides]
    for label in machines[0]:
        add(f"machine: {label}", [m.get(label, DASH) for m in machines])
    add("target", [str(s.run.params.get("target", DASH)) for s in sides])
    names = sorted(set().union(*(s.run.settings for s in sides)))
    differing = [n for n in names if len({s.run.settings.get(n) for s in sides}) > 1]
    if differing:
        shown = ", ".join(differing[:SETTINGS_SHOWN])
        more = len(differing) - SETTINGS_SHOWN
        found.append(
            Difference(
                "server settings",
                [f"{len(differing)} differ: {shown}{f' and {more} more' if more > 0 else ''}"],
            )
        )
    return found


# -- rendering -------------------------------------------------------------------------------


def _number(value: float | None) -> str:
    return DASH if value is None else format_seconds(value)


def _change(value: float | None) -> str:
    return DASH if value is None else f"{value:+.1%}"


def verdict_line(c: Comparison) -> str:
    """Which differences are real, in one sentence."""
    real = [r.metric for r in c.rows if any(r.real)]
    if not real:
        return "No metric differs by more than its noise."
    return f"{len(real)} of {len(c.rows)} metrics differ by more than their noise: " + ", ".join(
        real
    )


def to_json(c: Comparison) -> str:
    return json.dumps(
        {
            "study": c.study,
            "runs": c.runs,
            "servers": c.servers,
            "differences": [{"what": d.what, "values": d.values} for d in c.differences],
            "params": c.params,
            "shared_points": c.shared_points,
            "alpha": ALPHA,
            "metrics": [
                {
                    "metric": r.metric,
                    "means": r.means,
                    "changes": r.changes,
                    "verdicts": r.verdicts,
                    "p_values": r.p_values,
                    "real": r.real,
                }
                for r in c.rows
            ],
        },
        indent=2,
    )


def to_markdown(c: Comparison) -> str:
    runs = " · ".join(c.runs)
    lines = [
        f"# {c.study}: runs {runs} side by side",
        "",
        f"{c.shared_points} points measured in every run, each metric compared point by point "
        f"with the first run (paired t-test at {ALPHA:.0%}; with many metrics, about one in "
        "twenty can show as real by chance).",
        "",
        verdict_line(c),
        "",
        "## What differs",
        "",
        "| | " + " | ".join(f"run {r}" for r in c.runs) + " |",
        "|---|" + "---|" * len(c.runs),
    ]
    for d in c.differences:
        blank = [""] * (len(c.runs) - 1)
        values = d.values if len(d.values) == len(c.runs) else [d.values[0], *blank]
        lines.append(f"| {d.what} | " + " | ".join(values) + " |")
    if not c.differences:
        lines.append("| nothing recorded | " + " | ".join("" for _ in c.runs) + " |")
    lines += ["", "## Metrics", ""]
    head = ["metric", f"run {c.runs[0]}"]
    for r in c.runs[1:]:
        head += [f"run {r}", "change", "p", "verdict"]
    lines += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for row in c.rows:
        cells = [row.metric, _number(row.means[0])]
        for i in range(1, len(c.runs)):
            cells += [
                _number(row.means[i]),
                _change(row.changes[i]),
                p_text(row.p_values[i]),
                ("**real**: " if row.real[i] else "") + row.verdicts[i],
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _others(r: MetricRow, runs: int) -> list[tuple[str, str, str, str, bool]]:
    """A metric's cells for each run after the first: mean, change, p, verdict, real."""
    return [
        (_number(r.means[i]), _change(r.changes[i]), p_text(r.p_values[i]), r.verdicts[i],
         r.real[i])
        for i in range(1, runs)
    ]  # fmt: skip


def to_html(c: Comparison, path: Path) -> Path:
    """The comparison as one self-contained page (the run pages' style), written to ``path``."""
    view = {
        "c": c,
        "verdict": verdict_line(c),
        "alpha": f"{ALPHA:.0%}",
        "rows": [(r.metric, _number(r.means[0]), _others(r, len(c.runs))) for r in c.rows],
    }
    write(path, environment().get_template("compare.html.j2").render(**view))
    return path
