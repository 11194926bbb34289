"""The advice report as one self-contained HTML page: no JavaScript, nothing loaded.

It shows what the Markdown report shows, from the same view model
(:func:`vacuumlab.report.advice.view.build_view`). The template is autoescaped and nothing is
marked safe, so every string that came from the database (a relation called
``<script>alert(1)</script>``, say) reaches the page escaped. Pure: the same advice always
gives the same page.
"""

from __future__ import annotations

from vacuumlab.records.advice import Advice
from vacuumlab.report.advice.view import (
    NOTE_COLUMNS,
    NOTHING_TO_CHANGE,
    RATE_COLUMNS,
    TABLE_COLUMNS,
    TEXT_COLUMNS,
    build_view,
)
from vacuumlab.report.common import environment

TEMPLATE = "advice.html.j2"


def render_html(advice: Advice) -> str:
    """The whole report as one HTML document."""
    view = build_view(advice)
    columns = TABLE_COLUMNS + (RATE_COLUMNS if view.with_rates else ())
    return (
        environment()
        .get_template(TEMPLATE)
        .render(
            v=view,
            table_columns=columns,
            text_columns=TEXT_COLUMNS,
            # Positions, so each of the 20,000 rows' cells picks its class without a lookup
            # by name or an escape of a constant.
            text_cells=frozenset(i for i, c in enumerate(columns) if c in TEXT_COLUMNS),
            note_columns=NOTE_COLUMNS,
            nothing_to_change=NOTHING_TO_CHANGE,
        )
    )
