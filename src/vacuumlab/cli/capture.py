"""``vacuumlab capture``: a workload profile of a user's tables, read-only, into a file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from vacuumlab.cli.options import err, out, seconds_of, write
from vacuumlab.errors import VacuumlabError

if TYPE_CHECKING:
    from vacuumlab.records.profile import Note, Profile

DEFAULT_OUTPUT = Path("profile.json")


def capture_command(
    dsn: Annotated[
        str,
        typer.Argument(
            help="The server to capture from (postgresql://user@host/db).", metavar="DSN"
        ),
    ],
    tables: Annotated[
        list[str],
        typer.Option(
            "--table",
            help="A table to capture, named as SQL writes it: app.jobs, 'app.\"Job Queue\"' "
            "(unqualified: along the search path). Repeat for more.",
            metavar="NAME",
        ),
    ],
    window: Annotated[
        str,
        typer.Option(
            "--for",
            help="How long to watch the workload (e.g. 30s, 5min); Ctrl-C ends it early and "
            "still writes the profile.",
            metavar="DURATION",
        ),
    ] = "5min",
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="Write the profile (JSON) here.", metavar="FILE"),
    ] = DEFAULT_OUTPUT,
) -> None:
    """Capture tables' shape, statistics without values and workload into a profile, from a
    read-only session: what `run custom` replays on the sandbox. Needs pg_monitor (and SELECT
    on the tables for their column statistics); says what it could not see, and why.

    Example: vacuumlab capture postgresql://me@db/app --table 'app."Job Queue"' -o queue.json
    """
    from vacuumlab.collect.capture import capture

    seconds = seconds_of(window, "--for")
    assert seconds is not None
    if not output.parent.is_dir():
        raise VacuumlabError(f"cannot write {output}: no directory {output.parent}")
    profile = capture(dsn, tables, seconds, wait=_countdown, on_note=_note)
    write(output, profile.dump_json() + "\n")
    _summary(profile, output)


def _countdown(seconds: float) -> None:
    """The window, as a bar counting down on stderr; Ctrl-C ends it (the caller catches)."""
    with Progress(
        TextColumn("· capturing the workload"),
        BarColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bars:
        task = bars.add_task("window", total=seconds)
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            bars.update(task, completed=elapsed)
            time.sleep(min(0.25, seconds - elapsed))


def _note(note: Note) -> None:
    err.print(f"· {note.what}: {note.reason}", markup=False, highlight=False)


def _summary(profile: Profile, output: Path) -> None:
    source = (
        f"{len(profile.statements)} statements from pg_stat_statements"
        if profile.source == "pg_stat_statements"
        else "the table counters alone (no pg_stat_statements)"
    )
    out.print(f"wrote {output}: {profile.seconds:.0f} s window, {source}", markup=False)
    for table in profile.tables:
        r = table.rates
        out.print(
            f"  {table.shape.qualified}: {table.shape.rows:,.0f} rows, per second "
            f"{r.inserts:,.1f} inserts, {r.updates:,.1f} updates ({r.hot_share:.0%} HOT), "
            f"{r.deletes:,.1f} deletes; statements explain {table.explained:.0%}",
            markup=False,
        )
    if profile.literals:
        out.print(f"  literals kept from the DDL: {', '.join(profile.literals)}", markup=False)
