"""The sandbox command group (the throwaway PostgreSQL the lab runs on) and the demo."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from typing import Annotated

import typer

from vacuumlab.cli.options import DataDir, Format, FormatOpt, PgBinOpt, WordsCommand, err, out
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.ports import refuse_port
from vacuumlab.pg.sandbox import Sandbox

sandbox_app = typer.Typer(
    help="Manage the throwaway PostgreSQL the lab runs on.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


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
        typer.Option(
            "--set", help="A setting to apply, NAME=VALUE; repeat for more.", metavar="NAME=VALUE"
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=65535,
            help="Listen on this TCP port from now on [default: the port the sandbox was "
            "given when it was created].",
            show_default=False,
            metavar="PORT",
        ),
    ] = None,
) -> None:
    """Start a long-lived sandbox (created on first use); it runs until `sandbox stop`.

    The sandbox keeps its port across restarts, so its URL stays valid; it moves only when
    that port is taken, and says so.

    Example: vacuumlab sandbox start --port 54329 --set autovacuum_naptime=1s
    """
    settings = _settings(set_ or [])
    refuse_port(settings)  # before starting, so a refused request changes nothing
    sandbox = Sandbox.start(data_dir, pg_bin=pg_bin, keep=True, port=port)
    for notice in sandbox.notices:
        err.print(notice)
    if settings:
        for change in sandbox.configure(settings):
            err.print(f"set {change.name} = {change.value}")
    status = sandbox.status()
    out.print(f"PostgreSQL {status.major} running in {status.directory}")
    out.print(f"connect with: {status.dsn}")


@sandbox_app.command("status")
def sandbox_status(
    data_dir: DataDir = None,
    fmt: FormatOpt = Format.table,
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
    database: Annotated[
        str, typer.Option(help="Database to name in the URL.", metavar="NAME")
    ] = "postgres",
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


@sandbox_app.command("configure", cls=WordsCommand)
def sandbox_configure(
    settings: Annotated[
        list[str],
        typer.Argument(help="NAME=VALUE pairs; VALUE empty resets.", metavar="NAME=VALUE"),
    ],
    data_dir: DataDir = None,
) -> None:
    """Change server settings, validated first; restarts when a setting needs it.

    Example: vacuumlab sandbox configure autovacuum_naptime=10s shared_buffers=256MB
    """
    request = {k: (v or None) for k, v in _settings(settings).items()}
    for change in Sandbox.open(data_dir).configure(request):
        how = "restarted" if change.needs_restart else "reloaded"
        out.print(f"{change.name} = {change.value or 'DEFAULT'} ({how})")


def demo(
    data_dir: DataDir = None,
    pg_bin: PgBinOpt = None,
    seconds: Annotated[
        int, typer.Option(min=1, help="How long pgbench churns.", metavar="SECONDS")
    ] = 20,
) -> None:
    """Churn a few tables on the sandbox, then print a snapshot of where vacuum stands.

    Example: vacuumlab demo --seconds 30
    """
    from vacuumlab import demo as demo_job
    from vacuumlab.report.snapshot.text import render

    with Sandbox.start(data_dir, pg_bin=pg_bin) as sandbox:
        err.print(f"sandbox: PostgreSQL {sandbox.bin.major} in {sandbox.directory}")
        for notice in sandbox.notices:
            err.print(notice)
        snap = demo_job.run(sandbox, seconds=seconds, progress=lambda s: err.print(f"· {s}"))
    out.print(render(snap))
