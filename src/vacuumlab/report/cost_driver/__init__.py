"""The cost-driver report: one self-contained HTML file, and a PNG per chart, from the store
alone.

`render_cost_driver_report` reads a cost-driver run (parameters, settings, points and their
metrics) from the results store and nothing else, so rendering the same run twice gives
byte-identical files. It asks the published question of the run: is an autovacuum's duration
driven by the dead tuples it removes or by the pages it dirties?

Only autovacuum points (mode "autovacuum") enter the main analysis; manual points, an
unthrottled VACUUM of the same table, are compared with them in a section of their own and
give the work-time part of the predicted duration.

`data` reads the run, `sections` builds the tables and the view model, `charts` and `figures`
draw.
"""

from __future__ import annotations

from vacuumlab.records.cost_driver_spec import STUDY
from vacuumlab.report.cost_driver.sections import build_report
from vacuumlab.report.page import REPORT_FILE, renderer

__all__ = ["REPORT_FILE", "build_report", "render", "render_cost_driver_report"]


render = renderer(STUDY, build_report)

#: The name the CLI imports today.
render_cost_driver_report = render
