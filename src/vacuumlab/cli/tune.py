"""``vacuumlab tune``: the settings for a captured table, searched on the simulator and proven on
a replay of its workload. Every file is read and checked here, before any server starts: a bad
profile, a bad space file, a space with nothing to search and a budget too short for one trial
are each a one-line error."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from vacuumlab.cli.options import (
    DataDir,
    PgBinOpt,
    PgOpt,
    ReportDirOpt,
    StoreOpt,
    installation,
    seconds_of,
)
from vacuumlab.cli.run import ClientsOpt, ExecutorOpt, JobsOpt, run_study
from vacuumlab.errors import VacuumlabError
from vacuumlab.lab.targets import Where

_OBJECTIVE_HELP = (
    "dead (the busiest table's dead-tuple peak; latency must not get significantly worse), "
    "latency (its p99) or both (a Pareto front of the two)."
)
_SPACE_HELP = (
    'TOML file narrowing the search: [server] and [table."schema.name"] sections, each '
    "setting = [low, high], { levels = [...] }, a fixed value, or false (docs/tune.md) "
    "[default: every setting that can matter for the profile's tables]."
)
_BUDGET_HELP = (
    "Wall time the tune may take, e.g. 30m or 2h; no trial starts that cannot end within it "
    "[default: none]."
)


def tune_command(
    profile: Annotated[
        Path | None,
        typer.Option(
            "--profile",
            help="A workload profile from `vacuumlab capture` (needed unless --resume).",
            metavar="FILE",
        ),
    ] = None,
    objective: Annotated[
        str, typer.Option("--objective", help=_OBJECTIVE_HELP, metavar="OBJECTIVE")
    ] = "dead",
    budget: Annotated[
        str | None,
        typer.Option("--budget", help=_BUDGET_HELP, show_default=False, metavar="DURATION"),
    ] = None,
    trials: Annotated[
        int,
        typer.Option(
            "--trials", help="Measured trials, the three reference trials included.", metavar="N"
        ),
    ] = 9,
    confirm: Annotated[
        int,
        typer.Option(
            "--confirm",
            help="Extra measurements of the best trial and of the "
            "current settings, for the verdict.",
            metavar="N",
        ),
    ] = 2,
    candidates: Annotated[
        int,
        typer.Option("--candidates", help="Candidates the simulator scores first.", metavar="N"),
    ] = 2000,
    space: Annotated[Path | None, typer.Option("--space", help=_SPACE_HELP, metavar="FILE")] = None,
    scale: Annotated[
        float,
        typer.Option(
            "--scale", help="Share of the captured rows and rates to replay.", metavar="FACTOR"
        ),
    ] = 1.0,
    seconds: Annotated[
        int, typer.Option("--seconds", help="Load per trial after the warm-up.", metavar="SECONDS")
    ] = 60,
    warmup: Annotated[
        int,
        typer.Option(
            "--warmup", help="Seconds of load before each trial's measured ones.", metavar="SECONDS"
        ),
    ] = 10,
    clients: ClientsOpt = None,
    jobs: JobsOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of both searches.", metavar="N")] = 0,
    executor: ExecutorOpt = "local",
    resume: Annotated[
        int | None, typer.Option("--resume", help="Continue an interrupted tune.", metavar="RUN")
    ] = None,
    store_path: StoreOpt = None,
    output: ReportDirOpt = None,
    pg: PgOpt = None,
    data_dir: DataDir = None,
    pg_bin: PgBinOpt = None,
) -> None:
    """Search a captured table's autovacuum settings on the simulator, then prove the best on
    a replay of its own workload on the sandbox; print the SQL only when the win is larger
    than the noise.

    Example: vacuumlab tune --profile jobs.json --budget 30m

    Example: vacuumlab tune --profile jobs.json --space space.toml --trials 12 --scale 0.1
    """
    pg_bin, data_dir = installation(pg, pg_bin, data_dir)
    where = Where(None, False, data_dir, pg_bin)
    if resume is not None:
        if profile is not None or space is not None:
            raise VacuumlabError("--resume continues a stored tune: give no --profile or --space")
        run_study("tune", "quick", {}, where, resume, store_path, output, executor)
        return
    if profile is None:
        raise VacuumlabError("tune needs --profile FILE (from `vacuumlab capture`)")
    overrides = _overrides(profile, space, scale, objective)
    overrides |= {
        "budget_s": seconds_of(budget, "--budget"), "trials": trials, "confirm": confirm,
        "candidates": candidates, "seconds": seconds, "warmup": warmup, "clients": clients,
        "jobs": jobs, "seed": seed,
    }  # fmt: skip
    run_study("tune", "quick", overrides, where, None, store_path, output, executor)


def _overrides(profile_path: Path, space_path: Path | None, scale: float,
               objective: str) -> dict[str, Any]:  # fmt: skip
    """The profile and the space, read and checked; the space printed."""
    from vacuumlab.records.profile import load_profile
    from vacuumlab.studies.custom_replay import plan
    from vacuumlab.studies.tune.space import default_space, narrowed

    loaded = load_profile(profile_path)
    plan(loaded, scale)  # refuses a table it cannot build, now
    # Checked against the profile's version here, for the SQL; the server-wide settings a
    # trial sets are checked against the lab's own server when the run starts.
    lab_version = loaded.server_version_num
    found = default_space(loaded, lab_version)
    if space_path is not None:
        found = narrowed(found, space_path, loaded, lab_version)
    if not found.dimensions:
        raise VacuumlabError("the profile leaves nothing to search")
    return {
        "profile": loaded.model_dump(mode="json"),
        "profile_file": str(profile_path),
        "space": found.dimensions,
        "fixed": found.fixed,
        "left_out": found.left_out,
        "space_file": str(space_path) if space_path is not None else None,
        "scale": scale,
        "objective": objective,
    }
