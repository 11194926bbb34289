"""``vacuumlab tune`` as a user runs it: bad input is one line before any server starts; a
small tune of a captured queue stores its trials, survives Ctrl-C, resumes, and ends with SQL
that runs on a server like the one the profile came from (or says to keep the settings)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from helpers.cli import assert_one_line_error, run_cli
from helpers.tune import queue_profile
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.tune import TrialPoint
from vacuumlab.records.tune_spec import (
    VERDICT_IMPROVED,
    VERDICT_STAGE,
    VERDICT_TEXT,
    kind,
    predicted,
)
from vacuumlab.store import Store


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    profile = tmp_path / "jobs.json"
    profile.write_text(queue_profile(5_000, 100.0).dump_json(), encoding="utf-8")
    space = tmp_path / "space.toml"
    space.write_text(
        "[server]\nautovacuum_naptime = { levels = [1, 60] }\n"
        '[table."app.jobs"]\nautovacuum_vacuum_scale_factor = [0.01, 0.2]\n'
        "autovacuum_vacuum_threshold = 50\nautovacuum_vacuum_insert_scale_factor = false\n"
        "autovacuum_vacuum_insert_threshold = false\nautovacuum_vacuum_cost_delay = 0\n"
        "autovacuum_vacuum_cost_limit = false\nfillfactor = false\n",
        encoding="utf-8",
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    empty = tmp_path / "empty.toml"
    empty.write_text(
        "[server]\nautovacuum_naptime = 60\n[table.jobs]\n"
        + "".join(
            f"{name} = false\n"
            for name in (
                "autovacuum_vacuum_scale_factor",
                "autovacuum_vacuum_threshold",
                "autovacuum_vacuum_insert_scale_factor",
                "autovacuum_vacuum_insert_threshold",
                "autovacuum_vacuum_cost_delay",
                "autovacuum_vacuum_cost_limit",
                "fillfactor",
            )
        ),
        encoding="utf-8",
    )
    wrong = tmp_path / "wrong.toml"
    wrong.write_text("[server]\nautovacuum_naptime = [0, 10]\n", encoding="utf-8")
    return {"profile": profile, "space": space, "bad": bad, "empty": empty, "wrong": wrong}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "{bad}"], "is not a vacuumlab profile (not JSON)"),
        (["--profile", "{profile}", "--space", "{wrong}"], "out of range"),
        (["--profile", "{profile}", "--space", "{empty}"], "leaves nothing to search"),
        (["--profile", "{profile}", "--budget", "30s"], "shorter than one trial"),
        (["--profile", "{profile}", "--objective", "speed"], "--objective takes"),
        ([], "needs --profile"),
    ],
)
def test_bad_input_is_one_line_and_starts_nothing(
    files: dict[str, Path], tmp_path: Path, args: list[str], message: str
) -> None:
    data_dir = tmp_path / "sandbox"
    filled = [a.format(**files) for a in args]
    result = run_cli("tune", *filled, "--data-dir", str(data_dir),
                     "--store", str(tmp_path / "results.sqlite"))  # fmt: skip
    assert_one_line_error(result, message)
    assert not data_dir.exists()


def _trials_in(store: Path) -> int:
    if not store.exists():
        return 0
    with sqlite3.connect(store) as conn:
        try:
            row = conn.execute("SELECT count(*) FROM points WHERE params LIKE '%\"trial\":%'")
            return int(row.fetchone()[0])
        except sqlite3.OperationalError:
            return 0


@pytest.mark.slow
def test_a_small_tune_resumes_after_sigint_and_ends_with_sql_that_runs(
    files: dict[str, Path], tmp_path: Path, sandbox_root: Path
) -> None:
    store, data_dir = tmp_path / "results.sqlite", tmp_path / "sandbox"
    args = ["tune", "--profile", str(files["profile"]), "--space", str(files["space"]),
            "--trials", "3", "--confirm", "2", "--candidates", "60", "--seconds", "3",
            "--warmup", "1", "--clients", "2", "--jobs", "1", "--store", str(store),
            "--data-dir", str(data_dir)]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "vacuumlab", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=os.environ | {"COLUMNS": "160"},
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while _trials_in(store) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.5)  # inside trial two
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Continue with: vacuumlab tune --resume 1" in stderr
    assert "Traceback" not in stderr
    assert "the search space:" in stderr  # printed before the search starts
    assert not Sandbox.open(data_dir).is_running()
    with Store.open(store) as results:
        assert results.run(1).status == "interrupted"
        kept = [p for p in results.points(1) if kind(p.params) == "trial"]
        assert len(kept) == 1

    resumed = run_cli("tune", "--resume", "1", "--store", str(store), "--data-dir", str(data_dir))
    assert resumed.returncode == 0, resumed.stderr
    assert not Sandbox.open(data_dir).is_running()
    with Store.open(store) as results:
        assert results.run(1).status == "done"
        points = results.points(1)
    trials = [p for p in points if kind(p.params) == "trial"]
    firsts = {TrialPoint.from_params(p.params).number for p in trials if p.repetition == 0}
    assert firsts == {1, 2, 3}
    assert len(trials) == 3 + 2 * 2  # the best and the current measured twice more
    for p in trials:
        point = TrialPoint.from_params(p.params)
        # What was in force, read back, is what the trial asked for.
        naptime = point.settings.server.get("autovacuum_naptime", "60")
        assert p.metrics["setting:autovacuum_naptime"] == naptime
        assert isinstance(p.metrics[predicted("dead_peak")], float)
    [verdict] = [p for p in points if kind(p.params) == VERDICT_STAGE]
    assert "report: " in resumed.stdout

    # The current settings vacuum nothing in a 4-second trial; naptime 1 s vacuums every
    # second: the win is far beyond the noise, and the SQL puts it in force.
    assert verdict.metrics[VERDICT_IMPROVED] == 1, verdict.metrics[VERDICT_TEXT]
    statements = [line for line in resumed.stdout.splitlines() if line.startswith("ALTER ")]
    assert any(s.startswith('ALTER TABLE "app"."jobs" SET') for s in statements), resumed.stdout
    source_dir = sandbox_root / f"source-{os.getpid()}"
    with Sandbox.start(source_dir) as source, psycopg.connect(source.dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA app")
        conn.execute("CREATE TABLE app.jobs (id bigint PRIMARY KEY, attempts int)")
        for line in statements:  # as psql -f runs them: one statement at a time
            for statement in line.split("; "):
                conn.execute(statement)  # type: ignore[arg-type]
        conn.execute("SELECT pg_reload_conf()")
        [options] = conn.execute(
            "SELECT reloptions FROM pg_class WHERE oid = 'app.jobs'::regclass"
        ).fetchone()  # type: ignore[misc]
    assert any(o.startswith("autovacuum_vacuum_scale_factor=") for o in options)
