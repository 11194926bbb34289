"""The ``vacuumlab`` command: parses, calls the library, picks an output format.

Errors the user can act on (:class:`VacuumlabError`) print one line and exit with 2; Ctrl-C
and SIGTERM unwind cleanly (servers started here are stopped) and exit with 130.
"""

from __future__ import annotations

import io
import json
import os
import sys
from dataclasses import asdict
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, RenderableType

from vacuumlab import __version__
from vacuumlab.errors import Interrupted, VacuumlabError
from vacuumlab.pg.sandbox import Sandbox, default_dir, interrupt_on_signals

app = typer.Typer(
    help="Measure, explain and tune PostgreSQL vacuum for high-churn tables.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
sandbox_app = typer.Typer(
    help="Manage the throwaway PostgreSQL the lab runs on.", no_args_is_help=True
)
app.add_typer(sandbox_app, name="sandbox")

#: Width of text written to a file or a pipe: wide enough for the tables view.
PIPE_WIDTH = 160
out = Console(highlight=False)
if not out.is_terminal:
    out = Console(highlight=False, width=PIPE_WIDTH)
err = Console(stderr=True, highlight=False)


class Format(StrEnum):
    table = "table"
    json = "json"


DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Sandbox directory [default: $VACUUMLAB_HOME/sandbox, or ~/vacuumlab/sandbox].",
        show_default=False,
    ),
]
PgBinOpt = Annotated[
    Path | None,
    typer.Option(
        "--pg-bin",
        help="Use this PostgreSQL bin directory instead of the embedded PostgreSQL 18, "
        "e.g. /usr/lib/postgresql/15/bin.",
    ),
]


def _settings(pairs: list[str]) -> dict[str, str | None]:
    settings: dict[str, str | None] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise VacuumlabError(f"expected NAME=VALUE, got {pair!r}")
        settings[name.strip()] = value.strip()
    return settings


@sandbox_app.command("start")
def sandbox_start(
    data_dir: DataDir = None,
    pg_bin: PgBinOpt = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", help="A setting to apply, NAME=VALUE; repeat for more."),
    ] = None,
) -> None:
    """Start a long-lived sandbox (created on first use); it runs until `sandbox stop`.

    Example: vacuumlab sandbox start --set autovacuum_naptime=1s
    """
    sandbox = Sandbox.start(data_dir, pg_bin=pg_bin, keep=True)
    if set_:
        for change in sandbox.configure(_settings(set_)):
            err.print(f"set {change.name} = {change.value}")
    status = sandbox.status()
    out.print(f"PostgreSQL {status.major} running in {status.directory}")
    out.print(f"connect with: {status.dsn}")


@sandbox_app.command("status")
def sandbox_status(
    data_dir: DataDir = None,
    fmt: Annotated[Format, typer.Option("--format", help="table or json")] = Format.table,
) -> None:
    """Say whether the sandbox exists and runs, and where.

    Example: vacuumlab sandbox status --format json
    """
    status = Sandbox.open(data_dir).status()
    if fmt is Format.json:
        record = asdict(status) | {"dsn": status.dsn}
        out.print_json(json.dumps(record, default=str))
        return
    out.print(f"directory:   {status.directory}")
    out.print(f"initialized: {'yes' if status.initialized else 'no'}")
    state = f"running (pid {status.pid})" if status.running else "stopped"
    out.print(f"server:      {state}")
    out.print(f"version:     {status.major or '-'}   binaries: {status.bin_dir}")
    if status.dsn:
        out.print(f"dsn:         {status.dsn}")


@sandbox_app.command("url")
def sandbox_url(
    data_dir: DataDir = None,
    database: Annotated[str, typer.Option(help="Database to name in the URL.")] = "postgres",
) -> None:
    """Print the connection URL of the running sandbox.

    Example: psql "$(vacuumlab sandbox url)"
    """
    out.print(Sandbox.open(data_dir).dsn_for(database))


@sandbox_app.command(
    "psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def sandbox_psql(ctx: typer.Context, data_dir: DataDir = None) -> None:
    """Open psql on the running sandbox; extra arguments go to psql.

    Example: vacuumlab sandbox psql -- -c 'SELECT version()'
    """
    sandbox = Sandbox.open(data_dir)
    psql = str(sandbox.bin.exe("psql"))
    dsn = sandbox.dsn
    sys.stdout.flush()
    os.execv(psql, [psql, *ctx.args, dsn])


@sandbox_app.command("stop")
def sandbox_stop(data_dir: DataDir = None) -> None:
    """Stop the sandbox's server; its data stays for the next start.

    Example: vacuumlab sandbox stop
    """
    sandbox = Sandbox.open(data_dir)
    was_running = sandbox.is_running()
    sandbox.stop()
    out.print("stopped" if was_running else "was not running")


@sandbox_app.command("destroy")
def sandbox_destroy(
    data_dir: DataDir = None,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Stop the sandbox and delete its directory with all its data.

    Example: vacuumlab sandbox destroy --yes
    """
    sandbox = Sandbox.open(data_dir)
    if not yes and not typer.confirm(f"delete {sandbox.directory}?"):
        raise typer.Exit(1)
    sandbox.destroy()
    out.print(f"deleted {sandbox.directory}")


@sandbox_app.command("configure")
def sandbox_configure(
    settings: Annotated[list[str], typer.Argument(help="NAME=VALUE pairs; VALUE empty resets.")],
    data_dir: DataDir = None,
) -> None:
    """Change server settings, validated first; restarts when a setting needs it.

    Example: vacuumlab sandbox configure autovacuum_naptime=10s shared_buffers=256MB
    """
    request = {k: (v or None) for k, v in _settings(settings).items()}
    for change in Sandbox.open(data_dir).configure(request):
        how = "restarted" if change.needs_restart else "reloaded"
        out.print(f"{change.name} = {change.value or 'DEFAULT'} ({how})")


@app.command("snapshot")
def snapshot(
    dsn: Annotated[
        str | None,
        typer.Argument(
            help="Server to inspect [default: the running sandbox].", show_default=False
        ),
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="table or json")] = Format.table,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file, not stdout.")
    ] = None,
    input_: Annotated[
        Path | None,
        typer.Option("--input", help="Re-render a saved JSON snapshot; no server needed."),
    ] = None,
    save: Annotated[
        Path | None, typer.Option("--save", help="Also save the snapshot as JSON here.")
    ] = None,
    limit: Annotated[int, typer.Option(help="Tables to list in the table view.")] = 25,
    data_dir: DataDir = None,
) -> None:
    """Collect, read-only, everything vacuum depends on, in a fixed number of queries.

    Example: vacuumlab snapshot postgresql://postgres@localhost/app --format json -o snap.json
    """
    from vacuumlab.pg.connect import connect
    from vacuumlab.report.snapshot_text import render
    from vacuumlab.stats.model import load_snapshot
    from vacuumlab.stats.snapshot import collect

    if input_ is not None:
        if dsn is not None:
            raise VacuumlabError("give a DSN or --input, not both")
        snap = load_snapshot(input_)
    else:
        with connect(dsn or _sandbox_dsn(data_dir)) as session:
            snap = collect(session)
    if save is not None:
        _write(save, snap.dump_json() + "\n")
    if fmt is Format.json:
        if output is None:
            sys.stdout.write(snap.dump_json() + "\n")
        else:
            _write(output, snap.dump_json() + "\n")
    elif output is None:
        out.print(render(snap, limit=limit))
    else:
        _write(output, _render_text(render(snap, limit=limit)))


def _render_text(renderable: RenderableType) -> str:
    """Plain text of a renderable, as written to a file."""
    buffer = io.StringIO()
    Console(file=buffer, width=PIPE_WIDTH, highlight=False, no_color=True).print(renderable)
    return buffer.getvalue()


def _sandbox_dsn(data_dir: Path | None) -> str:
    sandbox = Sandbox.open(data_dir)
    if not sandbox.is_running():
        raise VacuumlabError(
            f"no DSN given and no sandbox running in {sandbox.directory}: "
            "pass a DSN or run `vacuumlab sandbox start`"
        )
    return sandbox.dsn


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise VacuumlabError(f"cannot write {path}: {exc.strerror}") from None


@app.command("demo")
def demo(
    data_dir: DataDir = None,
    pg_bin: PgBinOpt = None,
    seconds: Annotated[int, typer.Option(min=1, help="How long pgbench churns.")] = 20,
) -> None:
    """Churn a few tables on the sandbox, then print a snapshot of where vacuum stands.

    Example: vacuumlab demo --seconds 30
    """
    from vacuumlab import demo as demo_job
    from vacuumlab.report.snapshot_text import render

    with Sandbox.start(data_dir, pg_bin=pg_bin) as sandbox:
        err.print(f"sandbox: PostgreSQL {sandbox.bin.major} in {sandbox.directory}")
        snap = demo_job.run(sandbox, seconds=seconds, progress=lambda s: err.print(f"· {s}"))
    out.print(render(snap))


@app.command("version")
def version() -> None:
    """Print vacuumlab's version.

    Example: vacuumlab version
    """
    out.print(__version__)


def main(argv: list[str] | None = None) -> None:
    """Entry point: one-line errors with exit code 2, never a traceback for bad input."""
    try:
        with interrupt_on_signals():
            app(args=argv, prog_name="vacuumlab")
    except Interrupted:
        err.print("interrupted")
        sys.exit(130)
    except VacuumlabError as exc:
        # Plain write: a console would wrap a long message onto several lines.
        sys.stderr.write(f"error: {' '.join(str(exc).split())}\n")
        sys.exit(2)


__all__ = ["app", "default_dir", "main"]
