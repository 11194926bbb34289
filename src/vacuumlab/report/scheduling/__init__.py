"""The scheduling report: per arm, the measured and the predicted autovacuum timelines side by
side (a Gantt chart, one row per table), the error table and the medians, from the store
alone.

`sections` builds the view model, `charts` draws.
"""

from __future__ import annotations

from vacuumlab.records.scheduling_spec import STUDY
from vacuumlab.report.page import REPORT_FILE, renderer
from vacuumlab.report.scheduling.sections import build_report

__all__ = ["REPORT_FILE", "build_report", "render"]

render = renderer(STUDY, build_report, unit="arms")
