"""The cost-driver report: one self-contained HTML file, and a PNG per chart, from the store
alone.

`render_cost_driver_report` reads a cost-driver run (parameters, settings, points and their
metrics) from the results store and nothing else, so rendering the same run twice gives
byte-identical files. It asks the published question of the run: is an autovacuum's duration
driven by the dead tuples it removes or by the pages it dirties?

Only autovacuum points (mode "autovacuum") enter the main analysis; manual points, an
unthrottled VACUUM of the same table, are compared with them in a section of their own and
give the work-time part of the predicted duration.

No JavaScript, nothing loaded: charts are inline SVG, the CSS is in the page, every string from
the store is escaped by Jinja2's autoescaping, and only the generated SVG is marked safe.

`data` reads the run, `sections` builds the tables and the view model, `charts` and `figures`
draw.
"""

from __future__ import annotations

from pathlib import Path

from vacuumlab.report.cost_driver.sections import build_report
from vacuumlab.report.page import REPORT_FILE, render_run
from vacuumlab.store import Store
from vacuumlab.studies.cost_driver_spec import STUDY

__all__ = ["REPORT_FILE", "build_report", "render", "render_cost_driver_report"]


def render(store: Store, run_id: int, out_dir: Path) -> Path:
    """Render cost-driver run `run_id` to `out_dir/report.html` (one self-contained file) plus
    one PNG per chart; return the HTML's path.

    Reads only the store. Raises VacuumlabError if the run does not exist, is not a
    cost-driver run, has no points, or the files cannot be written.
    """
    return render_run(store, run_id, out_dir, study=STUDY, build=build_report)


#: The name the CLI imports today.
render_cost_driver_report = render
