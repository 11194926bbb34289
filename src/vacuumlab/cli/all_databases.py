"""``--all-databases`` of ``snapshot`` and ``advise``: every database of the server, visited one
session at a time with a progress display, and saved or re-read as one document.

Nothing is written until every database has been visited, and then each file at once (a
temporary file beside it, renamed over it): Ctrl-C or SIGTERM leave no half-written file.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import RenderableType
from rich.markup import escape

from vacuumlab.cli.options import (
    DocumentFormat,
    err,
    out,
    render_text,
    sandbox_dsn,
    waiting_for_rates,
)
from vacuumlab.cli.progress import RunDisplay
from vacuumlab.errors import VacuumlabError

if TYPE_CHECKING:
    from vacuumlab.records.all_databases import AllDatabasesAdvice, AllDatabasesSnapshot
    from vacuumlab.records.snapshot import Snapshot

AllDatabasesOpt = Annotated[
    bool,
    typer.Option(
        "--all-databases",
        help="Every database of the server that accepts connections, visited one at a time "
        "with the DSN's other settings; one the role may not connect to becomes a note "
        "[default: the DSN's database only].",
        show_default=False,
    ),
]


class DatabasesDisplay(RunDisplay):
    """The progress display, with each database's name shown as it is: never rich markup
    (a database may be called ``[/x]``)."""

    def point_started(self, label: str, seconds: int | None) -> None:
        super().point_started(escape(label), seconds)

    def point_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        super().point_finished(escape(label), metrics)


def collect_snapshots(
    dsn: str | None, data_dir: Path | None, *, exact: bool
) -> AllDatabasesSnapshot:
    """A snapshot of every database, with the databases' progress on stderr."""
    from vacuumlab.lab.all_databases import collect_all

    display = DatabasesDisplay(err)
    with display.shown():
        return collect_all(dsn or sandbox_dsn(data_dir), exact=exact, progress=display)


def collect_advice(
    dsn: str | None,
    data_dir: Path | None,
    *,
    interval: float | None,
    exact: bool,
) -> AllDatabasesAdvice:
    """The advice for every database, with the databases' progress on stderr."""
    from vacuumlab.lab.all_databases import collect_all_advice

    display = DatabasesDisplay(err)
    with display.shown():
        return collect_all_advice(
            dsn or sandbox_dsn(data_dir),
            interval=interval,
            exact=exact,
            on_wait=waiting_for_rates,
            progress=display,
        )


def advice_from_files(
    paths: list[Path], *, all_databases: bool
) -> tuple[Snapshot, Snapshot | None] | AllDatabasesAdvice:
    """``advise --input``: the saved snapshots of one database (to advise as ever), or the
    advice from saved snapshots of every database; each file's kind says which it is."""
    from vacuumlab.advise.all_databases import advise_all
    from vacuumlab.records.all_databases import AllDatabasesSnapshot, load_snapshots

    loaded = [load_snapshots(path) for path in paths]
    every = [isinstance(snap, AllDatabasesSnapshot) for snap in loaded]
    if any(every) and not all(every):
        raise VacuumlabError(
            "--input: give snapshots of one kind, both of one database or both saved with "
            "`snapshot --all-databases`"
        )
    if all(every):
        first, *later = (snap for snap in loaded if isinstance(snap, AllDatabasesSnapshot))
        return advise_all(first, later[0] if later else None)
    if all_databases:
        raise VacuumlabError(
            f"{paths[0]} is a snapshot of one database: --all-databases with --input takes a "
            "file saved by `vacuumlab snapshot --all-databases`"
        )
    singles = [snap for snap in loaded if not isinstance(snap, AllDatabasesSnapshot)]
    return singles[0], singles[1] if len(singles) == 2 else None


def refuse_html(fmt: DocumentFormat) -> None:
    if fmt is DocumentFormat.html:
        raise VacuumlabError("--all-databases writes table, md or json")


def advice_document(advice: AllDatabasesAdvice, fmt: DocumentFormat) -> str | None:
    """The advice in ``fmt``, or None for the table view (:func:`advice_view`)."""
    refuse_html(fmt)
    if fmt is DocumentFormat.json:
        return advice.dump_json() + "\n"
    if fmt is DocumentFormat.md:
        from vacuumlab.report.advice.all_databases_markdown import render_markdown

        return render_markdown(advice)
    return None


def advice_view(advice: AllDatabasesAdvice, limit: int) -> RenderableType:
    from vacuumlab.report.advice.all_databases_text import render

    return render(advice, limit=limit)


def snapshot_view(snapshots: AllDatabasesSnapshot, limit: int) -> RenderableType:
    from vacuumlab.report.snapshot.all_databases import render

    return render(snapshots, limit=limit)


def emit_whole(text: str, output: Path | None) -> None:
    """Text to stdout, or to ``--output`` whole (see :func:`write_whole`)."""
    if output is None:
        sys.stdout.write(text)
    else:
        write_whole(output, text)


def show_whole(renderable: RenderableType, output: Path | None) -> None:
    """A table view on the terminal, or as plain text to ``--output`` whole."""
    if output is None:
        out.print(renderable)
    else:
        write_whole(output, render_text(renderable))


def write_whole(path: Path, text: str) -> None:
    """``text`` into ``path`` at once: written beside it, then renamed over it, so an
    interruption leaves the earlier file or none, never a part. Anything but a regular file
    (``/dev/stdout``, a pipe) is written directly."""
    direct = path.exists() and not path.is_file()
    part = path if direct else path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        part.write_text(text, encoding="utf-8")
        if not direct:
            os.replace(part, path)
    except OSError as exc:
        raise VacuumlabError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        if not direct:
            with contextlib.suppress(OSError):
                part.unlink()
