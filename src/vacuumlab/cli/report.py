"""Reports from the results store: ``report`` renders a run's report, ``runs`` lists runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from vacuumlab.cli.options import StoreOpt, out
from vacuumlab.errors import VacuumlabError
from vacuumlab.lab.targets import existing_store, report_directory
from vacuumlab.store import Store


def render_report(store: Store, run_id: int, output: Path | None) -> Path:
    """Render a run's report into ``output`` (by default beside the store)."""
    from vacuumlab.report import RENDERERS

    study = store.run(run_id).study
    render = RENDERERS.get(study)
    if render is None:
        raise VacuumlabError(f"run {run_id} is a {study} run; no report for that study yet")
    return render(store, run_id, output or report_directory(store.path, run_id))


def report(
    run_id: Annotated[int, typer.Argument(help="The run to report on.", metavar="RUN")],
    store_path: StoreOpt = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            help="Report directory [default: next to the store, runs/RUN/report].",
            show_default=False,
            metavar="DIR",
        ),
    ] = None,
) -> None:
    """Render a run's HTML report (and PNG charts) from the results store alone.

    Example: vacuumlab report 3 --output ./report-3
    """
    with Store.open(existing_store(store_path)) as store:
        html = render_report(store, run_id, output)
    out.print(str(html))


def runs(store_path: StoreOpt = None) -> None:
    """List the runs in the results store, newest first.

    Example: vacuumlab runs --store ./results.sqlite
    """
    from rich.table import Table
    from rich.text import Text

    with Store.open(existing_store(store_path)) as store:
        table = Table("run", "study", "status", "started", "points", "server")
        for run in store.runs():
            table.add_row(
                str(run.id),
                run.study,
                run.status,
                f"{run.started_at:%Y-%m-%d %H:%M}",
                str(len(store.points(run.id))),
                Text(run.server_version.split(" on ")[0]),
            )
    out.print(table)
