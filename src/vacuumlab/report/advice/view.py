"""The advice report's view model, which the Markdown and the HTML report share.

`build_view` turns an :class:`~vacuumlab.records.advice.Advice` into plain, formatted strings in
display order: recommendations ranked by impact, one section per question (in ``QUESTIONS``
order, only those with findings), where each table stands, and what was not collected.
Pure: the same advice always gives the same view. Its strings are not escaped yet: each
output escapes them its own way (`markdown`, the HTML template).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from vacuumlab.records.advice import (
    QUESTIONS,
    Advice,
    Finding,
    PartitionedStatus,
    Recommendation,
    TableStatus,
    Value,
)
from vacuumlab.report.common import DASH, when
from vacuumlab.units import is_multiple, multiple

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
#: Before a partition's name in text and Markdown: it is listed under its partitioned table.
PARTITION_MARK = "↳ "


# -- formatting numbers -------------------------------------------------------------------


def count(value: float) -> str:
    """A tuple count or threshold, rounded, with thousands separators."""
    return f"{value:,.0f}" if math.isfinite(value) else DASH


def percent(share: float) -> str:
    """A share (1.0 = 100 %), one decimal below 10 %; a multiple ("1,000×") beyond 1,000 %."""
    if not math.isfinite(share):
        return DASH
    if is_multiple(share):
        return multiple(share)
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
    simulated: str | None = None


@dataclass(frozen=True, slots=True)
class FindingView:
    severity: str
    relation: str
    title: str
    detail: str
    evidence: list[tuple[str, str]]
    ranks: list[int]
    #: Evidence keys whose values are numbers (right-aligned); the others are text.
    numeric: frozenset[str] = frozenset()


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
    #: A partition, listed under its partitioned table.
    partition: bool = False
    #: A partitioned table: its partitions' sums.
    partitioned: bool = False

    def cells(self, *, with_rates: bool) -> list[str]:
        """The row's cells; a partition's relation marked as under its partitioned table."""
        relation = f"{PARTITION_MARK}{self.relation}" if self.partition else self.relation
        fixed = [relation, self.autovacuum, self.vacuum, self.insert, self.analyze]
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
    quiet: str = ""  # the relations left out of the status table, counted


def build_view(advice: Advice) -> AdviceView:
    ranked = advice.recommendations()
    ranks = {id(rec): rank for rank, (_, rec) in enumerate(ranked, start=1)}
    rows = [
        _partitioned_row(entry)
        if isinstance(entry, PartitionedStatus)
        else _table_row(entry, below)
        for entry, below in standing_order(advice)
    ]
    return AdviceView(
        title=f"Vacuum advice for {advice.server.database}",
        header=_header(advice),
        recommendations=[_recommendation(n, f, r) for n, (f, r) in enumerate(ranked, start=1)],
        sections=_sections(advice.findings, ranks),
        tables=rows,
        with_rates=any(_has_rates(status) for status in advice.tables),
        notes=[(note.probe, note.reason, note.fix or DASH) for note in advice.notes],
        quiet=quiet_sentence(advice.quiet),
    )


def quiet_sentence(quiet: int) -> str:
    """The status table's word on the relations it leaves out, or nothing."""
    if not quiet:
        return ""
    return (
        f"Not listed: {quiet:,} quiet relation{'s' if quiet != 1 else ''}, with nothing "
        "counted toward a threshold, no options of their own and no freeze limit passed."
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
        simulated=rec.simulated,
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
        numeric=frozenset(
            key for key, value in finding.evidence.items() if not isinstance(value, str)
        ),
    )


def standing_order(advice: Advice) -> list[tuple[TableStatus | PartitionedStatus, bool]]:
    """The status table's rows in order, each with whether it is a partition listed under its
    partitioned table: most progress first, and each partitioned table (its sums) where its
    first partition stood, its partitions after it."""
    parents = {p.relation: p for p in advice.partitioned}
    if not parents:
        return [(status, False) for status in advice.tables]
    members: dict[str, list[TableStatus]] = {}
    for status in advice.tables:
        if status.partition_of in parents:
            members.setdefault(status.partition_of, []).append(status)
    found: list[tuple[TableStatus | PartitionedStatus, bool]] = []
    for status in advice.tables:
        root = status.partition_of
        if root not in parents:
            found.append((status, False))
        elif root in members:
            found.append((parents[root], False))
            found.extend((member, True) for member in members.pop(root))
    placed = {entry.relation for entry, _ in found}
    found.extend((p, False) for name, p in parents.items() if name not in placed)
    return found


def _partitioned_row(p: PartitionedStatus) -> TableRow:
    """A partitioned table: no thresholds of its own (autovacuum never takes it), its
    partitions' sums; its analyze column says whether a manual ANALYZE ever counted it."""
    analyzed = (
        "never analyzed"
        if p.analyzed_rows is None
        else f"{count(p.modified)} in all; analyzed over {count(p.analyzed_rows)}"
    )
    return TableRow(
        relation=p.relation,
        is_toast=False,
        autovacuum="partitioned",
        vacuum=f"{count(p.dead)} in all",
        insert=f"{count(p.inserted)} in all",
        analyze=analyzed,
        overridden=f"{p.partitions:,} partitions, {count(p.rows)} rows",
        rates=(rate(p.dead_per_second), DASH, DASH),
        partitioned=True,
    )


def _table_row(status: TableStatus, partition: bool = False) -> TableRow:
    vacuum = f"{count(status.dead)} / {count(status.vacuum_threshold)}"
    progress = "never analyzed" if status.never_counted else percent(status.vacuum_progress)
    return TableRow(
        relation=status.relation,
        is_toast=status.is_toast,
        autovacuum="on" if status.autovacuum_enabled else "off",
        vacuum=f"{vacuum} ({progress})",
        insert=_against(status.inserted, status.insert_threshold),
        analyze=DASH if status.is_toast else _against(status.modified, status.analyze_threshold),
        overridden=", ".join(status.overridden) or DASH,
        rates=(
            rate(status.dead_per_second),
            seconds(status.seconds_to_vacuum),
            seconds(status.estimated_vacuum_seconds),
        ),
        partition=partition,
    )


def _against(done: int, threshold: float | None) -> str:
    return f"{count(done)} / " + ("off" if threshold is None else count(threshold))


def _has_rates(status: TableStatus) -> bool:
    rates = (status.dead_per_second, status.seconds_to_vacuum, status.estimated_vacuum_seconds)
    return any(r is not None for r in rates)
