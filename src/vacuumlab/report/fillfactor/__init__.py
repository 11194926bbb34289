"""The fillfactor report: one self-contained HTML file, and a PNG per chart, from the store alone.

`render_fillfactor_report` reads a fillfactor run (parameters, machine, points and their
metrics) from the results store and nothing else, so rendering the same run twice gives
byte-identical files. It puts the published table beside the measured one, says which
differences between fillfactors are more than noise (Welch's t-test over the repetitions),
explains how "memory" was mapped on this machine, and ends with a recommendation computed from
the data by `vacuumlab.stats.fillfactor`.

No JavaScript, nothing loaded: charts are inline SVG, the CSS is in the page, every string from
the store is escaped by Jinja2's autoescaping, and only the generated SVG is marked safe.

`data` reads the run, `sections` builds the tables and the view model, `charts` and `figures`
draw.
"""

from __future__ import annotations

from pathlib import Path

from vacuumlab.report.fillfactor.sections import build_report
from vacuumlab.report.page import REPORT_FILE, render_run
from vacuumlab.store import Store
from vacuumlab.studies.fillfactor_spec import STUDY

__all__ = ["REPORT_FILE", "build_report", "render", "render_fillfactor_report"]


def render(store: Store, run_id: int, out_dir: Path) -> Path:
    """Render fillfactor run `run_id` to `out_dir/report.html` (one self-contained file) plus
    one PNG per chart; return the HTML's path.

    Reads only the store. Raises VacuumlabError if the run does not exist, is not a
    fillfactor run, has no points, or the files cannot be written.
    """
    return render_run(store, run_id, out_dir, study=STUDY, build=build_report)


#: The name the CLI imports today.
render_fillfactor_report = render
