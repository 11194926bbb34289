"""Reports from the results store: ``report`` renders a run's report, ``runs`` lists runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from enum import StrEnum
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


class CompareFormat(StrEnum):
    html = "html"
    md = "md"
    json = "json"


def compare(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Two runs or more: N (in --store) or FILE:N (in another store).",
            metavar="RUN",
            show_default=False,
        ),
    ],
    store_path: StoreOpt = None,
    format_: Annotated[
        CompareFormat,
        typer.Option("--format", help="html (a page), md or json (on stdout).", metavar="FORMAT"),
    ] = CompareFormat.html,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            help="Where to write (html: runs/compare-A-B.html) "
            "[default: html beside the store; md and json on stdout].",
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
) -> None:
    """Runs of one study with the same parameters on different targets (server version,
    machine, executor, build) side by side: what differs, what changed between their
    PostgreSQL majors, and which metrics' differences are real (p-values adjusted across the
    metrics, Benjamini–Hochberg) and which are within noise.

    Example: vacuumlab compare 3 4 --format md
    """
    from vacuumlab.report.compare import Side, to_html, to_json, to_markdown
    from vacuumlab.report.compare import compare as side_by_side

    if len(runs) < 2:
        raise VacuumlabError("compare needs two runs or more, e.g. vacuumlab compare 3 4")
    with ExitStack() as stack:
        opened = list(_opened(runs, store_path, stack))
        sides = [Side(spec, st.run(run_id), st.points(run_id)) for spec, st, run_id in opened]
        comparison = side_by_side(sides)
    if format_ is CompareFormat.html:
        name = "compare-" + "-".join(spec.replace("/", "_").replace(":", "_") for spec in runs)
        place = output or opened[0][1].path.parent / "runs" / f"{name}.html"
        place.parent.mkdir(parents=True, exist_ok=True)
        out.print(str(to_html(comparison, place)))
        return
    text = to_json(comparison) + "\n" if format_ is CompareFormat.json else to_markdown(comparison)
    if output is not None:
        output.write_text(text, encoding="utf-8")
        out.print(str(output))
    else:
        out.file.write(text)


def _opened(
    specs: list[str], store_path: Path | None, stack: ExitStack
) -> Iterator[tuple[str, Store, int]]:
    """Each run as (how it was named, its open store, its id): ``N`` in ``--store``,
    ``FILE:N`` in another store."""
    stores: dict[Path, Store] = {}
    for spec in specs:
        file, _, number = spec.rpartition(":")
        if not number.isdigit():
            raise VacuumlabError(f"run {spec!r}: say N (a run in --store) or FILE:N")
        path = Path(file).expanduser() if file else existing_store(store_path)
        if not path.exists():
            raise VacuumlabError(f"run {spec!r}: no results store at {path}")
        key = path.resolve()
        if key not in stores:
            stores[key] = stack.enter_context(Store.open(path))
        yield spec, stores[key], int(number)
