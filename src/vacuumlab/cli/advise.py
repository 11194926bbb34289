"""Inspecting a server read-only: the snapshot and the advice."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from vacuumlab.cli.all_databases import (
    AllDatabasesOpt,
    advice_document,
    advice_from_files,
    advice_view,
    collect_advice,
    collect_snapshots,
    emit_whole,
    refuse_html,
    show_whole,
    snapshot_view,
    write_whole,
)
from vacuumlab.cli.options import (
    DataDir,
    DocumentFormat,
    DocumentFormatOpt,
    DsnArg,
    Format,
    FormatOpt,
    LimitOpt,
    OutputOpt,
    emit,
    err,
    sandbox_dsn,
    seconds_of,
    show,
    waiting_for_rates,
    write,
)
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.sandbox import Sandbox

if TYPE_CHECKING:
    from vacuumlab.records.snapshot import Snapshot

#: ``--exact`` of snapshot and advise: the bloat probe, opt-in because it reads tables.
ExactOpt = Annotated[
    bool, typer.Option("--exact", help="Measure bloat with pgstattuple_approx (reads tables).")
]


def snapshot(
    dsn: DsnArg = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    input_: Annotated[
        Path | None,
        typer.Option(
            "--input",
            help="Re-render a saved JSON snapshot, of one database or of all; no server needed.",
            metavar="FILE",
        ),
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option("--save", help="Also save the snapshot as JSON here.", metavar="FILE"),
    ] = None,
    exact: ExactOpt = False,
    all_databases: AllDatabasesOpt = False,
    limit: LimitOpt = 25,
    data_dir: DataDir = None,
) -> None:
    """Collect, read-only, everything vacuum depends on, in a fixed number of queries.

    Example: vacuumlab snapshot postgresql://postgres@localhost/app --format json -o snap.json

    Example: vacuumlab snapshot postgresql://me@db/app --all-databases --save server.json
    """
    from vacuumlab.records.all_databases import AllDatabasesSnapshot, load_snapshots

    if input_ is not None:
        if dsn is not None or exact:
            raise VacuumlabError("--input re-renders a saved snapshot: give no DSN and no --exact")
        snap = load_snapshots(input_)
        if all_databases and not isinstance(snap, AllDatabasesSnapshot):
            raise VacuumlabError(
                f"{input_} is a snapshot of one database: --all-databases with --input takes "
                "a file saved by `vacuumlab snapshot --all-databases`"
            )
    elif all_databases:
        snap = collect_snapshots(dsn, data_dir, exact=exact)
    else:
        snap = _collect(dsn or sandbox_dsn(data_dir), exact=exact)
    if isinstance(snap, AllDatabasesSnapshot):
        if save is not None:
            write_whole(save, snap.dump_json() + "\n")
        if fmt is Format.json:
            emit_whole(snap.dump_json() + "\n", output)
        else:
            show_whole(snapshot_view(snap, limit), output)
        return
    from vacuumlab.report.snapshot.text import render

    if save is not None:
        write(save, snap.dump_json() + "\n")
    if fmt is Format.json:
        emit(snap.dump_json() + "\n", output)
    else:
        show(render(snap, limit=limit), output)


def _collect(dsn: str, *, exact: bool) -> Snapshot:
    """A snapshot of the server; with ``exact``, the bloat probe's figures travel in it."""
    from vacuumlab.collect.exact import with_exact
    from vacuumlab.collect.snapshot import collect
    from vacuumlab.pg.connect import connect

    with connect(dsn) as session:
        snap = collect(session)
        return with_exact(session, snap) if exact else snap


def advise_command(
    dsn: DsnArg = None,
    interval: Annotated[
        str | None,
        typer.Option(
            "--interval",
            help="Take a second snapshot after this long (e.g. 60s) for rates.",
            metavar="DURATION",
        ),
    ] = None,
    fmt: DocumentFormatOpt = DocumentFormat.table,
    output: OutputOpt = None,
    input_: Annotated[
        list[Path] | None,
        typer.Option(
            "--input",
            help="Advise from saved snapshot JSON (one, or two for rates), of one database "
            "or of all (snapshot --all-databases).",
            metavar="FILE",
        ),
    ] = None,
    exact: ExactOpt = False,
    all_databases: AllDatabasesOpt = False,
    limit: LimitOpt = 25,
    data_dir: DataDir = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Then prove the advice: measure, apply what the simulator models, measure "
            "again and restore every setting. Changes the server: the sandbox, or a DSN with "
            "--allow-alter-system. Needs --interval.",
        ),
    ] = False,
    verify_for: Annotated[
        str | None,
        typer.Option(
            "--verify-for",
            help="Length of each measuring window of --verify, before and after the changes "
            "(e.g. 5min) [default: as long as --interval].",
            show_default=False,
            metavar="DURATION",
        ),
    ] = None,
    allow_alter_system: Annotated[
        bool,
        typer.Option(
            "--allow-alter-system",
            help="Let --verify change this server's settings (ALTER SYSTEM, ALTER TABLE); "
            "all are restored at the end.",
        ),
    ] = False,
) -> None:
    """Say, per table, where autovacuum stands and what to change, as SQL. Read-only, except
    with --verify, which applies the advice for a while and measures what it did.

    Example: vacuumlab advise postgresql://me@db/app --interval 60s --format md -o advice.md

    Example: vacuumlab advise --interval 30s --verify   (on the running sandbox)

    Example: vacuumlab advise postgresql://me@db/app --all-databases --format md -o all.md
    """
    if verify or verify_for is not None or allow_alter_system:
        if all_databases:
            raise VacuumlabError("--verify proves the advice for one database: no --all-databases")
        _verify(dsn, interval, verify_for, allow_alter_system, fmt, output, input_, exact,
                data_dir, verify=verify)  # fmt: skip
        return
    from vacuumlab.advise import advise
    from vacuumlab.lab.advice import collect_advice as collect_one
    from vacuumlab.records.all_databases import AllDatabasesAdvice
    from vacuumlab.report.advice.text import render

    seconds = seconds_of(interval)
    if all_databases:
        refuse_html(fmt)
    if input_:
        if dsn is not None or len(input_) > 2:
            raise VacuumlabError("--input takes one or two snapshot files, and no DSN")
        found = advice_from_files(input_, all_databases=all_databases)
        advice = found if isinstance(found, AllDatabasesAdvice) else advise(*found)
    elif all_databases:
        advice = collect_advice(dsn, data_dir, interval=seconds, exact=exact)
    else:
        advice, _ = collect_one(
            dsn or sandbox_dsn(data_dir), interval=seconds, exact=exact, on_wait=waiting_for_rates
        )
    if isinstance(advice, AllDatabasesAdvice):
        document = advice_document(advice, fmt)
        if document is None:
            show_whole(advice_view(advice, limit), output)
        else:
            emit_whole(document, output)
        return
    if fmt is DocumentFormat.table:
        show(render(advice, limit=limit), output)
    else:
        emit(_advice_document(advice, fmt), output)


def _verify(
    dsn: str | None,
    interval: str | None,
    verify_for: str | None,
    allow_alter_system: bool,
    fmt: DocumentFormat,
    output: Path | None,
    input_: list[Path] | None,
    exact: bool,
    data_dir: Path | None,
    *,
    verify: bool,
) -> None:
    """``--verify``: checked first (one line each), then run on the sandbox or the DSN."""
    from vacuumlab.lab.verify import verify as run_verification
    from vacuumlab.pg.target import Target
    from vacuumlab.report.verification import render, render_markdown

    if not verify:
        raise VacuumlabError("--verify-for and --allow-alter-system go with --verify")
    if dsn is not None and not allow_alter_system:
        raise VacuumlabError(
            "--verify changes server and table settings for a while: on a server you name, "
            "pass --allow-alter-system to allow it (everything is restored), or verify on the "
            "sandbox (no DSN)"
        )
    if input_ or exact:
        raise VacuumlabError("--verify measures a live server: give no --input and no --exact")
    if fmt is DocumentFormat.html:
        raise VacuumlabError("--verify writes table, md or json")
    seconds = seconds_of(interval)
    if seconds is None:
        raise VacuumlabError("--verify needs --interval (e.g. 30s): the advice needs rates")
    window = seconds_of(verify_for, "--verify-for") or seconds
    if dsn is None:
        sandbox = Sandbox.open(data_dir)
        target = Target.of_sandbox(_running(sandbox))
        dsn = sandbox.dsn
    else:
        target = Target.of_dsn(dsn, allow_alter_system=True, pg_bin=None)
    # How long it takes is known once the advice says whether there is anything to change:
    # verify() tells it then (nothing to measure when nothing is changed).
    err.print("· --verify: keep the workload running throughout")
    result = run_verification(dsn, target, interval=seconds, window=window, on_step=_step)
    if fmt is DocumentFormat.table:
        show(render(result), output)
    elif fmt is DocumentFormat.md:
        emit(render_markdown(result), output)
    else:
        emit(result.dump_json() + "\n", output)


def _running(sandbox: Sandbox) -> Sandbox:
    if not sandbox.is_running():
        raise VacuumlabError(
            f"no DSN given and no sandbox running in {sandbox.directory}: "
            "run `vacuumlab sandbox start`, or pass a DSN with --allow-alter-system"
        )
    return sandbox


def _step(text: str) -> None:
    err.print(f"· {text}")


def _advice_document(advice: Any, fmt: DocumentFormat) -> str:
    if fmt is DocumentFormat.json:
        return str(advice.dump_json()) + "\n"
    if fmt is DocumentFormat.md:
        from vacuumlab.report.advice.markdown import render_markdown

        return render_markdown(advice)
    from vacuumlab.report.advice.html import render_html

    return render_html(advice)
