"""A simulation in Markdown: what the terminal shows, every database string escaped."""

from __future__ import annotations

from vacuumlab.records.simulation import Simulation
from vacuumlab.report.markdown import md_table, md_text
from vacuumlab.report.simulation.data import busiest, hours
from vacuumlab.report.simulation.view import COLUMNS, header, row, title


def render_markdown(sim: Simulation) -> str:
    """The same as the terminal; ``md_table`` escapes every cell."""
    timeline = [
        (f"{h.start_s / 3600:.0f}", f"{h.busy_workers:.2f}", f"{h.started:,}") for h in hours(sim)
    ]
    parts = [
        f"# {md_text(title(sim))}",
        md_table(("", ""), header(sim)),
        "## Per relation, most dead tuples first",
        md_table(COLUMNS, [row(r) for r in busiest(sim)]),
        "## Worker use",
        md_table(("hour", "workers busy", "vacuums started"), timeline),
        "## Assumptions",
        "\n".join(f"- {md_text(a)}" for a in sim.assumptions),
    ]
    return "\n\n".join(parts) + "\n"
