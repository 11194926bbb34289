"""The fillfactor report: one self-contained HTML file, and a PNG per chart, from the store alone.

`render_fillfactor_report` reads a fillfactor run (parameters, machine, points and their
metrics) from the results store and nothing else, so rendering the same run twice gives
byte-identical files. It puts the published table beside the measured one, says which
differences between fillfactors are more than noise (Welch's t-test over the repetitions),
explains how "memory" was mapped on this machine, and ends with a recommendation computed from
the data by `vacuumlab.stats.fillfactor`.

`data` reads the run, `sections` builds the tables and the view model, `charts` and `figures`
draw.
"""

from __future__ import annotations

from vacuumlab.records.fillfactor_spec import STUDY
from vacuumlab.report.fillfactor.sections import build_report
from vacuumlab.report.page import REPORT_FILE, renderer

__all__ = ["REPORT_FILE", "build_report", "render", "render_fillfactor_report"]


render = renderer(STUDY, build_report)

#: The name the CLI imports today.
render_fillfactor_report = render
