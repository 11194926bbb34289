"""``vacuumlab compare``: runs of one study with the same parameters, measured on different
targets (server version, machine, executor, build), side by side.

Each metric is compared point by point: the same point (parameters and repetition averaged)
in the first run and in another, tested with the paired t-test (``stats.significance``), so a
difference counts as real only when it is larger than the way it scatters over the points.
A comparison tests some forty metrics at once, so its p-values are adjusted together
(Benjamini–Hochberg) before any is called real: unadjusted, two identical runs would show
about two "real" differences by chance.

When the runs' PostgreSQL majors differ, the comparison lists what changed between them
(``model.versions``) that can move the study's figures.

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
from vacuumlab.model.versions import Change, changes_between, major_of
from vacuumlab.report.common import DASH, environment, format_seconds, machine_rows
from vacuumlab.report.markdown import md_text
from vacuumlab.report.page import executor_text, write
from vacuumlab.stats.significance import ALPHA, beyond_drift, bh_adjusted, p_text, paired
from vacuumlab.stats.significance import Comparison as Test
from vacuumlab.store import Point, Run

#: Parameters that say where a run ran, not what it measured: they may differ.
TARGET_PARAMS = frozenset({"target"})
#: How many differing server settings the comparison names before it counts the rest.
SETTINGS_SHOWN = 12

#: The level the adjusted p-values are held to, as the reports write it ("5 %").
ALPHA_TEXT = f"{ALPHA * 100:g} %"
REAL = f"significant at {ALPHA_TEXT} after adjustment"
DEMOTED = f"within noise after adjustment (raw p below {ALPHA_TEXT})"
DRIFT = "within the runs' drift: their repetitions differ among themselves as much"


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
    first, the change against the first, the paired test's p-value, that p-value adjusted
    across the comparison's metrics, and the verdict the adjusted one gives."""

    metric: str
    means: list[float | None]
    changes: list[float | None]  # relative to the first run; None for the first
    verdicts: list[str]
    p_values: list[float | None]  # the paired test's own
    p_adjusted: list[float | None]  # Benjamini–Hochberg, across the comparison's metrics
    real: list[bool]  # adjusted p below ALPHA, or the same shift at every point


@dataclass(frozen=True, slots=True)
class VersionChanges:
    """What changed between the first run's PostgreSQL major and another run's, as far as
    it can move the study's figures."""

    runs: tuple[str, str]  # the first run, the other
    majors: tuple[int, int]  # their majors, in the same order
    changes: list[Change]

    @property
    def title(self) -> str:
        low, high = sorted(self.majors)
        return f"What changed between PostgreSQL {low} and {high}"


@dataclass(frozen=True, slots=True)
class Comparison:
    study: str
    runs: list[str]
    servers: list[str]
    differences: list[Difference]
    params: dict[str, Any]
    shared_points: int
    rows: list[MetricRow]
    #: How many metrics had a p-value, and so were adjusted together, in each run's
    #: comparison with the first (0 for the first).
    tested: list[int]
    version_changes: list[VersionChanges]
    #: Whether every run has two repetitions or more, so that its drift was measured.
    drift_measured: bool = True


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
    columns = {name: [[m[k].get(name) for k in shared] for m in means] for name in names}
    drifts = [_repetition_means(s.points, set(shared)) for s in sides]
    rows, tested = _rows(columns, len(sides), drifts)
    params = {k: v for k, v in first.run.params.items() if k not in TARGET_PARAMS}
    return Comparison(
        study=first.run.study,
        runs=[s.label for s in sides],
        servers=[s.run.server_version for s in sides],
        differences=differences(sides),
        params=params,
        shared_points=len(shared),
        rows=rows,
        tested=tested,
        version_changes=version_changes(sides),
        drift_measured=all(len({p.repetition for p in s.points}) > 1 for s in sides),
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


def _repetition_means(points: Sequence[Point], keys: set[str]) -> dict[str, list[float]]:
    """Each metric's mean over the shared points, one value per repetition. A run measures
    its repetitions one after another, so these show how far the machine moved during it: a
    difference between runs that is no larger is the machine's, not the targets'."""
    by_repetition: dict[int, dict[str, list[float]]] = {}
    for p in points:
        if p.key not in keys:
            continue
        metrics = by_repetition.setdefault(p.repetition, {})
        for name, value in p.metrics.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                metrics.setdefault(name, []).append(float(value))
    names = {name for metrics in by_repetition.values() for name in metrics}
    return {
        name: [fmean(m[name]) for _, m in sorted(by_repetition.items()) if name in m]
        for name in names
    }


def _numeric(means: Mapping[str, Mapping[str, float]], keys: Sequence[str]) -> set[str]:
    return {name for key in keys for name in means[key]}


def _rows(
    columns: Mapping[str, Sequence[Sequence[float | None]]],
    runs: int,
    drifts: Sequence[Mapping[str, Sequence[float]]],
) -> tuple[list[MetricRow], list[int]]:
    """Each metric's row, and how many metrics each comparison tested. The later runs are
    each tested against the first, metric by metric; then the p-values of one comparison
    (one later run, every metric) are adjusted together. A difference is real only where it
    also exceeds the runs' drift (:func:`beyond_drift`)."""
    names = list(columns)
    tests = {n: [paired(other, columns[n][0]) for other in columns[n][1:]] for n in names}
    adjusted = [bh_adjusted([tests[n][j].p_value for n in names]) for j in range(runs - 1)]
    beyond = {
        n: [beyond_drift(d.get(n, []), drifts[0].get(n, [])) for d in drifts[1:]] for n in names
    }
    rows = [
        _row(name, columns[name], tests[name], [a[i] for a in adjusted], beyond[name])
        for i, name in enumerate(names)
    ]
    return rows, [0, *(sum(q is not None for q in a) for a in adjusted)]


def _row(
    name: str,
    columns: Sequence[Sequence[float | None]],
    tests: Sequence[Test],
    adjusted: Sequence[float | None],
    beyond: Sequence[bool | None],
) -> MetricRow:
    """The metric's columns (one per run, one value per shared point) compared to the first:
    ``tests`` are the paired tests of each later column, ``adjusted`` their p-values adjusted
    across the comparison's metrics."""
    means = [_mean(c) for c in columns]
    changes: list[float | None] = [None]
    verdicts, real = ["baseline"], [False]
    for test, q, mean, past in zip(tests, adjusted, means[1:], beyond, strict=True):
        changes.append(None if mean is None or not means[0] else (mean - means[0]) / abs(means[0]))
        text, is_real = _verdict(test, q)
        if is_real and past is False:
            text, is_real = DRIFT, False
        verdicts.append(text)
        real.append(is_real)
    p_values = [None, *(t.p_value for t in tests)]
    return MetricRow(name, means, changes, verdicts, p_values, [None, *adjusted], real)


def _verdict(test: Test, adjusted: float | None) -> tuple[str, bool]:
    """The verdict on one metric of one comparison, and whether it is real: by the adjusted
    p-value where the test gave one; without a p-value (identical at every point, the same
    shift at every point, not testable), by the test's own verdict."""
    if test.p_value is None or adjusted is None:
        return test.text, test.verdict == "significant"
    if adjusted < ALPHA:
        return REAL, True
    return (DEMOTED if test.verdict == "significant" else test.text), False


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return fmean(present) if present else None


def server_name(version: str) -> str:
    """A recorded server version, short: "PostgreSQL 18.6" without the build details."""
    short = version.split(" on ")[0].strip()
    return short if short.startswith("PostgreSQL") else f"PostgreSQL {short}"


def version_changes(sides: Sequence[Side]) -> list[VersionChanges]:
    """For each run whose major differs from the first run's, what changed between the two
    that can move the study's figures; one entry per pair of majors."""
    first = sides[0]
    base = major_of(first.run.server_version)
    found: dict[tuple[int, int], VersionChanges] = {}
    for side in sides[1:]:
        other = major_of(side.run.server_version)
        if base is None or other is None or other == base or (base, other) in found:
            continue
        changes = changes_between(base, other, study=first.run.study)
        found[base, other] = VersionChanges((first.label, side.label), (base, other), changes)
    return list(found.values())


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


def change_text(change: Change) -> str:
    """A change as the comparison lists it: its major, then what it does."""
    return f"{change.since}: {change.what}"


def adjustment_text(c: Comparison) -> str:
    """How the p-values were adjusted, in one sentence, with how many metrics each
    comparison adjusted together, and how the runs' drift was held against them."""
    counts = c.tested[1:]
    drift = (
        " A difference must also be larger than the runs' drift: their repetitions' means must "
        "differ between the runs more than within each (Welch's t-test), since a machine that "
        "slows down between two runs shifts every point alike."
        if c.drift_measured
        else " A run with one repetition has no measure of its drift over time, so here the "
        "points alone decide."
    )
    if not any(counts):
        return (
            "No metric has a p-value here (each is identical, shifted alike or untestable)." + drift
        )
    if len(set(counts)) == 1:
        across = f"across the {counts[0]} metrics tested in this comparison"
    else:
        across = (
            "across the metrics tested in each comparison ("
            + ", ".join(f"{n} with run {r}" for n, r in zip(counts, c.runs[1:], strict=True))
            + ")"
        )
    return (
        f"The p-values are adjusted {across} (Benjamini–Hochberg), and a metric is real when "
        f"its adjusted p is below {ALPHA_TEXT}: among the metrics called real, at most about "
        f"{ALPHA_TEXT} are expected to be chance." + drift
    )


def servers_text(c: Comparison) -> str:
    """The runs' servers side by side."""
    return " · ".join(f"run {r}: {server_name(v)}" for r, v in zip(c.runs, c.servers, strict=True))


def versions_intro(v: VersionChanges) -> str:
    """The sentence before a version section's list."""
    (first, other), (a, b) = v.runs, v.majors
    where = f"Run {first} ran on PostgreSQL {a}, run {other} on PostgreSQL {b}."
    if not v.changes:
        return f"{where} No change vacuumlab tracks between them bears on this study's figures."
    return (
        f"{where} What changed in between that can move this study's figures, by the major "
        "that brought it:"
    )


def verdict_line(c: Comparison) -> str:
    """Which differences are real, in one sentence."""
    real = [r.metric for r in c.rows if any(r.real)]
    if not real:
        return "No metric differs by more than its noise (p-values adjusted)."
    return (
        f"{len(real)} of {len(c.rows)} metrics differ by more than their noise "
        "(p-values adjusted): " + ", ".join(real)
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
            "adjustment": "benjamini-hochberg",
            "tested": c.tested,
            "drift_measured": c.drift_measured,
            "version_changes": [
                {
                    "runs": list(v.runs),
                    "majors": list(v.majors),
                    "title": v.title,
                    "changes": [{"since": x.since, "what": x.what} for x in v.changes],
                }
                for v in c.version_changes
            ],
            "metrics": [
                {
                    "metric": r.metric,
                    "means": r.means,
                    "changes": r.changes,
                    "verdicts": r.verdicts,
                    "p_values": r.p_values,
                    "p_adjusted": r.p_adjusted,
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
        md_text(servers_text(c)),
        "",
        f"{c.shared_points} points measured in every run, each metric compared point by point "
        f"with the first run (paired t-test). {adjustment_text(c)}",
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
    for v in c.version_changes:
        lines += ["", f"## {v.title}", "", versions_intro(v)]
        if v.changes:
            lines += ["", *(f"- {change_text(x)}" for x in v.changes)]
    lines += ["", "## Metrics", ""]
    head = ["metric", f"run {c.runs[0]}"]
    for r in c.runs[1:]:
        head += [f"run {r}", "change", "p", "adjusted p", "verdict"]
    lines += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for row in c.rows:
        cells = [row.metric, _number(row.means[0])]
        for i in range(1, len(c.runs)):
            cells += [
                _number(row.means[i]),
                _change(row.changes[i]),
                p_text(row.p_values[i]),
                p_text(row.p_adjusted[i]),
                ("**real**: " if row.real[i] else "") + row.verdicts[i],
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _others(r: MetricRow, runs: int) -> list[tuple[str, str, str, str, str, bool]]:
    """A metric's cells for each run after the first: mean, change, p, adjusted p, verdict,
    real."""
    return [
        (_number(r.means[i]), _change(r.changes[i]), p_text(r.p_values[i]),
         p_text(r.p_adjusted[i]), r.verdicts[i], r.real[i])
        for i in range(1, runs)
    ]  # fmt: skip


def to_html(c: Comparison, path: Path) -> Path:
    """The comparison as one self-contained page (the run pages' style), written to ``path``."""
    view = {
        "c": c,
        "verdict": verdict_line(c),
        "servers": servers_text(c),
        "adjustment": adjustment_text(c),
        "versions": [
            (v.title, versions_intro(v), [change_text(x) for x in v.changes])
            for v in c.version_changes
        ],
        "rows": [(r.metric, _number(r.means[0]), _others(r, len(c.runs))) for r in c.rows],
    }
    write(path, environment().get_template("compare.html.j2").render(**view))
    return path
