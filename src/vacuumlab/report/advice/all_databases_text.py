"""The advice for every database of a server in the terminal (``advise --all-databases``): what
holds for the whole server, the databases that could not be read, then each database's advice
under a heading of its own, drawn as :mod:`vacuumlab.report.advice.text` draws one database's.
Pure: it reads the record only; database strings are never markup."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from vacuumlab.records.all_databases import AllDatabasesAdvice
from vacuumlab.records.snapshot import ProbeNote
from vacuumlab.report.advice.text import findings_table
from vacuumlab.report.advice.text import render as render_one

SERVER_WIDE = "The whole server (every database)"


def render(advice: AllDatabasesAdvice, *, limit: int = 25) -> RenderableType:
    """``limit``: the tables listed for each database."""
    parts: list[RenderableType] = [_header(advice)]
    if advice.findings:
        parts.append(findings_table(SERVER_WIDE, advice.findings))
        changes = server_changes(advice)
        if changes is not None:
            parts.append(changes)
    if advice.notes:
        parts.append(unread_table(advice.notes))
    for one in advice.databases:
        parts.append(database_rule(one.server.database))
        parts.append(render_one(one, limit=limit))
    return Group(*parts)


def server_changes(advice: AllDatabasesAdvice) -> Table | None:
    """What the server-wide findings ask to change, most impact first."""
    ranked = sorted(
        (rec for f in advice.findings for rec in f.recommendations), key=lambda r: -r.impact
    )
    if not ranked:
        return None
    table = Table(
        "change", "why", title="What to change for the whole server", title_justify="left"
    )
    for rec in ranked:
        why = Text(rec.reason)
        if rec.simulated:  # as one database's changes show it (report.advice.text)
            why.append(f"\npredicted: {rec.simulated}", style="cyan")
        table.add_row(Text(rec.sql, style="cyan"), why)
    return table


def database_rule(name: str) -> Rule:
    """The heading above one database's part."""
    return Rule(Text(f"database {name}", style="bold"), characters="═")


def unread_table(notes: list[ProbeNote]) -> Table:
    table = Table("not read because", "fix", title="Databases not read", title_justify="left")
    for note in notes:
        table.add_row(Text(note.reason), Text(note.fix or ""))
    return table


def _header(advice: AllDatabasesAdvice) -> Text:
    read = [a.server.database for a in advice.databases]
    version = advice.databases[0].server.version.split(" on ")[0] if read else "PostgreSQL"
    text = Text(version, style="bold")
    text.append(f" · {len(read)} databases read · {advice.taken_at:%Y-%m-%d %H:%M:%S %Z}")
    if advice.notes:
        text.append(f" · {len(advice.notes)} not read", style="yellow")
    found = advice.all_findings()
    critical = sum(f.severity == "critical" for f in found)
    warnings = sum(f.severity == "warning" for f in found)
    text.append(f"\n{critical} critical, {warnings} warnings, {len(found)} findings in all")
    return text
