"""The ``vacuumlab`` command: parses, calls the library, picks an output format.

Each command group lives in a module of its own (``sandbox``, ``run``, ``advise``,
``capture``, ``simulate``, ``tune``, ``watch``, ``exporter``, ``report``);
this one builds the app and turns errors into one line. Errors the user can act on
(:class:`VacuumlabError`) print one line and exit with 2; Ctrl-C and SIGTERM unwind cleanly
(servers started here are stopped) and exit with 130.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer

from vacuumlab import __version__
from vacuumlab.cli.advise import advise_command, snapshot
from vacuumlab.cli.capture import capture_command
from vacuumlab.cli.exporter import exporter_command
from vacuumlab.cli.options import WordsCommand, err, out
from vacuumlab.cli.report import compare, report, runs
from vacuumlab.cli.run import run_app
from vacuumlab.cli.run_custom import run_custom as run_custom  # registers `run custom`
from vacuumlab.cli.sandbox import demo, sandbox_app
from vacuumlab.cli.simulate import simulate_command
from vacuumlab.cli.tune import tune_command
from vacuumlab.cli.watch import watch_command
from vacuumlab.errors import Interrupted, VacuumlabError, interrupt_on_signals
from vacuumlab.pg.sandbox import default_dir

app = typer.Typer(
    help="Measure, explain and tune PostgreSQL vacuum for high-churn tables.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Plain click help: rich markup would eat every "[default: …]" and "[[step]]".
    rich_markup_mode=None,
)
app.add_typer(sandbox_app, name="sandbox")
app.command("snapshot", cls=WordsCommand)(snapshot)
app.command("advise", cls=WordsCommand)(advise_command)
app.command("capture", cls=WordsCommand)(capture_command)
app.command("simulate", cls=WordsCommand)(simulate_command)
app.command("tune", cls=WordsCommand)(tune_command)
app.command("exporter", cls=WordsCommand)(exporter_command)
app.command("watch", cls=WordsCommand)(watch_command)
app.command("demo")(demo)
app.add_typer(run_app, name="run")
app.command("report", cls=WordsCommand)(report)
app.command("runs")(runs)
app.command("compare", cls=WordsCommand)(compare)


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
        if _is_usage_error(exc):
            _usage_error(exc)
        if _is_database_error(exc) and not os.environ.get("VACUUMLAB_DEBUG"):
            _fail(
                f"the server answered a query of vacuumlab's with an error it did not expect "
                f"({' '.join(str(exc).split())}): please report it, with the server's version; "
                "VACUUMLAB_DEBUG=1 shows where"
            )
        raise
    sys.exit(code if isinstance(code, int) else 0)


def _usage_error(exc: Exception) -> NoReturn:
    if type(exc).__name__ == "NoArgsIsHelpError":  # a group called alone: its help
        exc.show()  # type: ignore[attr-defined]
        sys.exit(2)
    ctx = getattr(exc, "ctx", None)
    hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
    _fail(exc.format_message() + hint)  # type: ignore[attr-defined]


def _is_usage_error(exc: Exception) -> bool:
    """Click's usage errors (bad option values, missing arguments), known by their interface:
    Typer ships click as a private module, so there is no public class to name."""
    return hasattr(exc, "format_message") and getattr(exc, "exit_code", None) == 2


def _is_database_error(exc: Exception) -> bool:
    """An error the driver raised for the server (a query a server version does not take,
    say), known by its module so that commands which never connect load no driver."""
    return type(exc).__module__.split(".")[0] == "psycopg"


def _fail(message: str) -> NoReturn:
    # Plain write: a console would wrap a long message onto several lines.
    sys.stderr.write(f"error: {' '.join(message.split())}\n")
    sys.exit(2)


__all__ = ["app", "default_dir", "main"]
