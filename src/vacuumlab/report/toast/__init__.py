"""The TOAST report: one self-contained HTML file, and a PNG per chart, from the store alone.

`render_toast_report` reads a toast run (parameters, settings, points and their metrics,
the parallel experiment's timelines) from the results store and nothing else, so rendering
the same run twice gives byte-identical files. It answers the published questions with the
run's numbers: what wide values cost an UPDATE of a narrow column, VACUUM and VACUUM FREEZE
when they are kept in the heap rather than out of line; how autovacuum sees a table and its
TOAST relation; and what happens when both are vacuumed at once.

`data` reads the run, `timeline` the parallel experiment's timelines, `sections` and
`parallel` build the tables and the view model, `charts` and `figures` draw.
"""

from __future__ import annotations

from vacuumlab.records.toast_spec import STUDY
from vacuumlab.report.page import REPORT_FILE, renderer
from vacuumlab.report.toast.formats import seconds, size
from vacuumlab.report.toast.sections import build_report

__all__ = ["REPORT_FILE", "build_report", "render", "render_toast_report", "seconds", "size"]


render = renderer(STUDY, build_report)

#: The name the CLI imports today.
render_toast_report = render
