"""The advice report in Markdown: the view model of `advice_view`, written out.

Every string that came from the database (relation names, evidence, the database and user
names) is escaped before it reaches the Markdown: a relation called ``a|b`` cannot split a
table row, and one called ``<script>`` is shown, not interpreted. SQL goes into fenced code
blocks whose fence is longer than any run of backticks inside it. Pure: the same advice always
gives the same text.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from vacuumlab.records.advice import Advice
from vacuumlab.report.advice_view import (
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
    number,
    percent,
    seconds,
)

#: Also importable from here, as before the view model had a module of its own.
__all__ = [
    "NOTHING_TO_CHANGE",
    "md_code",
    "md_fence",
    "md_paragraph",
    "md_table",
    "md_text",
    "number",
    "percent",
    "render_markdown",
    "seconds",
]


# -- Markdown -------------------------------------------------------------------------------

# Always escaped: characters that start inline markup, entities, raw HTML or a table cell.
# An underscore between two letters or digits cannot open or close emphasis, so it is left.
_INLINE = re.compile(r"[\\`*\[\]<>&|~#]|(?<![^\W_])_|_(?![^\W_])")
# At the start of a paragraph: what would turn it into a list, a heading rule or a quote.
_BLOCK_START = re.compile(r"^(\d+)([.)])|^([-+=])")


def md_text(value: str) -> str:
    """Database text as inline Markdown: on one line, with nothing interpreted."""
    flat = " ".join(value.splitlines())
    if _INLINE.search(flat) is None:  # most cells: a number, a plain name
        return flat
    return _INLINE.sub(lambda m: "\\" + m.group(0), flat)


def md_paragraph(value: str) -> str:
    """Like :func:`md_text`, also safe at the start of a line."""
    return _BLOCK_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", md_text(value))


def md_code(value: str) -> str:
    """An inline code span (not for table cells), fenced past any backticks inside."""
    flat = " ".join(value.splitlines()) or " "
    fence = "`" * (_longest_run(flat, "`") + 1)
    pad = " " if flat[0] in "` " or flat[-1] in "` " else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def md_fence(code: str, info: str = "sql") -> list[str]:
    """A fenced code block, as lines."""
    fence = "`" * max(3, _longest_run(code, "`") + 1)
    return [f"{fence}{info}", *code.splitlines(), fence]


def md_table(
    columns: Sequence[str], rows: Iterable[Sequence[str]], *, numbers: Collection[str] = ()
) -> str:
    """A GFM table; the columns named in `numbers` are right-aligned."""
    rule = " | ".join("---:" if column in numbers else "---" for column in columns)
    lines = [_md_row(columns), f"| {rule} |"]
    lines.extend(_md_row(row) for row in rows)
    return "\n".join(lines)


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(md_text(cell) for cell in cells) + " |"


def _longest_run(text: str, char: str) -> int:
    return max((len(run) for run in re.findall(f"{re.escape(char)}+", text)), default=0)


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
    if not view.tables:
        return []
    columns = TABLE_COLUMNS + (RATE_COLUMNS if view.with_rates else ())
    rows = (row.cells(with_rates=view.with_rates) for row in view.tables)
    numbers = [column for column in columns if column not in TEXT_COLUMNS]
    return ["## Where each table stands", md_table(columns, rows, numbers=numbers)]


def _md_notes(view: AdviceView) -> list[str]:
    if not view.notes:
        return []
    return ["## Not collected", md_table(NOTE_COLUMNS, view.notes)]
