"""A snapshot of every database of a server in the terminal (``snapshot --all-databases``):
the databases that could not be read, then each database's snapshot under a heading of its
own, drawn as :mod:`vacuumlab.report.snapshot.text` draws one. Pure: it reads the record only."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from vacuumlab.records.all_databases import AllDatabasesSnapshot
from vacuumlab.report.snapshot.text import render as render_one


def render(snapshots: AllDatabasesSnapshot, *, limit: int = 25) -> RenderableType:
    """``limit``: the tables listed for each database."""
    names = ", ".join(snap.server.database for snap in snapshots.snapshots)
    header = Text(f"{len(snapshots.snapshots)} databases read", style="bold")
    header.append(f" ({names}) · visited from {snapshots.taken_at:%Y-%m-%d %H:%M:%S %Z}")
    parts: list[RenderableType] = [header]
    if snapshots.notes:
        table = Table("not read because", "fix", title="Databases not read", title_justify="left")
        for note in snapshots.notes:
            table.add_row(Text(note.reason), Text(note.fix or ""))
        parts.append(table)
    for snap in snapshots.snapshots:
        parts.append(Rule(Text(f"database {snap.server.database}", style="bold"), characters="═"))
        parts.append(render_one(snap, limit=limit))
    return Group(*parts)
