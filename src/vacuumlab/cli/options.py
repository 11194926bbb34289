"""What the commands share: the consoles, the options several commands take, and small
parsers that turn option text into values."""

from __future__ import annotations

import io
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
    table = "table"
    json = "json"


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


def str_list(text: str | None) -> tuple[str, ...] | None:
    """``compact,spread`` → ("compact", "spread"); None when the option was not given."""
    return None if text is None else tuple(text.split(","))
