"""The vacuumlab command as a user runs it: help, sandbox commands, snapshot, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest
import typer
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

from helpers.advise import BLOATED_TABLE
from helpers.cli import assert_one_line_error, run_cli
from helpers.db import PASSWORD_ROLE, execute
from vacuumlab.cli import app
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records import (
    churn_spec,
    cost_driver_spec,
    custom_spec,
    fillfactor_spec,
    scheduling_spec,
    toast_spec,
)
from vacuumlab.records.churn import ChurnConfig
from vacuumlab.records.cost_driver import CostDriverConfig
from vacuumlab.records.fillfactor import FillfactorConfig
from vacuumlab.records.params import Config
from vacuumlab.records.publication import Publication
from vacuumlab.records.scheduling import SchedulingConfig
from vacuumlab.records.toast import ToastConfig

PUBLICATIONS: dict[str, Publication | None] = {
    spec.STUDY: spec.PUBLICATION
    for spec in (
        churn_spec,
        cost_driver_spec,
        fillfactor_spec,
        toast_spec,
        scheduling_spec,
        custom_spec,
    )
}


def _commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in getattr(group, "commands", {}).items():
        found.append((*prefix, name))
        found.extend(_commands(command, (*prefix, name)))
    return found


COMMANDS = _commands(typer.main.get_command(app))
GROUPS = {("sandbox",), ("run",)}


def test_command_tree_is_complete() -> None:
    expected = (
        {"sandbox", "snapshot", "demo", "version", "run", "run churn", "run cost-driver"}
        | {
            "report",
            "runs",
            "compare",
            "advise",
            "simulate",
            "run toast",
            "run fillfactor",
            "run scheduling",
            "run custom",
            "capture",
            "tune",
        }
        | {"exporter", "watch"}
        | {
            f"sandbox {c}"
            for c in ("start", "status", "url", "psql", "stop", "destroy", "configure", "fetch")
        }
    )
    assert {" ".join(c) for c in COMMANDS} == expected


def help_of(command: tuple[str, ...]) -> str:
    """A command's --help, rendered in-process as the child process renders it (160 columns):
    a child per command cost a second of imports each."""
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    return result.output


def test_help_in_a_child_process() -> None:
    """The installed entry point itself answers --help (the rest are read in-process)."""
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    assert "advise" in result.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example(command: tuple[str, ...]) -> None:
    text = help_of(command)
    if command not in GROUPS:
        assert "Example: vacuumlab" in text or "Example: psql" in text


def test_unreachable_server(tmp_path: Path) -> None:
    result = run_cli("snapshot", "postgresql://postgres@127.0.0.1:1/postgres")
    assert_one_line_error(result, "Connection refused")


def test_wrong_database(sandbox: Sandbox) -> None:
    result = run_cli("snapshot", sandbox.dsn_for("no_such_database"))
    assert_one_line_error(result, 'database "no_such_database" does not exist')


def test_wrong_password(sandbox: Sandbox) -> None:
    dsn = make_conninfo(sandbox.dsn, user=PASSWORD_ROLE, password="wrong-password")
    result = run_cli("snapshot", dsn)
    assert_one_line_error(result, "password authentication failed")
    assert "wrong-password" not in result.stderr  # the password is never printed


def test_malformed_dsn() -> None:
    assert_one_line_error(run_cli("snapshot", "host=127.0.0.1 port"), "invalid connection string")


def test_missing_pg_bin(tmp_path: Path) -> None:
    result = run_cli("sandbox", "start", "--data-dir", str(tmp_path / "sb"), "--pg-bin", "/nope")
    assert_one_line_error(result, "/nope has no postgres program")


def test_data_dir_not_writable(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    result = run_cli("sandbox", "start", "--data-dir", str(tmp_path / "file" / "sb"))
    assert_one_line_error(result, "cannot use")


def test_no_dsn_and_no_sandbox(tmp_path: Path) -> None:
    result = run_cli("snapshot", "--data-dir", str(tmp_path / "none"))
    assert_one_line_error(result, "no DSN given and no sandbox running")


def test_invalid_setting_on_the_command_line(sandbox: Sandbox) -> None:
    result = run_cli(
        "sandbox", "configure", "autovacuum_naptime=0", "--data-dir", str(sandbox.directory)
    )
    assert_one_line_error(result, "autovacuum_naptime = 0 is out of range")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("this is not json", "not a vacuumlab snapshot (not JSON)"),
        ('{"kind": "pgmetrics"}', "not a vacuumlab snapshot"),
        ('{"kind": "vacuumlab.snapshot", "schema_version": 7}', "upgrade vacuumlab"),
        ('{"kind": "vacuumlab.snapshot", "schema_version": 1, "tables": 3}', "damaged snapshot"),
    ],
)
def test_corrupt_or_foreign_snapshot_file(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "snap.json"
    path.write_text(content)
    assert_one_line_error(run_cli("snapshot", "--input", str(path)), fragment)


def test_missing_snapshot_file(tmp_path: Path) -> None:
    result = run_cli("snapshot", "--input", str(tmp_path / "absent.json"))
    assert_one_line_error(result, "No such file or directory")


def test_input_prints_the_same_as_the_live_run(embedded_database: str, tmp_path: Path) -> None:
    execute(
        embedded_database,
        'CREATE TABLE "[red]markup[/red]" (id int PRIMARY KEY, body text)',
        "INSERT INTO \"[red]markup[/red]\" SELECT i, 'x' FROM generate_series(1, 100) i",
        'DELETE FROM "[red]markup[/red]" WHERE id < 50',
    )
    saved = tmp_path / "snap.json"
    live = run_cli("snapshot", embedded_database, "--save", str(saved))
    assert live.returncode == 0, live.stderr
    again = run_cli("snapshot", "--input", str(saved))
    assert again.returncode == 0, again.stderr
    assert again.stdout == live.stdout
    assert "public.[red]markup[/red]" in live.stdout  # rich markup in a name is not applied
    as_json = run_cli("snapshot", "--input", str(saved), "--format", "json")
    assert json.loads(as_json.stdout) == json.loads(saved.read_text())


def test_output_file(embedded_database: str, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    result = run_cli("snapshot", embedded_database, "--format", "json", "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert json.loads(target.read_text())["kind"] == "vacuumlab.snapshot"


def test_snapshot_exact_keeps_its_figures_for_advise_input(
    embedded_database: str, tmp_path: Path
) -> None:
    """`snapshot --exact -o s.json` then `advise --input s.json`: the exact figures survive."""
    execute(embedded_database, *BLOATED_TABLE)
    saved = tmp_path / "s.json"
    made = run_cli("snapshot", embedded_database, "--exact", "--format", "json", "-o", str(saved))
    assert made.returncode == 0, made.stderr
    [row] = json.loads(saved.read_text())["exact"]
    assert row["dead_tuple_count"] == 15000
    advised = run_cli("advise", "--input", str(saved), "--format", "json")
    assert advised.returncode == 0, advised.stderr
    advice = json.loads(advised.stdout)
    assert advice["exact"]
    assert any("bloat measured" in f["title"] for f in advice["findings"])


def test_snapshot_exact_needs_a_server(tmp_path: Path) -> None:
    saved = tmp_path / "s.json"
    saved.write_text("{}")
    result = run_cli("snapshot", "--input", str(saved), "--exact")
    assert_one_line_error(result, "no --exact")


def test_sandbox_commands(tmp_path: Path) -> None:
    directory = str(tmp_path / "cli-sandbox")
    started = run_cli("sandbox", "start", "--data-dir", directory, "--set", "autovacuum_naptime=2s")
    assert started.returncode == 0, started.stderr
    try:
        status = json.loads(run_cli("sandbox", "status", "--data-dir", directory, "--format",
                                    "json").stdout)  # fmt: skip
        assert status["running"] is True
        assert status["long_lived"] is True
        url = run_cli("sandbox", "url", "--data-dir", directory).stdout.strip()
        assert url == status["dsn"]
        psql = run_cli(
            "sandbox", "psql", "--data-dir", directory, "--", "-Atc", "SHOW autovacuum_naptime"
        )
        assert psql.stdout.strip() == "2s"
        snap = run_cli("snapshot", "--data-dir", directory, "--format", "json")
        assert json.loads(snap.stdout)["server"]["version_num"] >= 180000
        stopped = run_cli("sandbox", "stop", "--data-dir", directory)
        assert stopped.stdout.strip() == "stopped"
        status = json.loads(run_cli("sandbox", "status", "--data-dir", directory, "--format",
                                    "json").stdout)  # fmt: skip
        assert status["running"] is False
    finally:
        destroyed = run_cli("sandbox", "destroy", "--yes", "--data-dir", directory)
    assert destroyed.returncode == 0, destroyed.stderr
    assert not Path(directory).exists()


def test_demo_runs_and_leaves_no_server(tmp_path: Path) -> None:
    directory = tmp_path / "demo-sandbox"
    result = run_cli("demo", "--seconds", "3", "--data-dir", str(directory))
    assert result.returncode == 0, result.stderr
    for expected in ("vacuumlab_demo.jobs", "toast.autovacuum_vacuum_scale_factor=0.05",
                     "autovacuum_enabled=false", "Sessions holding the xmin horizon",
                     "vacuumlab-demo-holder"):  # fmt: skip
        assert expected in result.stdout
    assert not Sandbox.open(directory).is_running()
    assert "autovacuum_naptime" not in (directory / "pgdata/postgresql.auto.conf").read_text()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("run", "churn", "--clients", "abc"), "Invalid value for '--clients'"),
        (("report",), "Missing argument 'RUN'"),
        (("snapshot", "--format", "xml"), "Invalid value for '--format'"),
        (("no-such-command",), "No such command"),
        (("run", "churn", "--preset", "nope"), "unknown preset 'nope'"),
        (("run", "churn", "--warmup", "100"), "must be shorter than --seconds"),
        (("run", "churn", "--steps", "/nonexistent.toml"), "cannot read /nonexistent.toml"),
    ],
)
def test_usage_errors_are_one_line(args: tuple[str, ...], fragment: str) -> None:
    assert_one_line_error(run_cli(*args), fragment)


def test_report_and_runs_need_a_store(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.sqlite")
    assert_one_line_error(run_cli("report", "1", "--store", missing), "no results store")
    assert_one_line_error(run_cli("runs", "--store", missing), "no results store")


def _help(command: tuple[str, ...]) -> str:
    """A command's --help as the user reads it, with line wrapping undone."""
    return " ".join(help_of(command).split())


def _defaults(command: tuple[str, ...]) -> list[str]:
    """Every ``[default: …]`` the help should show: written in an option's help, or added by
    click for an option with a shown default."""
    click_command = typer.main.get_command(app)
    for name in command:
        click_command = click_command.commands[name]  # type: ignore[attr-defined]
    ctx = click_command.make_context("vacuumlab", ["--help"], resilient_parsing=True)
    expected = []
    for param in click_command.params:
        record = param.get_help_record(ctx)
        texts = [getattr(param, "help", None) or "", record[1] if record else ""]
        expected += [m for text in texts for m in re.findall(r"\[default: [^\]]*\]", text)]
    return [" ".join(e.split()) for e in expected]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_shows_every_default(command: tuple[str, ...]) -> None:
    text = _help(command)
    for default in _defaults(command):
        assert default in text, (default, text)
    if command == ("run", "churn"):
        assert "TOML file of [[step]] tables" in text


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_names_publications_not_seed_files(command: tuple[str, ...]) -> None:
    text = _help(command)
    assert not re.search(r"seed \d", text), text
    if command[0] == "run" and len(command) == 2:
        publication = PUBLICATIONS[command[1]]
        if publication is None:
            assert "no published work is reproduced" in text, text
        else:
            assert publication.title in text


@pytest.mark.parametrize(
    ("command", "config", "option", "field"),
    [
        (("run", "churn"), ChurnConfig, "--seconds", "seconds"),
        (("run", "churn"), ChurnConfig, "--backlog", "backlog"),
        (("run", "cost-driver"), CostDriverConfig, "--rows", "rows"),
        (("run", "cost-driver"), CostDriverConfig, "--dead", "dead_pcts"),
        (("run", "fillfactor"), FillfactorConfig, "--seconds", "seconds"),
        (("run", "toast"), ToastConfig, "--width", "width"),
        (("run", "scheduling"), SchedulingConfig, "--seconds", "seconds"),
    ],
)
def test_options_left_to_the_preset_show_each_presets_value(
    command: tuple[str, ...], config: type[Config], option: str, field: str
) -> None:
    """An option left unset takes its preset's value; --help says which, per preset."""
    text = _help(command)
    listed = text.index("Options")  # the options list, not the example above it
    after = text[text.index(option + " ", listed) :]
    default = after[after.index("[default: ") :]
    default = default[: default.index("]")]
    for name, preset in config.presets().items():
        value = getattr(preset, field)
        shown = ",".join(map(str, value)) if isinstance(value, tuple) else f"{value:,}"
        assert shown in default, (name, shown, default)


def test_an_unexpected_server_error_is_told_as_one(sandbox: Sandbox) -> None:
    """What a server raises that vacuumlab did not expect (a query one version does not
    take) is known as the server's, for a one-line error; vacuumlab's own errors are not."""
    from vacuumlab.cli import _is_database_error

    with psycopg.connect(sandbox.dsn) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("SELECT 1 / 0")
    assert _is_database_error(raised.value)
    assert not _is_database_error(VacuumlabError("x"))
    assert not _is_database_error(ValueError("x"))
