"""The custom study's report: the churn report's tables and charts for the table the sampler
followed, and above them the replay's fidelity: each table's replayed rates beside the captured
ones times the scale, a step off by more than 10 % named at the top. From the store alone."""

from __future__ import annotations

from vacuumlab.records.custom_spec import STUDY
from vacuumlab.report.custom.sections import build_report
from vacuumlab.report.page import REPORT_FILE, renderer

__all__ = ["REPORT_FILE", "build_report", "render"]

render = renderer(STUDY, build_report, unit="steps")
