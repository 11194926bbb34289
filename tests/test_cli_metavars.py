"""Every option and argument in --help names what to give in words (FILE, DURATION, N), never
a type (<int>, <list[Path]>): the whole CLI, walked and rendered in-process."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from vacuumlab.cli import app

#: What a metavar must not look like: Typer's type labels and Python type names.
TYPE_LIKE = re.compile(r"[<>\[\]]|\b(str|int|float|bool|Path|list|tuple|datetime)\b")


def _leaves(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in getattr(group, "commands", {}).items():
        if getattr(command, "commands", None):
            found.extend(_leaves(command, (*prefix, name)))
        else:
            found.append((*prefix, name))
    return found


COMMANDS = _leaves(typer.main.get_command(app))


def _first_columns(help_text: str) -> list[str]:
    """The name column of the Arguments and Options sections: '-o, --output FILE', 'DSN'."""
    columns, inside = [], False
    for line in help_text.splitlines():
        if line.endswith(":") and not line.startswith(" "):
            inside = line in ("Arguments:", "Options:")
        elif inside and re.match(r"  \S", line):  # deeper lines continue a help text
            columns.append(re.split(r"\s{2,}", line.strip())[0])
    return columns


def metavars(help_text: str) -> list[str]:
    """The words of the name column that are not option names."""
    return [
        word.rstrip(",")
        for column in _first_columns(help_text)
        for word in column.split()
        if not word.startswith("-") and word != "/"
    ]


def test_the_walk_sees_the_options() -> None:
    text = CliRunner().invoke(app, ["run", "churn", "--help"], env={"COLUMNS": "160"}).output
    assert {"PRESET", "SECONDS", "FILE", "DIR", "RUN", "DSN"} <= set(metavars(text))


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_no_metavar_reads_like_a_type(command: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    words = metavars(result.output)
    assert [w for w in words if TYPE_LIKE.search(w)] == [], result.output
    assert all(w == w.upper() for w in words), words  # one style: FILE, N, NAME=VALUE
