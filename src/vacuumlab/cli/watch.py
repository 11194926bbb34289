"""``vacuumlab watch``: autovacuum live, full screen, read-only."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from vacuumlab.cli.options import DataDir, DsnArg, StoreOpt, out, sandbox_dsn
from vacuumlab.errors import VacuumlabError

if TYPE_CHECKING:
    from vacuumlab.records.live import Refresh
    from vacuumlab.watch.source import Refreshes

DEFAULT_REFRESH_S = 2.0


def watch_command(
    dsn: DsnArg = None,
    refresh: Annotated[
        float,
        typer.Option("--refresh", help="Seconds from one refresh to the next.", metavar="SECONDS"),
    ] = DEFAULT_REFRESH_S,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="Append each refresh (its figures and its snapshot) to the results store as "
            "a run of kind watch; `vacuumlab report RUN` draws its timelines.",
        ),
    ] = False,
    store_path: StoreOpt = None,
    all_databases: Annotated[
        bool,
        typer.Option(
            "--all-databases",
            help="Watch every database of the server that accepts connections, read one "
            "after another at each refresh: the queue ranks their relations together as "
            "database:schema.table, and a database the role may not connect to is a note "
            "line with its GRANT, e.g. vacuumlab watch postgresql://monitor@db/postgres "
            "--all-databases [default: the DSN's database only].",
            show_default=False,
        ),
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Watch autovacuum live, full screen, read-only: the vacuums running (phase, heap
    scanned and vacuumed, index passes, dead items, delay, ETA), the queue in the order
    autovacuum would take the tables (progress to threshold, dead tuples/s, predicted start),
    workers busy and the cost limit each gets, what holds vacuum back, and wraparound.

    Each refresh asks a fixed number of statements in one read-only session (per database
    with --all-databases); keys never add any. Keys: s sort, / filter, p or space pause,
    Enter details, ? help, q quit.

    Example: vacuumlab watch postgresql://monitor@db/app --refresh 5

    Every database: vacuumlab watch postgresql://monitor@db/postgres --all-databases
    """
    if not math.isfinite(refresh) or refresh <= 0:
        raise VacuumlabError(f"--refresh takes a number of seconds above 0, not {refresh:g}")
    if record and all_databases:
        raise VacuumlabError(
            "--record keeps one database's refreshes: watch each database on its own to record it"
        )
    from vacuumlab.watch.all_databases import ServerSource
    from vacuumlab.watch.source import Source

    server = dsn or sandbox_dsn(data_dir)
    source: Refreshes = ServerSource(server) if all_databases else Source(server)
    source.open()  # a wrong DSN, host or password: say so now, not in the full screen
    try:
        _terminal()
        recorder = _recorder(store_path, refresh, source.dsn) if record else None
    except BaseException:
        source.close()
        raise
    _run(source, refresh, recorder)
    if recorder is not None:
        _recorded(recorder)


def _recorded(recorder: Recorder) -> None:
    if recorder.run_id is not None:
        out.print(
            f"recorded {recorder.refreshes} refreshes as run {recorder.run_id} in "
            f"{recorder.path}: vacuumlab report {recorder.run_id}"
        )
    if recorder.error is not None:
        raise VacuumlabError(f"recording stopped: {recorder.error}")


def _terminal() -> None:
    # Textual draws on stderr (its Linux driver writes to sys.__stderr__) and reads stdin.
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise VacuumlabError(
            "vacuumlab watch needs a terminal; for a machine-readable view use "
            "`vacuumlab snapshot --format json` or `vacuumlab exporter`"
        )


def _recorder(store_path: Path | None, every_s: float, dsn: str) -> Recorder:
    from vacuumlab.lab.targets import default_store
    from vacuumlab.pg.connect import redact
    from vacuumlab.watch.recorder import Recorder

    return Recorder.check(store_path or default_store(), every_s, redact(dsn))


def _run(source: Refreshes, every_s: float, recorder: Recorder | None) -> None:
    from vacuumlab.tui import watch

    def fetch() -> Refresh:
        refresh = source.refresh()
        if recorder is not None:
            recorder.append(refresh)
        return refresh

    def closing() -> None:
        source.close()
        if recorder is not None:
            recorder.close()

    watch(fetch, every_s=every_s, on_exit=closing)


if TYPE_CHECKING:
    from vacuumlab.watch.recorder import Recorder
