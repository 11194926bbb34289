"""The advice for every database of a server in Markdown (``advise --all-databases --format
md``): what holds for the whole server, the databases that could not be read, then each
database's report as :mod:`vacuumlab.report.advice.markdown` writes one, under its own
top-level heading. Every string from the database is escaped (`vacuumlab.report.markdown`).
Pure: the same advice always gives the same text."""

from __future__ import annotations

from vacuumlab.records.advice import Finding
from vacuumlab.records.all_databases import AllDatabasesAdvice
from vacuumlab.report.advice.markdown import render_markdown as render_one
from vacuumlab.report.advice.view import moment, value_text
from vacuumlab.report.common import DASH
from vacuumlab.report.markdown import md_fence, md_paragraph, md_table, md_text

SERVER_WIDE = "The whole server (every database)"


def render_markdown(advice: AllDatabasesAdvice) -> str:
    blocks = ["# Vacuum advice for every database", _facts(advice)]
    if advice.findings:
        blocks.append(f"## {SERVER_WIDE}")
        for finding in advice.findings:
            blocks.extend(_finding(finding))
    if advice.notes:
        rows = [(note.reason, note.fix or DASH) for note in advice.notes]
        blocks += ["## Databases not read", md_table(("not read because", "fix"), rows)]
    head = "\n\n".join(blocks) + "\n"
    return "\n".join([head, *(render_one(one) for one in advice.databases)])


def _facts(advice: AllDatabasesAdvice) -> str:
    names = ", ".join(one.server.database for one in advice.databases) or DASH
    facts = [("databases read", names), ("visited from", moment(advice.taken_at))]
    if advice.databases:
        facts.insert(0, ("server", advice.databases[0].server.version.split(" on ")[0]))
    facts.append(("vacuumlab", advice.vacuumlab_version))
    return "\n".join(f"- **{label}:** {md_text(value)}" for label, value in facts)


def _finding(finding: Finding) -> list[str]:
    badge = f"[{finding.severity.upper()}]"
    title = f"### {md_text(badge)} server: {md_text(finding.title)}"
    blocks = [title, md_paragraph(finding.detail)]
    if finding.evidence:
        rows = [(key, value_text(value)) for key, value in finding.evidence.items()]
        blocks.append(md_table(("evidence", "value"), rows))
    for rec in finding.recommendations:
        blocks += [md_paragraph(rec.reason), "\n".join(md_fence(rec.sql.strip("\n")))]
        if rec.simulated is not None:  # as one database's report shows it (report.advice.markdown)
            blocks.append(f"Predicted: {md_text(rec.simulated)}")
    return blocks
