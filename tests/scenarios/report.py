"""The suite's precision/recall table, in Markdown, from the scenarios' outcomes."""

from __future__ import annotations

from collections.abc import Sequence

from scenarios.expect import Outcome


def precision(outcomes: Sequence[Outcome]) -> float | None:
    """Ranked findings that match an expectation, over all ranked findings."""
    ranked = sum(o.ranked for o in outcomes)
    return None if ranked == 0 else sum(o.ranked_expected for o in outcomes) / ranked


def recall(outcomes: Sequence[Outcome]) -> float | None:
    """Must-haves found, over all must-haves (those excused by an xfail included)."""
    total = sum(len(o.found) + len(o.missing) + len(o.excused) for o in outcomes)
    return None if total == 0 else sum(len(o.found) for o in outcomes) / total


def markdown(outcomes: Sequence[Outcome]) -> str:
    lines = [
        "# The advisor's scenario suite",
        "",
        "| scenario | must-haves found | false positives (warning+) | top three right "
        "| ranked findings | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        total = len(o.found) + len(o.missing) + len(o.excused)
        lines.append(
            f"| {o.scenario} | {len(o.found)}/{total} | {len(o.false_positives)} "
            f"| {'yes' if o.top_right else 'no'} | {o.ranked} | {o.seconds:.0f} |"
        )
    lines += [
        "",
        f"Precision: {_share(precision(outcomes))} (ranked findings that match an "
        "expectation / all ranked findings)",
        f"Recall: {_share(recall(outcomes))} (must-haves found / must-haves)",
        f"Top three right: {sum(o.top_right for o in outcomes)} of {len(outcomes)} scenarios",
    ]
    notes = [line for o in outcomes for line in _notes(o)]
    lines += ["", "## Not as expected", "", *notes] if notes else []
    lines += ["", "## What the advisor said", ""]
    for o in outcomes:
        lines += [f"### {o.scenario}", "", "Ranked findings:", ""]
        lines += [f"- {f}" for f in o.ranked_findings] or ["- none"]
        lines += ["", "Top three recommendations:", ""]
        lines += [f"{n}. `{r}`" for n, r in enumerate(o.top_three, start=1)] or ["- none"]
        lines.append("")
    return "\n".join(lines)


def _notes(o: Outcome) -> list[str]:
    found = [f"- {o.scenario}: missing {m}" for m in o.missing]
    found += [f"- {o.scenario}: missing, expected (xfail) {m}" for m in o.excused]
    found += [f"- {o.scenario}: false positive {fp}" for fp in o.false_positives]
    found += [f"- {o.scenario}: top three {p}" for p in o.top_problems]
    return found


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"
