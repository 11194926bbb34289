"""The tune report: the answer (the verdict, its SQL, the best trial against the current
settings beyond the noise), the space searched and what the simulator made of it, every
measured trial, the Pareto front, which settings mattered, the current settings against the
best trial over time, and how close the simulator's predictions came on the user's own table.
From the store alone.

`data` reads the run, `answer` and `sections` build the view model, `charts` draws; `text` is
the verdict and its SQL the terminal shows after a run.
"""

from __future__ import annotations

from vacuumlab.records.tune_spec import STUDY
from vacuumlab.report.page import REPORT_FILE, renderer
from vacuumlab.report.tune.sections import build_report

__all__ = ["REPORT_FILE", "build_report", "render"]

render = renderer(STUDY, build_report, unit="trials")
