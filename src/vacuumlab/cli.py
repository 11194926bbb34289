"""The ``vacuumlab`` command: parses, calls the library, picks an output format.

Errors the user can act on (:class:`VacuumlabError`) print one line and exit with 2; Ctrl-C
and SIGTERM unwind cleanly (servers started here are stopped) and exit with 130.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from dataclasses import asdict
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console, RenderableType

from vacuumlab import __version__
from vacuumlab.errors import Interrupted, VacuumlabError
from vacuumlab.pg.sandbox import Sandbox, default_dir, interrupt_on_signals
from vacuumlab.records.publication import Publication
from vacuumlab.store import Store
from vacuumlab.studies import churn_spec, cost_driver_spec, fillfactor_spec, toast_spec

app = typer.Typer(
    help="Measure, explain and tune PostgreSQL vacuum for high-churn tables.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)
sandbox_app = typer.Typer(
    help="Manage the throwaway PostgreSQL the lab runs on.",
    no_args_is_help=True,
    rich_markup_mode=None,
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
    from vacuumlab.collect.snapshot import collect
    from vacuumlab.pg.connect import connect
    from vacuumlab.records.snapshot import load_snapshot
    from vacuumlab.report.snapshot_text import render

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


class AdviceFormat(StrEnum):
    table = "table"
    json = "json"
    md = "md"
    html = "html"


def _seconds(text: str | None) -> float | None:
    """``60``, ``60s``, ``2min`` → seconds."""
    if text is None:
        return None
    units = {"": 1, "s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600}
    number = text.strip().rstrip("smhinec")
    unit = text.strip()[len(number) :]
    try:
        value = float(number) * units[unit]
    except (ValueError, KeyError):
        raise VacuumlabError(f"--interval takes seconds, e.g. 60s or 2min, not {text!r}") from None
    if value <= 0:
        raise VacuumlabError("--interval must be positive")
    return value


@app.command("advise")
def advise_command(
    dsn: Annotated[
        str | None,
        typer.Argument(
            help="Server to inspect [default: the running sandbox].", show_default=False
        ),
    ] = None,
    interval: Annotated[
        str | None,
        typer.Option(
            "--interval", help="Take a second snapshot after this long (e.g. 60s) for rates."
        ),
    ] = None,
    fmt: Annotated[
        AdviceFormat, typer.Option("--format", help="table, json, md or html")
    ] = AdviceFormat.table,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to this file.")
    ] = None,
    input_: Annotated[
        list[Path] | None,
        typer.Option("--input", help="Advise from saved snapshot JSON (one, or two for rates)."),
    ] = None,
    exact: Annotated[
        bool, typer.Option("--exact", help="Measure bloat with pgstattuple_approx (reads tables).")
    ] = False,
    limit: Annotated[int, typer.Option(help="Tables to list in the table view.")] = 25,
    data_dir: DataDir = None,
) -> None:
    """Say, per table, where autovacuum stands and what to change, as SQL. Read-only.

    Example: vacuumlab advise postgresql://me@db/app --interval 60s --format md -o advice.md
    """
    from vacuumlab.advise import advise, collect_advice
    from vacuumlab.records.snapshot import load_snapshot
    from vacuumlab.report.advice_text import render

    seconds = _seconds(interval)
    if input_:
        if dsn is not None or len(input_) > 2:
            raise VacuumlabError("--input takes one or two snapshot files, and no DSN")
        snapshots = [load_snapshot(path) for path in input_]
        advice = advise(snapshots[0], snapshots[1] if len(snapshots) == 2 else None)
    else:

        def waiting(s: float) -> None:
            err.print(f"· waiting {s:.0f} s for a second snapshot (rates)")

        advice, _ = collect_advice(
            dsn or _sandbox_dsn(data_dir), interval=seconds, exact=exact, on_wait=waiting
        )
    if fmt is AdviceFormat.table:
        if output is None:
            out.print(render(advice, limit=limit))
        else:
            _write(output, _render_text(render(advice, limit=limit)))
        return
    text = _advice_text(advice, fmt)
    if output is None:
        sys.stdout.write(text)
    else:
        _write(output, text)


def _advice_text(advice: Any, fmt: AdviceFormat) -> str:
    if fmt is AdviceFormat.json:
        return str(advice.dump_json()) + "\n"
    if fmt is AdviceFormat.md:
        from vacuumlab.report.advice_md import render_markdown

        return render_markdown(advice)
    from vacuumlab.report.advice_html import render_html

    return render_html(advice)


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


run_app = typer.Typer(
    help="Run a study and record it in the results store.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(run_app, name="run")


def _study_help(publication: Publication, what: str, example: str) -> str:
    """A run command's help: what it measures, the published work it reproduces, an example."""
    return f"{what} Reproduces {publication.cite()}.\n\nExample: {example}"


StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="Results store [default: $VACUUMLAB_HOME/results.sqlite, "
        "or ~/vacuumlab/results.sqlite].",
        show_default=False,
    ),
]
ReportDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        help="Report directory [default: runs/RUN/report next to the store].",
        show_default=False,
    ),
]
_PRESET_HELP = "quick (6 × 90 s), demo (6 × 35 s) or paper (15 clients, 6 × 300 s)."
_WARMUP_HELP = "Seconds at the start of each step left out of the summary."
_CLIENTS_HELP = "pgbench clients [default: 4 per core]."
_JOBS_HELP = "pgbench threads [default: 1 per core]."
_STEPS_HELP = "TOML file of [[step]] tables (name, scope, settings) instead of the post's six."
_CONTINUOUS_HELP = "Run the steps back to back on one table, as the post did."
_DSN_HELP = "Run on this server (its database, schema vacuumlab only), not the sandbox."
_ALTER_HELP = "With --dsn: allow server-wide settings (restored afterwards)."
_RESUME_HELP = "Finish an interrupted run: measure what it lacks."
DsnOpt = Annotated[str | None, typer.Option("--dsn", help=_DSN_HELP)]
AllowAlterOpt = Annotated[bool, typer.Option("--allow-alter-system", help=_ALTER_HELP)]
ResumeOpt = Annotated[int | None, typer.Option("--resume", help=_RESUME_HELP, metavar="RUN")]
_MANUAL_HELP = "Also measure each point with VACUUM (VERBOSE) and no cost delay: the pure work."


@run_app.command(
    "churn",
    help=_study_help(
        churn_spec.PUBLICATION,
        "Queue churn under the post's six autovacuum settings, with a report.",
        "vacuumlab run churn --preset quick --clients 4",
    ),
)
def run_churn(
    preset: Annotated[str, typer.Option(help=_PRESET_HELP)] = "quick",
    seconds: Annotated[int | None, typer.Option(help="Load per step, in seconds.")] = None,
    warmup: Annotated[int | None, typer.Option(help=_WARMUP_HELP)] = None,
    backlog: Annotated[int | None, typer.Option(help="Rows queued when a step starts.")] = None,
    clients: Annotated[int | None, typer.Option(help=_CLIENTS_HELP, show_default=False)] = None,
    jobs: Annotated[int | None, typer.Option(help=_JOBS_HELP, show_default=False)] = None,
    repeat: Annotated[int | None, typer.Option(help="Repetitions of each step.")] = None,
    steps: Annotated[Path | None, typer.Option("--steps", help=_STEPS_HELP)] = None,
    continuous: Annotated[bool, typer.Option("--continuous", help=_CONTINUOUS_HELP)] = False,
    dsn: DsnOpt = None,
    allow_alter_system: AllowAlterOpt = False,
    resume: ResumeOpt = None,
    store_path: StoreOpt = None,
    output: ReportDirOpt = None,
    data_dir: DataDir = None,
    pg_bin: PgBinOpt = None,
) -> None:
    from vacuumlab.lab import ProgressReporter, default_store
    from vacuumlab.pg.target import Target
    from vacuumlab.report.churn import render_churn_report
    from vacuumlab.report.churn_text import summary_table
    from vacuumlab.studies import churn

    with Store.open(store_path or default_store()) as store:
        if resume is not None:
            config = churn.ChurnConfig.from_params(_resumable_params(store, resume, "churn", dsn))
        else:
            chosen = churn.load_steps(steps) if steps is not None else None
            config = churn.make_config(
                preset,
                steps=chosen,
                seconds=seconds,
                warmup=warmup,
                backlog=backlog,
                clients=clients,
                jobs=jobs,
                repeat=repeat,
                continuous=continuous or None,
                target="server" if dsn else "sandbox",
            )
        reporter = ProgressReporter(err)
        with contextlib.ExitStack() as stack:
            if dsn is None:
                sandbox = stack.enter_context(Sandbox.start(data_dir, pg_bin=pg_bin))
                target = Target.of_sandbox(sandbox)
            else:
                target = Target.of_dsn(dsn, allow_alter_system=allow_alter_system, pg_bin=pg_bin)
            err.print(
                f"churn on the {target.label}: {len(config.steps)} steps × {config.seconds} s, "
                f"{config.clients} clients, {config.jobs} threads, backlog {config.backlog:,}"
            )
            run = churn.ChurnRun(config, target, store, reporter, run_id=resume)
            run_id = _execute(run, reporter, "churn")
        out.print(summary_table(store, run_id))
        html = render_churn_report(store, run_id, output or _report_dir(store.path, run_id))
        out.print(f"report: {html}")


def _int_list(text: str | None, option: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise VacuumlabError(f"{option} takes numbers separated by commas, not {text!r}") from None


@run_app.command(
    "cost-driver",
    help=_study_help(
        cost_driver_spec.PUBLICATION,
        "Dead tuples or dirty pages: vacuum's cost over a matrix of tables.",
        "vacuumlab run cost-driver --rows 200000 --indexes 0,2 --repeat 2 --manual",
    ),
)
def run_cost_driver(
    preset: Annotated[
        str, typer.Option(help="quick (1M rows, 72 points) or paper (10M, 360).")
    ] = "quick",
    rows: Annotated[int | None, typer.Option(help="Rows in the table.")] = None,
    distributions: Annotated[
        str | None, typer.Option(help="compact,spread (or one of them).")
    ] = None,
    dead: Annotated[str | None, typer.Option(help="Dead shares in %, e.g. 10,25,50.")] = None,
    indexes: Annotated[str | None, typer.Option(help="Index counts, e.g. 0,1,3,5.")] = None,
    repeat: Annotated[int | None, typer.Option(help="Repetitions of each combination.")] = None,
    manual: Annotated[bool, typer.Option("--manual", help=_MANUAL_HELP)] = False,
    dsn: DsnOpt = None,
    allow_alter_system: AllowAlterOpt = False,
    resume: ResumeOpt = None,
    store_path: StoreOpt = None,
    output: ReportDirOpt = None,
    data_dir: DataDir = None,
    pg_bin: PgBinOpt = None,
) -> None:
    from vacuumlab.report.cost_driver import render_cost_driver_report
    from vacuumlab.studies import cost_driver

    def configure(store: Store) -> Any:
        if resume is not None:
            params = _resumable_params(store, resume, "cost-driver", dsn)
            return cost_driver.CostDriverConfig.from_params(params)
        chosen = None if distributions is None else tuple(distributions.split(","))
        return cost_driver.make_config(
            preset,
            rows=rows,
            distributions=chosen,
            dead_pcts=_int_list(dead, "--dead"),
            indexes=_int_list(indexes, "--indexes"),
            repeat=repeat,
            manual=manual or None,
            target="server" if dsn else "sandbox",
        )

    _run_points_study(
        "cost-driver",
        configure,
        cost_driver.CostDriverRun,
        cost_driver.describe,
        render_cost_driver_report,
        dsn=dsn,
        allow_alter_system=allow_alter_system,
        resume=resume,
        store_path=store_path,
        output=output,
        data_dir=data_dir,
        pg_bin=pg_bin,
    )


@run_app.command(
    "toast",
    help=_study_help(
        toast_spec.PUBLICATION,
        "The same wide rows stored in line or in TOAST: sizes, UPDATE, VACUUM, FREEZE.",
        "vacuumlab run toast --rows 20000 --storages extended,main --no-parallel",
    ),
)
def run_toast(
    preset: Annotated[
        str, typer.Option(help="quick (50,000 rows) or paper (500,000, as the post).")
    ] = "quick",
    rows: Annotated[int | None, typer.Option(help="Rows in each table.")] = None,
    width: Annotated[int | None, typer.Option(help="Bytes of incompressible text per row.")] = None,
    storages: Annotated[
        str | None, typer.Option(help="extended,main,external,plain (any of them).")
    ] = None,
    repeat: Annotated[int | None, typer.Option(help="Repetitions of each table.")] = None,
    parallel: Annotated[
        bool, typer.Option(help="Also vacuum heap and TOAST from two sessions.")
    ] = True,
    dsn: DsnOpt = None,
    allow_alter_system: AllowAlterOpt = False,
    resume: ResumeOpt = None,
    store_path: StoreOpt = None,
    output: ReportDirOpt = None,
    data_dir: DataDir = None,
    pg_bin: PgBinOpt = None,
) -> None:
    from vacuumlab.report.toast import render_toast_report
    from vacuumlab.studies import toast

    def configure(store: Store) -> Any:
        if resume is not None:
            return toast.ToastConfig.from_params(_resumable_params(store, resume, "toast", dsn))
        chosen = None if storages is None else tuple(storages.split(","))
        return toast.make_config(
            preset,
            rows=rows,
            width=width,
            storages=chosen,
            repeat=repeat,
            parallel=parallel,
            target="server" if dsn else "sandbox",
        )

    _run_points_study(
        "toast",
        configure,
        toast.ToastRun,
        toast.describe,
        render_toast_report,
        dsn=dsn,
        allow_alter_system=allow_alter_system,
        resume=resume,
        store_path=store_path,
        output=output,
        data_dir=data_dir,
        pg_bin=pg_bin,
    )


@run_app.command(
    "fillfactor",
    help=_study_help(
        fillfactor_spec.PUBLICATION,
        "pgbench TPC-B at sizes against memory × fillfactor: HOT share, growth, speed.",
        "vacuumlab run fillfactor --sizes fits --fillfactors 80,100 --seconds 30 --repeat 3",
    ),
)
def run_fillfactor(
    preset: Annotated[
        str, typer.Option(help="quick (fits and 2×, about 12 min) or paper (3 sizes).")
    ] = "quick",
    sizes: Annotated[
        str | None, typer.Option(help="fits,2x,10x: data size against shared_buffers.")
    ] = None,
    fillfactors: Annotated[str | None, typer.Option(help="e.g. 70,80,90,100.")] = None,
    seconds: Annotated[int | None, typer.Option(help="Load per point, in seconds.")] = None,
    repeat: Annotated[
        int | None, typer.Option(help="Repetitions (2 or more for significance).")
    ] = None,
    clients: Annotated[int | None, typer.Option(help="pgbench clients.")] = None,
    shared_buffers: Annotated[
        str | None, typer.Option(help="The 'memory' sizes are measured against (sandbox only).")
    ] = None,
    dsn: DsnOpt = None,
    resume: ResumeOpt = None,
    store_path: StoreOpt = None,
    output: ReportDirOpt = None,
    data_dir: DataDir = None,
    pg_bin: PgBinOpt = None,
) -> None:
    from vacuumlab.report.fillfactor import render_fillfactor_report
    from vacuumlab.studies import fillfactor

    def configure(store: Store) -> Any:
        if resume is not None:
            params = _resumable_params(store, resume, "fillfactor", dsn)
            return fillfactor.FillfactorConfig.from_params(params)
        return fillfactor.make_config(
            preset,
            sizes=None if sizes is None else tuple(sizes.split(",")),
            fillfactors=_int_list(fillfactors, "--fillfactors"),
            seconds=seconds,
            repeat=repeat,
            clients=clients,
            shared_buffers=shared_buffers,
            target="server" if dsn else "sandbox",
        )

    _run_points_study(
        "fillfactor",
        configure,
        fillfactor.FillfactorRun,
        fillfactor.describe,
        render_fillfactor_report,
        dsn=dsn,
        allow_alter_system=False,
        resume=resume,
        store_path=store_path,
        output=output,
        data_dir=data_dir,
        pg_bin=pg_bin,
    )


def _run_points_study(
    study: str,
    configure: Any,
    run_class: Any,
    describe: Any,
    render: Any,
    *,
    dsn: str | None,
    allow_alter_system: bool,
    resume: int | None,
    store_path: Path | None,
    output: Path | None,
    data_dir: Path | None,
    pg_bin: Path | None,
) -> None:
    """What every matrix study does from the command line: config (fresh or resumed), target,
    progress bar, run, report."""
    from vacuumlab.lab import PointsReporter, default_store
    from vacuumlab.pg.target import Target

    with Store.open(store_path or default_store()) as store:
        config = configure(store)
        reporter = PointsReporter(err)
        with contextlib.ExitStack() as stack:
            if dsn is None:
                sandbox = stack.enter_context(Sandbox.start(data_dir, pg_bin=pg_bin))
                target = Target.of_sandbox(sandbox)
            else:
                target = Target.of_dsn(dsn, allow_alter_system=allow_alter_system, pg_bin=pg_bin)
            err.print(f"{study} on the {target.label}: {describe(config)}")
            run = run_class(config, target, store, reporter, run_id=resume)
            run_id = _execute(run, reporter, study)
        html = render(store, run_id, output or _report_dir(store.path, run_id))
        out.print(f"report: {html}")


def _execute(run: Any, reporter: Any, study: str) -> int:
    """Run a study with its progress display; on Ctrl-C, say how to resume."""
    try:
        with reporter.shown():
            return int(run.execute())
    except Interrupted:
        if run.run_id is not None:
            err.print(
                f"run {run.run_id} interrupted; its finished points are stored. "
                f"Continue with: vacuumlab run {study} --resume {run.run_id}"
            )
        raise


def _resumable_params(store: Store, run_id: int, study: str, dsn: str | None) -> dict[str, Any]:
    run = store.run(run_id)
    if run.study != study:
        raise VacuumlabError(f"run {run_id} is a {run.study} run, not {study}")
    if run.status == "done":
        raise VacuumlabError(f"run {run_id} is complete; nothing to resume")
    if run.params.get("target") == "server" and dsn is None:
        raise VacuumlabError(f"run {run_id} ran on a named server: give its --dsn again")
    return run.params


def _report_dir(store_path: Path, run_id: int) -> Path:
    return store_path.parent / "runs" / str(run_id) / "report"


@app.command("report")
def report(
    run_id: Annotated[int, typer.Argument(help="The run to report on.", metavar="RUN")],
    store_path: StoreOpt = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            help="Report directory [default: next to the store, runs/RUN/report].",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Render a run's HTML report (and PNG charts) from the results store alone.

    Example: vacuumlab report 3 --output ./report-3
    """
    from vacuumlab.lab import default_store
    from vacuumlab.report.churn import render_churn_report
    from vacuumlab.report.cost_driver import render_cost_driver_report
    from vacuumlab.report.fillfactor import render_fillfactor_report
    from vacuumlab.report.toast import render_toast_report

    path = store_path or default_store()
    if not path.exists():
        raise VacuumlabError(f"no results store at {path}: run a study first, or pass --store")
    with Store.open(path) as store:
        study = store.run(run_id).study
        renderers = {
            "churn": render_churn_report,
            "cost-driver": render_cost_driver_report,
            "toast": render_toast_report,
            "fillfactor": render_fillfactor_report,
        }
        if study not in renderers:
            raise VacuumlabError(f"run {run_id} is a {study} run; no report for that study yet")
        html = renderers[study](store, run_id, output or _report_dir(path, run_id))
    out.print(str(html))


@app.command("runs")
def runs(store_path: StoreOpt = None) -> None:
    """List the runs in the results store, newest first.

    Example: vacuumlab runs --store ./results.sqlite
    """
    from rich.table import Table
    from rich.text import Text

    from vacuumlab.lab import default_store

    path = store_path or default_store()
    if not path.exists():
        raise VacuumlabError(f"no results store at {path}: run a study first, or pass --store")
    with Store.open(path) as store:
        table = Table("run", "study", "status", "started", "points", "server")
        for run in store.runs():
            table.add_row(
                str(run.id),
                run.study,
                run.status,
                f"{run.started_at:%Y-%m-%d %H:%M}",
                str(len(store.points(run.id))),
                Text(run.server_version.split(" on ")[0]),
            )
    out.print(table)


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
            code = app(args=argv, prog_name="vacuumlab", standalone_mode=False)
    except Interrupted:
        err.print("interrupted")
        sys.exit(130)
    except VacuumlabError as exc:
        _fail(str(exc))
    except typer.Abort:
        err.print("aborted")
        sys.exit(1)
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group called alone: its help
            exc.show()  # type: ignore[attr-defined]
            sys.exit(2)
        ctx = getattr(exc, "ctx", None)
        hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
        _fail(exc.format_message() + hint)  # type: ignore[attr-defined]
    sys.exit(code if isinstance(code, int) else 0)


def _is_usage_error(exc: Exception) -> bool:
    """Click's usage errors (bad option values, missing arguments), known by their interface:
    Typer ships click as a private module, so there is no public class to name."""
    return hasattr(exc, "format_message") and getattr(exc, "exit_code", None) == 2


def _fail(message: str) -> NoReturn:
    # Plain write: a console would wrap a long message onto several lines.
    sys.stderr.write(f"error: {' '.join(message.split())}\n")
    sys.exit(2)


__all__ = ["app", "default_dir", "main"]
