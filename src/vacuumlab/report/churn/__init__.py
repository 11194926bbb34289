"""The churn report: one self-contained HTML file, and a PNG per chart, from the store alone.

`render_churn_report` reads a churn run (its parameters, points, metrics and series) from the
results store and nothing else: no server, no pgbench logs. Its output depends only on the
store's contents, so rendering the same run twice gives byte-identical files.

The HTML has no JavaScript and loads nothing: the charts are inline SVG and the CSS is in the
page. Every string that came from the store is escaped by Jinja2's autoescaping; the only
markup inserted unescaped is the SVG that the charts generated.

`data` reads the run's steps, `sections` builds the tables and the view model, `charts` and
`figures` draw; `text` is the summary table (and the finding) the terminal shows after a run.
"""

from __future__ import annotations

from vacuumlab.records.churn_spec import STUDY
from vacuumlab.report.churn.sections import build_report
from vacuumlab.report.page import REPORT_FILE, renderer

__all__ = ["REPORT_FILE", "build_report", "render", "render_churn_report"]


render = renderer(STUDY, build_report, unit="steps")

#: The name the CLI imports today.
render_churn_report = render
