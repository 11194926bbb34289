"""A simulation in the terminal: its facts, the busiest relations, the worker use an hour at a
time. Relation names came from the database: each is a :class:`rich.text.Text`, never markup."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from vacuumlab.records.simulation import Simulation
from vacuumlab.report.simulation.data import busiest, hours
from vacuumlab.report.simulation.view import COLUMNS, header, row, title


def render(sim: Simulation, *, limit: int = 25) -> RenderableType:
    facts = Table.grid(padding=(0, 2))
    for label, value in header(sim):
        facts.add_row(Text(label, style="bold"), Text(value))
    table = Table(*COLUMNS, title="Per relation, most dead tuples first", title_justify="left")
    for r in busiest(sim, limit):
        table.add_row(*(Text(cell) for cell in row(r)))
    timeline = Table(
        "hour", "workers busy", "vacuums started", title="Worker use", title_justify="left"
    )
    for h in hours(sim):
        bar = "█" * round(h.busy_workers / max(sim.workers, 1) * 20)
        timeline.add_row(f"{h.start_s / 3600:.0f}", f"{h.busy_workers:.2f} {bar}", f"{h.started:,}")
    assumptions = Text("Assumes: " + "; ".join(sim.assumptions) + ".", style="dim")
    return Group(Text(title(sim), style="bold"), facts, table, timeline, assumptions)
