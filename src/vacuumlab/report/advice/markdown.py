"""The advice report in Markdown: the view model of `view`, written out.

Every string that came from the database (relation names, evidence, the database and user
names) is escaped before it reaches the Markdown (by `vacuumlab.report.markdown`): a relation
called ``a|b`` cannot split a table row, and one called ``<script>`` is shown, not interpreted.
SQL goes into fenced code blocks whose fence is longer than any run of backticks inside it.
Pure: the same advice always gives the same text.
"""

from __future__ import annotations

from vacuumlab.records.advice import Advice
from vacuumlab.report.advice.view import (
    NOTE_COLUMNS,
    NOTHING_TO_CHANGE,
    RATE_COLUMNS,
    TABLE_COLUMNS,
    TEXT_COLUMNS,
    AdviceView,
    FindingView,
    RecommendationView,
    Section,
    build_view,
)
from vacuumlab.report.markdown import md_code, md_fence, md_paragraph, md_table, md_text


def render_markdown(advice: Advice) -> str:
    """The whole report as Markdown (GitHub-flavoured: it uses tables)."""
    view = build_view(advice)
    blocks = [*_md_header(view), *_md_changes(view)]
    for section in view.sections:
        blocks.extend(_md_section(section))
    blocks.extend(_md_tables(view))
    blocks.extend(_md_notes(view))
    return "\n\n".join(blocks) + "\n"


def _md_header(view: AdviceView) -> list[str]:
    facts = "\n".join(f"- **{label}:** {md_text(value)}" for label, value in view.header)
    return [f"# {md_text(view.title)}", facts]


def _md_changes(view: AdviceView) -> list[str]:
    if not view.recommendations:
        return ["## What to change", NOTHING_TO_CHANGE]
    return ["## What to change", *(_md_change(rec) for rec in view.recommendations)]


def _md_change(rec: RecommendationView) -> str:
    marker = f"{rec.rank}. "
    setting = f"Sets {md_code(rec.setting)} to {md_code(rec.value)} ({rec.scope})"
    lines = [
        f"**{rec.severity.upper()}** · {md_text(rec.relation)}: {md_text(rec.title)}",
        "",
        md_paragraph(rec.reason),
        "",
        *md_fence(rec.sql),
        "",
        f"{setting}; impact {rec.impact}.",
    ]
    if rec.evidence is not None:
        lines += ["", f"Evidence: {md_text(rec.evidence)}"]
    if rec.simulated is not None:
        lines += ["", f"Predicted: {md_text(rec.simulated)}"]
    indent = " " * len(marker)
    return marker + "\n".join(lines[:1] + [indent + line if line else "" for line in lines[1:]])


def _md_section(section: Section) -> list[str]:
    blocks = [f"## {md_text(section.heading)}"]
    for finding in section.findings:
        blocks.extend(_md_finding(finding))
    return blocks


def _md_finding(finding: FindingView) -> list[str]:
    badge = f"[{finding.severity.upper()}]"
    blocks = [
        f"### {md_text(badge)} {md_text(finding.relation)}: {md_text(finding.title)}",
        md_paragraph(finding.detail),
    ]
    if finding.evidence:
        blocks.append(md_table(("evidence", "value"), finding.evidence))
    if finding.ranks:
        numbers = ", ".join(f"#{rank}" for rank in finding.ranks)
        blocks.append(f"To change: {numbers} under “What to change”.")
    return blocks


def _md_tables(view: AdviceView) -> list[str]:
    if not view.tables and not view.quiet:
        return []
    blocks = ["## Where each table stands"]
    if view.tables:
        columns = TABLE_COLUMNS + (RATE_COLUMNS if view.with_rates else ())
        rows = (row.cells(with_rates=view.with_rates) for row in view.tables)
        numbers = [column for column in columns if column not in TEXT_COLUMNS]
        blocks.append(md_table(columns, rows, numbers=numbers))
    if view.quiet:
        blocks.append(view.quiet)
    return blocks


def _md_notes(view: AdviceView) -> list[str]:
    if not view.notes:
        return []
    return ["## Not collected", md_table(NOTE_COLUMNS, view.notes)]
