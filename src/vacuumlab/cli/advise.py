"""Inspecting a server read-only: the snapshot and the advice."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import RenderableType

from vacuumlab.cli.options import DataDir, DsnArg, Format, LimitOpt, err, out, render_text, write
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
    fmt: Annotated[
        Format, typer.Option("--format", help="table or json", metavar="FORMAT")
    ] = Format.table,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to this file, not stdout.", metavar="FILE"),
    ] = None,
    input_: Annotated[
        Path | None,
        typer.Option(
            "--input", help="Re-render a saved JSON snapshot; no server needed.", metavar="FILE"
        ),
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option("--save", help="Also save the snapshot as JSON here.", metavar="FILE"),
    ] = None,
    exact: ExactOpt = False,
    limit: LimitOpt = 25,
    data_dir: DataDir = None,
) -> None:
    """Collect, read-only, everything vacuum depends on, in a fixed number of queries.

    Example: vacuumlab snapshot postgresql://postgres@localhost/app --format json -o snap.json
    """
    from vacuumlab.records.snapshot import load_snapshot
    from vacuumlab.report.snapshot_text import render

    if input_ is not None:
        if dsn is not None or exact:
            raise VacuumlabError("--input re-renders a saved snapshot: give no DSN and no --exact")
        snap = load_snapshot(input_)
    else:
        snap = _collect(dsn or _sandbox_dsn(data_dir), exact=exact)
    if save is not None:
        write(save, snap.dump_json() + "\n")
    if fmt is Format.json:
        _emit(snap.dump_json() + "\n", output)
    else:
        _show(render(snap, limit=limit), output)


def _collect(dsn: str, *, exact: bool) -> Snapshot:
    """A snapshot of the server; with ``exact``, the bloat probe's figures travel in it."""
    from vacuumlab.collect.exact import with_exact
    from vacuumlab.collect.snapshot import collect
    from vacuumlab.pg.connect import connect

    with connect(dsn) as session:
        snap = collect(session)
        return with_exact(session, snap) if exact else snap


def _emit(text: str, output: Path | None) -> None:
    """Text to stdout, or to the file ``--output`` names."""
    if output is None:
        sys.stdout.write(text)
    else:
        write(output, text)


def _show(renderable: RenderableType, output: Path | None) -> None:
    """A table view on the terminal, or as plain text in the file ``--output`` names."""
    if output is None:
        out.print(renderable)
    else:
        write(output, render_text(renderable))


def _sandbox_dsn(data_dir: Path | None) -> str:
    sandbox = Sandbox.open(data_dir)
    if not sandbox.is_running():
        raise VacuumlabError(
            f"no DSN given and no sandbox running in {sandbox.directory}: "
            "pass a DSN or run `vacuumlab sandbox start`"
        )
    return sandbox.dsn


class AdviceFormat(StrEnum):
    table = "table"
    json = "json"
    md = "md"
    html = "html"


def _seconds(text: str | None, option: str = "--interval") -> float | None:
    """``60``, ``60s``, ``2min`` → seconds."""
    if text is None:
        return None
    units = {"": 1, "s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600}
    number = text.strip().rstrip("smhinec")
    unit = text.strip()[len(number) :]
    try:
        value = float(number) * units[unit]
    except (ValueError, KeyError):
        raise VacuumlabError(f"{option} takes seconds, e.g. 60s or 2min, not {text!r}") from None
    if value <= 0:
        raise VacuumlabError(f"{option} must be positive")
    return value


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
    fmt: Annotated[
        AdviceFormat, typer.Option("--format", help="table, json, md or html", metavar="FORMAT")
    ] = AdviceFormat.table,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file.", metavar="FILE")
    ] = None,
    input_: Annotated[
        list[Path] | None,
        typer.Option(
            "--input",
            help="Advise from saved snapshot JSON (one, or two for rates).",
            metavar="FILE",
        ),
    ] = None,
    exact: ExactOpt = False,
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
    """
    if verify or verify_for is not None or allow_alter_system:
        _verify(dsn, interval, verify_for, allow_alter_system, fmt, output, input_, exact,
                data_dir, verify=verify)  # fmt: skip
        return
    from vacuumlab.advise import advise
    from vacuumlab.collect.advice import collect_advice
    from vacuumlab.records.snapshot import load_snapshot
    from vacuumlab.report.advice_text import render

    seconds = _seconds(interval)
    if input_:
        if dsn is not None or len(input_) > 2:
            raise VacuumlabError("--input takes one or two snapshot files, and no DSN")
        snapshots = [load_snapshot(path) for path in input_]
        advice = advise(snapshots[0], snapshots[1] if len(snapshots) == 2 else None)
    else:
        advice, _ = collect_advice(
            dsn or _sandbox_dsn(data_dir), interval=seconds, exact=exact, on_wait=_waiting
        )
    if fmt is AdviceFormat.table:
        _show(render(advice, limit=limit), output)
    else:
        _emit(_advice_text(advice, fmt), output)


def _verify(
    dsn: str | None,
    interval: str | None,
    verify_for: str | None,
    allow_alter_system: bool,
    fmt: AdviceFormat,
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
    if fmt is AdviceFormat.html:
        raise VacuumlabError("--verify writes table, md or json")
    seconds = _seconds(interval)
    if seconds is None:
        raise VacuumlabError("--verify needs --interval (e.g. 30s): the advice needs rates")
    window = _seconds(verify_for, "--verify-for") or seconds
    if dsn is None:
        sandbox = Sandbox.open(data_dir)
        target = Target.of_sandbox(_running(sandbox))
        dsn = sandbox.dsn
    else:
        target = Target.of_dsn(dsn, allow_alter_system=True, pg_bin=None)
    least, most = seconds + 2 * window, seconds + 3 * window
    err.print(f"· --verify takes {least:.0f} to {most:.0f} s: keep the workload running throughout")
    result = run_verification(dsn, target, interval=seconds, window=window, on_step=_step)
    if fmt is AdviceFormat.table:
        _show(render(result), output)
    elif fmt is AdviceFormat.md:
        _emit(render_markdown(result), output)
    else:
        _emit(result.dump_json() + "\n", output)


def _running(sandbox: Sandbox) -> Sandbox:
    if not sandbox.is_running():
        raise VacuumlabError(
            f"no DSN given and no sandbox running in {sandbox.directory}: "
            "run `vacuumlab sandbox start`, or pass a DSN with --allow-alter-system"
        )
    return sandbox


def _step(text: str) -> None:
    err.print(f"· {text}")


def _waiting(seconds: float) -> None:
    err.print(f"· waiting {seconds:.0f} s for a second snapshot (rates)")


def _advice_text(advice: Any, fmt: AdviceFormat) -> str:
    if fmt is AdviceFormat.json:
        return str(advice.dump_json()) + "\n"
    if fmt is AdviceFormat.md:
        from vacuumlab.report.advice_md import render_markdown

        return render_markdown(advice)
    from vacuumlab.report.advice_html import render_html

    return render_html(advice)
