"""``vacuumlab run custom``: a user's own table and workload, as a captured profile or as a
schema file and pgbench scripts. Every file is read and checked here, before any server
starts: a bad one is a one-line error."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from vacuumlab.cli.run import ClientsOpt, JobsOpt, ResumeOpt, StepRepeatOpt, study_command
from vacuumlab.errors import VacuumlabError
from vacuumlab.records import custom_spec
from vacuumlab.records.custom import CustomConfig, Script

#: pgbench's meta-commands (pgbench.c), to refuse a script with a mistyped one before it runs.
_META = {"set", "setshell", "shell", "sleep", "if", "elif", "else", "endif", "gset", "aset",
         "startpipeline", "endpipeline", "syncpipeline"}  # fmt: skip


def read_text(path: Path, what: str) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise VacuumlabError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise VacuumlabError(f"{what} {path} is not UTF-8 text") from None
    if not text.strip():
        raise VacuumlabError(f"{what} {path} is empty")
    return text


def parse_script(spec: str) -> Script:
    """``file.sql`` or ``file.sql@3``, as pgbench's ``-f``: the file read and checked."""
    name, at, weight = spec.rpartition("@")
    if not at or not weight.isdigit():
        name, weight = spec, "1"
    path = Path(name)
    text = read_text(path, "script")
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("\\"):
            command = stripped[1:].split(maxsplit=1)[0].lower() if len(stripped) > 1 else ""
            if command not in _META:
                raise VacuumlabError(
                    f"script {path}, line {number}: unknown pgbench meta-command \\{command}"
                )
    return Script(path.name, text, int(weight))


def _profile(path: Path, scale: float | None) -> dict[str, Any]:
    from vacuumlab.records.profile import load_profile
    from vacuumlab.studies.custom_replay import plan

    profile = load_profile(path)
    plan(profile, 1.0 if scale is None else scale)  # refuses what it cannot build, now
    return profile.model_dump(mode="json")


_PROFILE_HELP = "A workload profile from `vacuumlab capture` to replay."
_SCHEMA_HELP = "SQL that creates your tables (run with schema vacuumlab first on the path)."
_SCRIPT_HELP = (
    "A pgbench script file, FILE or FILE@WEIGHT (a weight as pgbench's -f takes); repeat "
    "the option for more."
)
_STEPS_HELP = (
    "TOML file of [[step]] tables (name, scope, settings), as run churn takes; each step runs "
    "on the server's settings as they were before the run plus its own."
)


@study_command(
    CustomConfig,
    (
        custom_spec.PUBLICATION,
        "Your own table and workload under settings steps: a profile from `vacuumlab "
        "capture` replayed with synthetic rows at the captured rates (the report checks the "
        "replayed rates against the captured ones), or your schema and pgbench scripts: no "
        "published work is reproduced.",
        "vacuumlab run custom --profile profile.json --scale 0.1 --steps steps.toml",
    ),
    "quick (the only one; clients and threads suit the machine).",
)
def run_custom(
    profile: Annotated[
        Path | None, typer.Option("--profile", help=_PROFILE_HELP, metavar="FILE")
    ] = None,
    scale: Annotated[
        float | None,
        typer.Option(help="Share of the captured rows and rates to replay.", metavar="FACTOR"),
    ] = None,
    schema: Annotated[
        Path | None, typer.Option("--schema", help=_SCHEMA_HELP, metavar="FILE")
    ] = None,
    script: Annotated[
        list[str] | None, typer.Option("--script", help=_SCRIPT_HELP, metavar="SCRIPT")
    ] = None,
    rate: Annotated[
        float | None,
        typer.Option(
            help="Total transactions per second of the scripts (pgbench -R) "
            "[default: unthrottled].",
            show_default=False,
            metavar="TPS",
        ),
    ] = None,
    steps: Annotated[Path | None, typer.Option("--steps", help=_STEPS_HELP, metavar="FILE")] = None,
    seconds: Annotated[
        int | None, typer.Option(help="Load per step after the warm-up.", metavar="SECONDS")
    ] = None,
    warmup: Annotated[
        int | None,
        typer.Option(help="Seconds of load before each step's measured ones.", metavar="SECONDS"),
    ] = None,
    clients: ClientsOpt = None,
    jobs: JobsOpt = None,
    repeat: StepRepeatOpt = None,
    resume: ResumeOpt = None,
) -> dict[str, Any]:
    from vacuumlab.studies.steps import load_steps

    if resume is not None:  # a resumed run keeps the workload and steps it stored
        return {}
    return {
        "steps": load_steps(steps) if steps is not None else None,
        "profile": _profile(profile, scale) if profile is not None else None,
        "profile_file": str(profile) if profile is not None else None,
        "schema": read_text(schema, "schema file") if schema is not None else None,
        "schema_file": str(schema) if schema is not None else None,
        "scripts": tuple(parse_script(s) for s in script) if script else None,
        "scale": scale,
        "rate": rate,
        "seconds": seconds,
        "warmup": warmup,
        "clients": clients,
        "jobs": jobs,
        "repeat": repeat,
    }
