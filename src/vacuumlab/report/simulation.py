"""A simulation in the terminal, in Markdown and as one HTML page with its worker timeline.

Pure: it reads the :class:`~vacuumlab.records.simulation.Simulation` record only. Relation names
came from the database: they are never markup in the terminal, escaped in Markdown and
autoescaped in HTML.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from vacuumlab.records.simulation import RelationForecast, Simulation
from vacuumlab.report.advice_md import md_table, md_text
from vacuumlab.report.common import environment
from vacuumlab.report.simulation_data import busiest, hours
from vacuumlab.units import count, duration, rate

COLUMNS = (
    "relation",
    "dead/s",
    "inserts/s",
    "vacuums",
    "first start",
    "every",
    "duration",
    "peak dead",
    "waited past threshold",
)
TEMPLATE = "simulation.html.j2"


def title(sim: Simulation) -> str:
    return f"Autovacuum over {sim.hours:g} h, simulated — {sim.server.database}"


def header(sim: Simulation) -> list[tuple[str, str]]:
    rows = [
        ("server", sim.server.version.split(" on ")[0]),
        ("from", f"{sim.taken_at:%Y-%m-%d %H:%M:%S %Z}, rates over {sim.interval_s:.0f} s"),
        (
            "launcher",
            f"a worker every {duration(sim.launch_every_s)} (naptime "
            f"{duration(sim.naptime_s)}), {sim.workers} worker slots, {sim.launches:,} launches",
        ),
        ("workers busy", f"{sim.busy_share:.0%} of the window"),
        ("what-ifs", ", ".join(sim.changes) or "none: the server as it is"),
    ]
    if sim.quiet:
        noun = "relation" if sim.quiet == 1 else "relations"
        rows.append(("left out", f"{sim.quiet:,} {noun} with no activity"))
    return rows


def row(r: RelationForecast) -> list[str]:
    return [
        r.relation,
        rate(r.dead_per_second),
        rate(r.inserts_per_second),
        f"{r.vacuums:,}" + (f" ({r.forced} forced)" if r.forced else ""),
        "—" if r.first_start_s is None else f"at {duration(r.first_start_s)}",
        "—" if r.mean_interval_s is None else duration(r.mean_interval_s),
        "—" if r.mean_duration_s is None else _short(r.mean_duration_s),
        count(r.peak_dead),
        "—" if not r.vacuums else f"{duration(r.waited_s / r.vacuums)} on average",
    ]


def _short(seconds: float) -> str:
    """Vacuums of small tables take milliseconds."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else duration(seconds)


# -- terminal ---------------------------------------------------------------------------------


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


# -- Markdown ---------------------------------------------------------------------------------


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


# -- HTML -------------------------------------------------------------------------------------


def render_html(sim: Simulation) -> str:
    from vacuumlab.report.simulation_chart import timeline_svg

    return (
        environment()
        .get_template(TEMPLATE)
        .render(
            title=title(sim),
            header=header(sim),
            columns=COLUMNS,
            rows=[row(r) for r in busiest(sim)],
            chart=timeline_svg(sim),
            hours=hours(sim),
            workers=sim.workers,
            assumptions=sim.assumptions,
        )
    )
