"""The advice report in Markdown, and the view model the HTML report shares with it.

`build_view` turns an :class:`~vacuumlab.records.advice.Advice` into plain, formatted strings in
display order: recommendations ranked by impact, one section per question (in ``QUESTIONS``
order, only those with findings), where each table stands, and what was not collected.
`render_markdown` writes that view out. Pure: the same advice always gives the same text.

Every string that came from the database (relation names, evidence, the database and user
names) is escaped before it reaches the Markdown: a relation called ``a|b`` cannot split a
table row, and one called ``<script>`` is shown, not interpreted. SQL goes into fenced code
blocks whose fence is longer than any run of backticks inside it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from vacuumlab.records.advice import QUESTIONS, Advice, Finding, Recommendation, TableStatus, Value
from vacuumlab.report.common import DASH, when

NOTHING_TO_CHANGE = "Nothing to change: no finding calls for a change."
SERVER_WIDE = "server"
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
TABLE_COLUMNS = (
    "relation",
    "autovacuum",
    "dead / vacuum threshold (progress)",
    "inserted / insert threshold",
    "modified / analyze threshold",
    "overridden",
)
#: Columns of text, not numbers (left-aligned in HTML).
TEXT_COLUMNS = frozenset({"relation", "autovacuum", "overridden"})
RATE_COLUMNS = ("dead tuples/s", "reaches threshold in", "vacuum takes about")
NOTE_COLUMNS = ("probe", "reason", "fix")


# -- formatting numbers -------------------------------------------------------------------


def count(value: float) -> str:
    """A tuple count or threshold, rounded, with thousands separators."""
    return f"{value:,.0f}" if math.isfinite(value) else DASH


def percent(share: float) -> str:
    """A share (1.0 = 100 %), one decimal below 10 %."""
    if not math.isfinite(share):
        return DASH
    value = share * 100
    return f"{value:.1f} %" if abs(value) < 10 else f"{value:,.0f} %"


#: (below this many seconds, unit, seconds per unit, decimals)
_DURATION_UNITS = ((1, "s", 1, 2), (90, "s", 1, 0), (5400, "min", 60, 0), (172800, "h", 3600, 1))


def seconds(value: float | None) -> str:
    """A duration in the largest unit that keeps it readable."""
    if value is None or math.isnan(value):
        return DASH
    if math.isinf(value):
        return "never"
    for limit, unit, size, digits in _DURATION_UNITS:
        if abs(value) < limit:
            return f"{value / size:.{digits}f} {unit}"
    return f"{value / 86400:,.1f} d"


def rate(value: float | None) -> str:
    if value is None or math.isnan(value):
        return DASH
    return f"{value:,.1f}/s" if abs(value) < 100 else f"{value:,.0f}/s"


def number(value: float) -> str:
    """A float of unknown scale: whole numbers grouped, others to a few significant digits."""
    if math.isnan(value):
        return DASH
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.3g}"


def value_text(value: Value) -> str:
    """An evidence value as text."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return number(value)
    return value


def moment(value: datetime) -> str:
    """A time in UTC (a naive time is taken to be UTC already)."""
    return when(value.astimezone(UTC) if value.tzinfo else value)


# -- the view model: plain strings, escaped by each renderer --------------------------------


@dataclass(frozen=True, slots=True)
class RecommendationView:
    rank: int
    severity: str
    relation: str
    title: str
    sql: str
    reason: str
    scope: str
    setting: str
    value: str
    impact: str
    evidence: str | None


@dataclass(frozen=True, slots=True)
class FindingView:
    severity: str
    relation: str
    title: str
    detail: str
    evidence: list[tuple[str, str]]
    ranks: list[int]


@dataclass(frozen=True, slots=True)
class Section:
    question: str
    heading: str
    findings: list[FindingView]


@dataclass(frozen=True, slots=True)
class TableRow:
    relation: str
    is_toast: bool
    autovacuum: str
    vacuum: str
    insert: str
    analyze: str
    overridden: str
    rates: tuple[str, str, str]

    def cells(self, *, with_rates: bool) -> list[str]:
        fixed = [self.relation, self.autovacuum, self.vacuum, self.insert, self.analyze]
        return [*fixed, self.overridden, *(self.rates if with_rates else ())]


@dataclass(frozen=True, slots=True)
class AdviceView:
    title: str
    header: list[tuple[str, str]]
    recommendations: list[RecommendationView]
    sections: list[Section]
    tables: list[TableRow]
    with_rates: bool
    notes: list[tuple[str, str, str]]


def build_view(advice: Advice) -> AdviceView:
    ranked = advice.recommendations()
    ranks = {id(rec): rank for rank, (_, rec) in enumerate(ranked, start=1)}
    rows = [_table_row(status) for status in advice.tables]
    return AdviceView(
        title=f"Vacuum advice for {advice.server.database}",
        header=_header(advice),
        recommendations=[_recommendation(n, f, r) for n, (f, r) in enumerate(ranked, start=1)],
        sections=_sections(advice.findings, ranks),
        tables=rows,
        with_rates=any(_has_rates(status) for status in advice.tables),
        notes=[(note.probe, note.reason, note.fix or DASH) for note in advice.notes],
    )


def _header(advice: Advice) -> list[tuple[str, str]]:
    server = advice.server
    rows = [
        ("server", server.version.split(" on ")[0]),
        ("database", server.database),
        ("user", server.user),
        ("taken at", moment(advice.taken_at)),
    ]
    if advice.interval_s is not None:
        rows.append(("interval", f"{seconds(advice.interval_s)} between two snapshots"))
    if advice.exact:
        rows.append(("dead tuples", "counted exactly, not estimated"))
    rows.append(("vacuumlab", advice.vacuumlab_version))
    return rows


def _recommendation(rank: int, finding: Finding, rec: Recommendation) -> RecommendationView:
    return RecommendationView(
        rank=rank,
        severity=finding.severity,
        relation=finding.relation or SERVER_WIDE,
        title=finding.title,
        sql=rec.sql.strip("\n"),
        reason=rec.reason,
        scope=rec.scope,
        setting=rec.setting,
        value=rec.value,
        impact=f"{rec.impact:.2f}",
        evidence=rec.evidence,
    )


def _sections(findings: Sequence[Finding], ranks: dict[int, int]) -> list[Section]:
    sections = []
    for question, heading in QUESTIONS.items():
        mine = [f for f in findings if f.question == question]
        if mine:
            mine.sort(key=lambda f: SEVERITY_ORDER[f.severity])
            views = [_finding(f, ranks) for f in mine]
            sections.append(Section(question=question, heading=heading, findings=views))
    return sections


def _finding(finding: Finding, ranks: dict[int, int]) -> FindingView:
    return FindingView(
        severity=finding.severity,
        relation=finding.relation or SERVER_WIDE,
        title=finding.title,
        detail=finding.detail,
        evidence=[(key, value_text(value)) for key, value in finding.evidence.items()],
        ranks=sorted(ranks[id(rec)] for rec in finding.recommendations),
    )


def _table_row(status: TableStatus) -> TableRow:
    vacuum = f"{count(status.dead)} / {count(status.vacuum_threshold)}"
    return TableRow(
        relation=status.relation,
        is_toast=status.is_toast,
        autovacuum="on" if status.autovacuum_enabled else "off",
        vacuum=f"{vacuum} ({percent(status.vacuum_progress)})",
        insert=_against(status.inserted, status.insert_threshold),
        analyze=DASH if status.is_toast else _against(status.modified, status.analyze_threshold),
        overridden=", ".join(status.overridden) or DASH,
        rates=(
            rate(status.dead_per_second),
            seconds(status.seconds_to_vacuum),
            seconds(status.estimated_vacuum_seconds),
        ),
    )


def _against(done: int, threshold: float | None) -> str:
    return f"{count(done)} / " + ("off" if threshold is None else count(threshold))


def _has_rates(status: TableStatus) -> bool:
    rates = (status.dead_per_second, status.seconds_to_vacuum, status.estimated_vacuum_seconds)
    return any(r is not None for r in rates)


# -- Markdown -------------------------------------------------------------------------------

# Always escaped: characters that start inline markup, entities, raw HTML or a table cell.
# An underscore between two letters or digits cannot open or close emphasis, so it is left.
_INLINE = re.compile(r"[\\`*\[\]<>&|~#]|(?<![^\W_])_|_(?![^\W_])")
# At the start of a paragraph: what would turn it into a list, a heading rule or a quote.
_BLOCK_START = re.compile(r"^(\d+)([.)])|^([-+=])")


def md_text(value: str) -> str:
    """Database text as inline Markdown: on one line, with nothing interpreted."""
    flat = " ".join(value.splitlines())
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
