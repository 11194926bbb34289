"""``vacuumlab simulate`` as a user runs it: on a real server's churn, from saved snapshots, with
what-ifs, in every format, and with bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from psycopg import sql

from helpers.cli import run_cli
from helpers.db import execute
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.simulation import load_simulation

QUEUE = '"<b>queue</b>"'


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory, sandbox: Sandbox) -> tuple[Path, Path]:
    """Two snapshots of a database whose queue (named with markup) churns between them."""
    folder = tmp_path_factory.mktemp("simulate")
    dsn = _database(sandbox, "simulate_cli")
    execute(
        dsn,
        f"CREATE TABLE {QUEUE} (id int PRIMARY KEY, v text)",
        f"INSERT INTO {QUEUE} SELECT g, 'x' FROM generate_series(1, 2000) g",
        f"VACUUM ANALYZE {QUEUE}",
    )
    first, second = folder / "a.json", folder / "b.json"
    assert run_cli("snapshot", dsn, "--format", "json", "-o", str(first)).returncode == 0
    execute(dsn, f"UPDATE {QUEUE} SET v = 'y' WHERE id <= 1500")
    assert run_cli("snapshot", dsn, "--format", "json", "-o", str(second)).returncode == 0
    return first, second


def _database(sandbox: Sandbox, name: str) -> str:
    execute(sandbox.dsn, sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
    execute(sandbox.dsn, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return sandbox.dsn_for(name)


def test_simulate_from_saved_snapshots_in_json(saved: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "sim.json"
    result = run_cli(
        "simulate", "--input", str(saved[0]), "--input", str(saved[1]), "--hours", "1",
        "--format", "json", "-o", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    sim = load_simulation(out)
    queue = sim.relation("public.<b>queue</b>")
    assert queue is not None, [r.relation for r in sim.relations]
    # 1,500 dead tuples over the interval, taken as a steady rate: each minute gathers far more
    # than 50 + 0.2 × 2,000 = 450, so every worker (once a minute, the first half a minute in)
    # vacuums it.
    assert queue.dead_per_second == pytest.approx(1500 / sim.interval_s, rel=0.01)
    assert queue.vacuums == 60
    assert queue.first_start_s == 30
    assert queue.mean_interval_s == pytest.approx(60)
    assert queue.peak_dead >= 60 * queue.dead_per_second
    assert sim.hours == 1
    assert json.loads(out.read_text())["kind"] == "vacuumlab.simulation"


def test_a_what_if_is_named_in_the_output_and_changes_it(saved: tuple[Path, Path]) -> None:
    args = ("simulate", "--input", str(saved[0]), "--input", str(saved[1]), "--hours", "1")
    off = run_cli(*args, "--set", "public.<b>queue</b>.autovacuum_enabled=off", "--format", "md")
    assert off.returncode == 0, off.stderr
    assert "autovacuum\\_enabled=off" in off.stdout or "autovacuum_enabled=off" in off.stdout
    assert "\\<b\\>queue\\</b\\>" in off.stdout  # escaped, not markup
    row = next(line for line in off.stdout.splitlines() if "queue" in line and "/s" in line)
    assert "| 0 |" in row  # with autovacuum off for it: never vacuumed


def test_html_has_the_worker_timeline_and_escapes_names(saved: tuple[Path, Path]) -> None:
    args = ("simulate", "--input", str(saved[0]), "--input", str(saved[1]), "--hours", "2")
    result = run_cli(*args, "--format", "html")
    assert result.returncode == 0, result.stderr
    assert '<svg id="workers"' in result.stdout
    assert "<b>queue</b>" not in result.stdout
    assert "&lt;b&gt;queue&lt;/b&gt;" in result.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--set", "autovacuum_naptime=0"), "out of range"),
        (("--set", "no_such_setting=1"), "knows no setting"),
        (("--set", "public.missing.autovacuum_enabled=off"), "no table public.missing"),
        (("--hours", "0"), "--hours"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    saved: tuple[Path, Path], extra: tuple[str, ...], message: str
) -> None:
    result = run_cli("simulate", "--input", str(saved[0]), "--input", str(saved[1]), *extra)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_snapshots_out_of_order_are_refused(saved: tuple[Path, Path]) -> None:
    result = run_cli("simulate", "--input", str(saved[1]), "--input", str(saved[0]))
    assert result.returncode == 2
    assert "give them in order" in result.stderr


def test_simulate_live_on_the_sandbox(sandbox: Sandbox) -> None:
    result = run_cli("simulate", sandbox.dsn, "--interval", "1s", "--hours", "0.5")
    assert result.returncode == 0, result.stderr
    assert "waiting 1 s for a second snapshot" in result.stderr
    assert "Worker use" in result.stdout
