"""The report of a ``vacuumlab watch --record`` run: the watched period's timelines (dead
tuples per table with its vacuums shaded, workers busy against available, the refreshes that
could not read the server) and a table per relation, from the store alone.

`sections` builds the view model, `charts` draws.
"""

from __future__ import annotations

from vacuumlab.records.watch_spec import STUDY
from vacuumlab.report.page import REPORT_FILE, renderer
from vacuumlab.report.watch.sections import build_report

__all__ = ["REPORT_FILE", "build_report", "render"]

render = renderer(STUDY, build_report, unit="refreshes")
