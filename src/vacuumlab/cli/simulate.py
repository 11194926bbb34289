"""``vacuumlab simulate``: the launcher and workers over the hours ahead, from two snapshots
or from a captured workload profile."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from vacuumlab.cli.options import (
    DataDir,
    DocumentFormat,
    DocumentFormatOpt,
    DsnArg,
    LimitOpt,
    OutputOpt,
    StoreOpt,
    emit,
    sandbox_dsn,
    seconds_of,
    show,
    waiting_for_rates,
)
from vacuumlab.errors import VacuumlabError

if TYPE_CHECKING:
    from vacuumlab.model.whatif import Change
    from vacuumlab.records.simulation import Simulation
    from vacuumlab.records.snapshot import Snapshot

#: Any version: the first check of a what-if, before the server's own is known.
_ANY_VERSION = 10**7


def simulate_command(
    dsn: DsnArg = None,
    interval: Annotated[
        str | None,
        typer.Option(
            "--interval",
            help="Time between the two snapshots the rates come from [default: 60s].",
            show_default=False,
            metavar="DURATION",
        ),
    ] = None,
    input_: Annotated[
        list[Path] | None,
        typer.Option(
            "--input",
            help="Two saved snapshots instead of a server, the earlier first: "
            "--input a.json --input b.json.",
            metavar="FILE",
        ),
    ] = None,
    run: Annotated[
        int | None,
        typer.Option(
            "--run",
            help="A period recorded by watch --record instead of a server: the rates between "
            "its first and last snapshots.",
            show_default=False,
            metavar="RUN",
        ),
    ] = None,
    store_path: StoreOpt = None,
    profile: Annotated[
        Path | None,
        typer.Option(
            "--profile",
            help="A workload profile (vacuumlab capture) instead of a server: its tables with "
            "their captured shape, rates and settings; --set names a table schema.table.",
            show_default=False,
            metavar="FILE",
        ),
    ] = None,
    hours: Annotated[
        float, typer.Option("--hours", help="How far ahead to simulate.", metavar="HOURS")
    ] = 24.0,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="A what-if: setting=value for the server, schema.table.setting=value for a "
            "table (schema.table.toast.setting=value for its TOAST relation). Repeatable.",
            show_default=False,
            metavar="SETTING=VALUE",
        ),
    ] = None,
    fmt: DocumentFormatOpt = DocumentFormat.table,
    output: OutputOpt = None,
    limit: LimitOpt = 25,
    data_dir: DataDir = None,
) -> None:
    """Simulate autovacuum's launcher and workers over the hours ahead: per table, how often
    it is vacuumed, how long that takes, its peak of dead tuples and its wait for a worker.

    Example: vacuumlab simulate postgresql://me@db/app --interval 2min --hours 24
    --set autovacuum_naptime=15s --set public.jobs.autovacuum_vacuum_scale_factor=0.01

    Example: vacuumlab simulate --run 7   (a period that watch --record kept)

    Example: vacuumlab simulate --profile queue.json --set autovacuum_naptime=10s
    """
    from vacuumlab.model.forecast import forecast
    from vacuumlab.model.whatif import parse

    if hours <= 0 or hours > 24 * 31:
        raise VacuumlabError("--hours takes a number above 0 and up to 744 (31 days)")
    changes = [parse(text) for text in sets or []]
    changes = [_checked(c, _ANY_VERSION) for c in changes]
    if profile is not None:
        if dsn is not None or input_ or run is not None or interval is not None:
            raise VacuumlabError(
                "--profile simulates a captured profile, its rates over its own window: give "
                "no DSN, --input, --run or --interval"
            )
        _output(_profiled(profile, hours, changes), fmt, output, limit)
        return
    if run is not None:
        if dsn is not None or input_:
            raise VacuumlabError("--run replays a recorded watch: give no DSN and no --input")
        before, after = _recorded(run, store_path)
    else:
        before, after = _snapshots(dsn, interval or "60s", input_, data_dir)
    changes = [_checked(c, after.server.version_num) for c in changes]
    sim = forecast(before, after, hours=hours, changes=changes)
    _output(sim, fmt, output, limit)


def _checked(change: Change, version: int) -> Change:
    """The value in the setting's base unit, checked against its type, range and version."""
    from dataclasses import replace

    from vacuumlab.model.knobs import knob

    k = knob(change.setting)
    value = k.in_base_unit(change.value)
    k.check(value, change.scope, version)
    return replace(change, value=value)


def _profiled(path: Path, hours: float, changes: list[Change]) -> Simulation:
    """The profile's tables over ``hours``, the what-ifs checked against its server version."""
    from vacuumlab.model.profiled import forecast_profile
    from vacuumlab.records.profile import load_profile

    captured = load_profile(path)
    changes = [_checked(c, captured.server_version_num) for c in changes]
    return forecast_profile(captured, hours=hours, changes=changes)


def _recorded(run_id: int, store_path: Path | None) -> tuple[Snapshot, Snapshot]:
    """The first and last snapshots of a run that ``watch --record`` kept."""
    from vacuumlab.lab.targets import existing_store
    from vacuumlab.records.watch_spec import STUDY, watched_period
    from vacuumlab.store import Store

    with Store.open(existing_store(store_path)) as store:
        found = store.run(run_id)
        if found.study != STUDY:
            raise VacuumlabError(
                f"run {run_id} is a {found.study} run: --run replays a watch --record run"
            )
        points = [point.metrics for point in store.points(run_id)]
    return watched_period(points, f"run {run_id}")


def _snapshots(
    dsn: str | None, interval: str, input_: list[Path] | None, data_dir: Path | None
) -> tuple[Snapshot, Snapshot]:
    from vacuumlab.records.snapshot import load_snapshot

    if input_:
        if dsn is not None or len(input_) != 2:
            raise VacuumlabError("--input takes two snapshot files, the earlier first, and no DSN")
        before, after = (load_snapshot(path) for path in input_)
        if after.taken_at <= before.taken_at:
            raise VacuumlabError(f"{input_[1]} was taken before {input_[0]}: give them in order")
        return before, after
    seconds = seconds_of(interval)
    assert seconds is not None
    from vacuumlab.lab.advice import collect_two

    return collect_two(
        dsn or sandbox_dsn(data_dir),
        seconds,
        on_wait=waiting_for_rates,
        application_name="vacuumlab-simulate",
    )


def _output(sim: Simulation, fmt: DocumentFormat, output: Path | None, limit: int) -> None:
    if fmt is DocumentFormat.table:
        from vacuumlab.report.simulation.text import render

        show(render(sim, limit=limit), output)
    elif fmt is DocumentFormat.json:
        emit(sim.dump_json() + "\n", output)
    elif fmt is DocumentFormat.md:
        from vacuumlab.report.simulation.markdown import render_markdown

        emit(render_markdown(sim), output)
    else:
        from vacuumlab.report.simulation.html import render_html

        emit(render_html(sim), output)
