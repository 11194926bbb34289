"""``vacuumlab run <study>``: each command turns its options into overrides of the study's
preset and hands them to the lab; the lab picks the target, checks ``--resume`` and runs."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from vacuumlab.cli.options import (
    DataDir,
    PgBinOpt,
    PgOpt,
    ReportDirOpt,
    StoreOpt,
    WorkMemOpt,
    err,
    installation,
    int_list,
    out,
    str_list,
)
from vacuumlab.cli.progress import RunDisplay
from vacuumlab.cli.report import render_report
from vacuumlab.errors import Interrupted, VacuumlabError
from vacuumlab.lab.targets import Where, default_store
from vacuumlab.records import (
    churn_spec,
    cost_driver_spec,
    fillfactor_spec,
    scheduling_spec,
    toast_spec,
)
from vacuumlab.records.churn import ChurnConfig
from vacuumlab.records.cost_driver import CostDriverConfig
from vacuumlab.records.fillfactor import FillfactorConfig
from vacuumlab.records.params import Config, field_names
from vacuumlab.records.publication import Publication
from vacuumlab.records.scheduling import SchedulingConfig
from vacuumlab.records.toast import ToastConfig
from vacuumlab.store import Store

run_app = typer.Typer(
    help="Run a study and record it in the results store.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _study_help(publication: Publication | None, what: str, example: str) -> str:
    """A run command's help: what it measures, the published work it reproduces (if any), an
    example."""
    source = f" Reproduces {publication.cite()}." if publication is not None else ""
    return f"{what}{source}\n\nExample: {example}"


_PRESET_HELP = (
    "quick (6 × 90 s), demo (the defaults against the post's final settings, 2 × 100 s) "
    "or paper (15 clients, 6 × 300 s)."
)
_WARMUP_HELP = "Seconds at the start of each step left out of the summary."
_CLIENTS_HELP = "pgbench clients [default: 4 per core]."
_JOBS_HELP = "pgbench threads [default: 1 per core]."
_STEPS_HELP = (
    "TOML file of [[step]] tables (name, scope, settings) instead of the post's six; each step "
    "runs on the server's settings as they were before the run plus its own."
)
#: Options the stepped studies (churn, custom) share with the same words.
ClientsOpt = Annotated[
    int | None, typer.Option(help=_CLIENTS_HELP, show_default=False, metavar="N")
]
JobsOpt = Annotated[int | None, typer.Option(help=_JOBS_HELP, show_default=False, metavar="N")]
StepRepeatOpt = Annotated[int | None, typer.Option(help="Repetitions of each step.", metavar="N")]
_CONTINUOUS_HELP = "Run the steps back to back on one table, as the post did."
_DSN_HELP = "Run on this server (its database, schema vacuumlab only), not the sandbox."
_ALTER_HELP = "With --dsn: allow server-wide settings (restored afterwards)."
_RESUME_HELP = "Finish an interrupted run: measure what it lacks."
_EXECUTOR_HELP = (
    "local (one point after another), ray (points side by side on a local Ray, one sandbox "
    "per point) or ray:ADDRESS (a running Ray cluster; docs/cluster.md)."
)
ExecutorOpt = Annotated[str, typer.Option("--executor", help=_EXECUTOR_HELP, metavar="EXECUTOR")]
DsnOpt = Annotated[str | None, typer.Option("--dsn", help=_DSN_HELP, metavar="DSN")]
AllowAlterOpt = Annotated[bool, typer.Option("--allow-alter-system", help=_ALTER_HELP)]
ResumeOpt = Annotated[int | None, typer.Option("--resume", help=_RESUME_HELP, metavar="RUN")]
_MANUAL_HELP = "Also measure each point with VACUUM (VERBOSE) and no cost delay: the pure work."

#: What every run command takes after its study's own options, in the order help shows them.
_SHARED = tuple(
    inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=option)
    for name, option, default in (
        ("dsn", DsnOpt, None),
        ("allow_alter_system", AllowAlterOpt, False),
        ("resume", ResumeOpt, None),
        ("executor", ExecutorOpt, "local"),
        ("store_path", StoreOpt, None),
        ("output", ReportDirOpt, None),
        ("pg", PgOpt, None),
        ("data_dir", DataDir, None),
        ("pg_bin", PgBinOpt, None),
    )
)
#: The decorated function: the study's own options in, the preset's overrides out.
Overrides = Callable[..., dict[str, Any]]


def study_command(
    config: type[Config],
    about: tuple[Publication | None, str, str],
    preset_help: str,
    *,
    alter_system: bool = True,
) -> Callable[[Overrides], Overrides]:
    """Register ``vacuumlab run <study>``: ``--preset`` (help ``preset_help``), the decorated
    function's options, then the options every run command shares (``--allow-alter-system``
    only when the study can change server settings). ``about`` is the help's publication,
    summary and example. The command runs the study with the overrides the function returns."""
    study = config.study
    shared = [p for p in _SHARED if alter_system or p.name != "allow_alter_system"]
    preset = inspect.Parameter(
        "preset", inspect.Parameter.KEYWORD_ONLY, default="quick",
        annotation=Annotated[str, typer.Option(help=preset_help, metavar="PRESET")],
    )  # fmt: skip

    def register(own: Overrides) -> Overrides:
        names = {p.name for p in shared}
        mine = [_preset_default(p, config) for p in _keyword_only(own) if p.name not in names]
        also = [p.name for p in _keyword_only(own) if p.name in names]  # shared, read by own

        def command(**options: Any) -> None:
            common = {p.name: options.pop(p.name) for p in shared}
            chosen = options.pop("preset")
            if common["dsn"] is not None and common["pg"] is not None:
                raise VacuumlabError("--pg starts a sandbox of that major: not with --dsn")
            pg_bin, data_dir = installation(common["pg"], common["pg_bin"], common["data_dir"])
            where = Where(common["dsn"], common.get("allow_alter_system", False), data_dir, pg_bin)
            overrides = own(**options, **{name: common[name] for name in also})
            run_study(study, chosen, overrides, where, *_places(common), common["executor"])

        params = [preset, *mine, *shared]
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        run_app.command(study, help=_study_help(*about))(command)
        return own

    return register


def _preset_default(p: inspect.Parameter, config: type[Config]) -> inspect.Parameter:
    """An option left to the preset shows each preset's value as its default in --help."""
    option = next(
        (m for m in getattr(p.annotation, "__metadata__", ()) if hasattr(m, "help")), None
    )
    field = _FIELD_OF.get(p.name, p.name)
    if p.default is not None or field not in field_names(config) or option is None:
        return p
    if "[default:" in (option.help or ""):
        return p  # it says its own, e.g. "4 per core"
    presets = config.presets().items()
    if not all(_plain(getattr(c, field)) for _, c in presets):
        return p  # e.g. churn's steps: the help names them ("the post's six")
    values = {name: _shown(getattr(c, field)) for name, c in presets}
    text = (
        next(iter(values.values()))
        if len(set(values.values())) == 1
        else ", ".join(f"{name} {value}" for name, value in values.items())
    )
    shown = copy.copy(option)
    shown.help = f"{option.help}  [default: {text}]"
    annotation = Annotated[p.annotation.__origin__, shown]  # type: ignore[name-defined]
    return p.replace(annotation=annotation)


#: Options whose config field has another name.
_FIELD_OF = {"dead": "dead_pcts"}


def _plain(value: object) -> bool:
    items = value if isinstance(value, tuple | list) else (value,)
    return all(isinstance(v, str | int | float | bool) for v in items)


def _shown(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, tuple | list):
        return ",".join(_shown(v).replace(",", "") for v in value)
    return str(value)


def _keyword_only(function: Callable[..., Any]) -> list[inspect.Parameter]:
    parameters = inspect.signature(function, eval_str=True).parameters.values()
    return [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in parameters]


def _places(common: Mapping[str, Any]) -> tuple[int | None, Path | None, Path | None]:
    """--resume, --store and --output, as run_study takes them."""
    return common["resume"], common["store_path"], common["output"]


@study_command(
    ChurnConfig,
    (
        churn_spec.PUBLICATION,
        "Queue churn under the post's six autovacuum settings, with a report.",
        "vacuumlab run churn --preset quick --clients 4",
    ),
    _PRESET_HELP,
)
def run_churn(
    seconds: Annotated[
        int | None, typer.Option(help="Load per step, in seconds.", metavar="SECONDS")
    ] = None,
    warmup: Annotated[int | None, typer.Option(help=_WARMUP_HELP, metavar="SECONDS")] = None,
    backlog: Annotated[
        int | None, typer.Option(help="Rows queued when a step starts.", metavar="ROWS")
    ] = None,
    clients: ClientsOpt = None,
    jobs: JobsOpt = None,
    repeat: StepRepeatOpt = None,
    steps: Annotated[Path | None, typer.Option("--steps", help=_STEPS_HELP, metavar="FILE")] = None,
    continuous: Annotated[bool, typer.Option("--continuous", help=_CONTINUOUS_HELP)] = False,
    resume: ResumeOpt = None,
) -> dict[str, Any]:
    from vacuumlab.studies.churn import load_steps

    return {
        # A resumed run keeps the steps it stored.
        "steps": load_steps(steps) if steps is not None and resume is None else None,
        "seconds": seconds,
        "warmup": warmup,
        "backlog": backlog,
        "clients": clients,
        "jobs": jobs,
        "repeat": repeat,
        "continuous": continuous or None,
    }


@study_command(
    CostDriverConfig,
    (
        cost_driver_spec.PUBLICATION,
        "Dead tuples or dirty pages: vacuum's cost over a matrix of tables.",
        "vacuumlab run cost-driver --rows 200000 --indexes 0,2 --repeat 2 --manual",
    ),
    "quick (1M rows, 72 points) or paper (10M, 360).",
)
def run_cost_driver(
    rows: Annotated[int | None, typer.Option(help="Rows in the table.", metavar="ROWS")] = None,
    distributions: Annotated[
        str | None, typer.Option(help="compact,spread (or one of them).", metavar="LIST")
    ] = None,
    dead: Annotated[
        str | None, typer.Option(help="Dead shares in %, e.g. 10,25,50.", metavar="PERCENTS")
    ] = None,
    indexes: Annotated[
        str | None, typer.Option(help="Index counts, e.g. 0,1,3,5.", metavar="COUNTS")
    ] = None,
    repeat: Annotated[
        int | None, typer.Option(help="Repetitions of each combination.", metavar="N")
    ] = None,
    manual: Annotated[bool, typer.Option("--manual", help=_MANUAL_HELP)] = False,
    work_mem: WorkMemOpt = None,
) -> dict[str, Any]:
    return {
        "work_mem": work_mem,
        "rows": rows,
        "distributions": str_list(distributions),
        "dead_pcts": int_list(dead, "--dead"),
        "indexes": int_list(indexes, "--indexes"),
        "repeat": repeat,
        "manual": manual or None,
    }


@study_command(
    ToastConfig,
    (
        toast_spec.PUBLICATION,
        "The same wide rows stored in line or in TOAST: sizes, UPDATE, VACUUM, FREEZE.",
        "vacuumlab run toast --rows 20000 --storages extended,main --no-parallel",
    ),
    "quick (50,000 rows) or paper (500,000, as the post).",
)
def run_toast(
    rows: Annotated[int | None, typer.Option(help="Rows in each table.", metavar="ROWS")] = None,
    width: Annotated[
        int | None, typer.Option(help="Bytes of incompressible text per row.", metavar="BYTES")
    ] = None,
    storages: Annotated[
        str | None, typer.Option(help="extended,main,external,plain (any of them).", metavar="LIST")
    ] = None,
    repeat: Annotated[
        int | None, typer.Option(help="Repetitions of each table.", metavar="N")
    ] = None,
    parallel: Annotated[
        bool, typer.Option(help="Also vacuum heap and TOAST from two sessions.")
    ] = True,
) -> dict[str, Any]:
    return {
        "rows": rows,
        "width": width,
        "storages": str_list(storages),
        "repeat": repeat,
        "parallel": parallel,
    }


@study_command(
    FillfactorConfig,
    (
        fillfactor_spec.PUBLICATION,
        "pgbench TPC-B at sizes against memory × fillfactor: HOT share, growth, speed.",
        "vacuumlab run fillfactor --sizes fits --fillfactors 80,100 --seconds 30 --repeat 3",
    ),
    "quick (fits and 2×, about 12 min) or paper (3 sizes).",
    alter_system=False,  # it restarts only the sandbox, and never alters a named server
)
def run_fillfactor(
    sizes: Annotated[
        str | None,
        typer.Option(help="fits,2x,10x: data size against shared_buffers.", metavar="LIST"),
    ] = None,
    fillfactors: Annotated[
        str | None, typer.Option(help="e.g. 70,80,90,100.", metavar="PERCENTS")
    ] = None,
    seconds: Annotated[
        int | None, typer.Option(help="Load per point, in seconds.", metavar="SECONDS")
    ] = None,
    repeat: Annotated[
        int | None, typer.Option(help="Repetitions (2 or more for significance).", metavar="N")
    ] = None,
    clients: Annotated[int | None, typer.Option(help="pgbench clients.", metavar="N")] = None,
    shared_buffers: Annotated[
        str | None,
        typer.Option(
            help="The 'memory' sizes are measured against (sandbox only).", metavar="SIZE"
        ),
    ] = None,
) -> dict[str, Any]:
    return {
        "sizes": str_list(sizes),
        "fillfactors": int_list(fillfactors, "--fillfactors"),
        "seconds": seconds,
        "repeat": repeat,
        "clients": clients,
        "shared_buffers": shared_buffers,
    }


@study_command(
    SchedulingConfig,
    (
        scheduling_spec.PUBLICATION,
        "Tables churned from hot to quiet (spread: forty) or HOT-only tables, churners and "
        "one busy table (mixed: ten) under arms of autovacuum workers and naptime: the "
        "simulator's prediction against what PostgreSQL did. " + scheduling_spec.ABOUT,
        "vacuumlab run scheduling --workload mixed",
    ),
    "quick (2 arms × 170 s, about 7 min) or paper (4 arms × 600 s).",
)
def run_scheduling(
    seconds: Annotated[
        int | None, typer.Option(help="Load per arm, in seconds.", metavar="SECONDS")
    ] = None,
    warmup: Annotated[
        int | None,
        typer.Option(help="Seconds into the load of the first snapshot.", metavar="SECONDS"),
    ] = None,
    interval: Annotated[
        int | None,
        typer.Option(help="Seconds between the snapshots the rates come from.", metavar="SECONDS"),
    ] = None,
    workload: Annotated[
        str | None,
        typer.Option(
            help="spread (tables churned from hot to quiet) or mixed (five HOT-only tables, "
            "four churners and one busy table).",
            metavar="NAME",
        ),
    ] = None,
    tables: Annotated[
        int | None, typer.Option(help="Tables in the spread workload.", metavar="N")
    ] = None,
    quiet: Annotated[
        int | None, typer.Option(help="Of those, tables with no load.", metavar="N")
    ] = None,
    rows: Annotated[
        int | None, typer.Option(help="Rows per table (but mixed's busy one).", metavar="ROWS")
    ] = None,
    spread: Annotated[
        float | None,
        typer.Option(help="Churn of the busiest table over the slowest busy one.", metavar="RATIO"),
    ] = None,
    busy_rows: Annotated[
        int | None, typer.Option(help="Rows of the mixed workload's busy table.", metavar="ROWS")
    ] = None,
    clients: Annotated[
        int | None,
        typer.Option(
            help="pgbench clients [default: 2 per core].", show_default=False, metavar="N"
        ),
    ] = None,
    jobs: JobsOpt = None,
    repeat: Annotated[
        int | None, typer.Option(help="Repetitions of each arm.", metavar="N")
    ] = None,
) -> dict[str, Any]:
    return {
        "seconds": seconds, "warmup": warmup, "interval": interval, "workload": workload,
        "tables": tables, "quiet": quiet, "rows": rows, "spread": spread,
        "busy_rows": busy_rows, "clients": clients, "jobs": jobs, "repeat": repeat,
    }  # fmt: skip


def run_study(
    study: str,
    preset: str,
    overrides: Mapping[str, Any],
    where: Where,
    resume: int | None,
    store_path: Path | None,
    output: Path | None,
    executor: str = "local",
) -> None:
    """What every run command does: the lab runs the study with a progress display, then
    the report is rendered from the store."""
    from vacuumlab.lab.registry import study_run

    display = RunDisplay(err)
    with Store.open(store_path or default_store()) as store, _executor(executor) as runner:
        with study_run(
            study, store=store, where=where, preset=preset, overrides=overrides,
            resume=resume, progress=display, executor=runner,
        ) as run:  # fmt: skip
            where_to = run.target.label if runner is None else f"{runner.name} executor"
            err.print(f"{study} on the {where_to}: {run.describe()}")
            run_id = _execute(run, display)
        _print_summary(study, store, run_id)
        out.print(f"report: {render_report(store, run_id, output)}")


@contextmanager
def _executor(spec: str) -> Iterator[Any]:
    """None for the local loop, else a Ray executor (Ray is loaded only then); a local Ray
    started here is shut down afterwards."""
    if spec == "local":
        yield None
        return
    from vacuumlab.lab.cluster import RayExecutor, parse

    address = parse(spec)
    runner = RayExecutor(address)
    try:
        yield runner
    finally:
        runner.close()


def _execute(run: Any, display: RunDisplay) -> int:
    """Run a study with its progress display; on Ctrl-C, say how to resume."""
    try:
        with display.shown():
            return int(run.execute())
    except Interrupted:
        if run.run_id is not None:
            command = "tune" if run.study == "tune" else f"run {run.study}"
            err.print(
                f"run {run.run_id} interrupted; its finished points are stored. "
                f"Continue with: vacuumlab {command} --resume {run.run_id}"
            )
        raise


def _print_summary(study: str, store: Store, run_id: int) -> None:
    """The churn study also prints its steps' table on the terminal; a tune its verdict and
    the SQL that puts the winner in force."""
    if study == "tune":
        from vacuumlab.report.tune.text import verdict_lines

        for text in verdict_lines(store, run_id):
            out.print(text, markup=False, highlight=False)
        return
    if study == "churn":
        from vacuumlab.report.churn.text import finding, summary_table

        out.print(summary_table(store, run_id))
        line = finding(store, run_id)
        if line is not None:
            out.print(line)
