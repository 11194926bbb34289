"""A simulation as one self-contained HTML page, its worker timeline drawn inline. The
template is autoescaped: the relation names from the database reach the page escaped; only
the generated SVG is marked safe."""

from __future__ import annotations

from vacuumlab.records.simulation import Simulation
from vacuumlab.report.common import environment
from vacuumlab.report.simulation.charts import timeline_svg
from vacuumlab.report.simulation.data import busiest, hours
from vacuumlab.report.simulation.view import COLUMNS, header, row, title

TEMPLATE = "simulation.html.j2"


def render_html(sim: Simulation) -> str:
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
