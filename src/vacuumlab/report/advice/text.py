"""The advisor in the terminal: what to change first, then the findings by question, then where
each table stands. Pure: it reads the advice model only; database strings are never markup."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from vacuumlab.records.advice import QUESTIONS, Advice, Finding, PartitionedStatus
from vacuumlab.report.advice.view import PARTITION_MARK, quiet_sentence, standing_order
from vacuumlab.units import share

_STYLE = {"critical": "bold red", "warning": "yellow", "info": "dim"}


def render(advice: Advice, *, limit: int = 25) -> RenderableType:
    parts: list[RenderableType] = [_header(advice), _changes(advice)]
    for question, heading in QUESTIONS.items():
        found = [f for f in advice.findings if f.question == question]
        if found:
            parts.append(findings_table(heading, found))
    parts.append(_standing(advice, limit))
    if advice.notes:
        notes = Table(
            "probe", "not collected because", "fix", title="Not collected", title_justify="left"
        )
        for n in advice.notes:
            notes.add_row(n.probe, Text(n.reason), Text(n.fix or ""))
        parts.append(notes)
    return Group(*parts)


def _header(advice: Advice) -> Text:
    server = advice.server
    text = Text(server.version.split(" on ")[0], style="bold")
    text.append(f" · database {server.database} · {advice.taken_at:%Y-%m-%d %H:%M:%S %Z}")
    if advice.interval_s:
        text.append(f" · rates over {advice.interval_s:.0f} s")
    critical = sum(f.severity == "critical" for f in advice.findings)
    warnings = sum(f.severity == "warning" for f in advice.findings)
    text.append(f"\n{critical} critical, {warnings} warnings, {len(advice.findings)} findings")
    return text


def _changes(advice: Advice) -> RenderableType:
    ranked = advice.recommendations()
    if not ranked:
        return Text("Nothing to change: no recommendation.", style="green")
    table = Table(
        "#",
        "change",
        "why",
        title="What to change, most impact first",
        title_justify="left",
        show_lines=True,
    )
    for number, (_finding, rec) in enumerate(ranked, start=1):
        why = Text(rec.reason)
        if rec.evidence:
            why.append(f"\nevidence: {rec.evidence}", style="dim")
        if rec.simulated:
            why.append(f"\npredicted: {rec.simulated}", style="cyan")
        table.add_row(str(number), Text(rec.sql, style="cyan"), why)
    return table


def findings_table(heading: str, found: list[Finding]) -> Table:
    table = Table(
        "severity", "relation", "finding", title=heading, title_justify="left", show_lines=True
    )
    for f in found:
        body = Text(f.title, style="bold")
        body.append(f"\n{f.detail}")
        table.add_row(
            Text(f.severity, style=_STYLE[f.severity]), Text(f.relation or "server"), body
        )
    return table


def _standing(advice: Advice, limit: int) -> RenderableType:
    order = standing_order(advice)
    if not order and advice.quiet:  # every relation quiet: no empty table, the count alone
        return Text(f"Where each table stands: {quiet_sentence(advice.quiet)}")
    shown = order[:limit]
    table = Table(
        "relation",
        "autovacuum",
        "dead / threshold",
        "progress",
        "inserted / threshold",
        "dead/s",
        "next vacuum in",
        "overrides",
        title=f"Where each table stands ({len(shown)} of {len(order)})",
        caption=quiet_sentence(advice.quiet) or None,
        caption_justify="left",
        title_justify="left",
    )
    for row, partition in shown:
        if isinstance(row, PartitionedStatus):
            table.add_row(*_partitioned(row))
            continue
        insert = (
            "-"
            if row.insert_threshold is None
            else f"{row.inserted:,} / {row.insert_threshold:,.0f}"
        )
        table.add_row(
            Text(f"{PARTITION_MARK}{row.relation}" if partition else row.relation),
            "on" if row.autovacuum_enabled else Text("off", style="red"),
            f"{row.dead:,} / {row.vacuum_threshold:,.0f}",
            "never analyzed" if row.never_counted else share(row.vacuum_progress),
            insert,
            "-" if row.dead_per_second is None else f"{row.dead_per_second:,.1f}",
            "-" if row.seconds_to_vacuum is None else f"{row.seconds_to_vacuum:,.0f} s",
            Text(", ".join(row.overridden)),
        )
    return table


def _partitioned(row: PartitionedStatus) -> list[str | Text]:
    """A partitioned table's row: its partitions' sums, and whether it was ever analyzed."""
    analyzed = (
        Text("never analyzed", style="yellow")
        if row.analyzed_rows is None
        else f"analyzed over {row.analyzed_rows:,.0f}"
    )
    return [
        Text(row.relation, style="bold"),
        "partitioned",
        f"{row.dead:,} in all",
        analyzed,
        f"{row.inserted:,} in all",
        "-" if row.dead_per_second is None else f"{row.dead_per_second:,.1f}",
        "-",
        Text(f"{row.partitions:,} partitions, {row.rows:,} rows"),
    ]
