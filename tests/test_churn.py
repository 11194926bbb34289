"""The churn study against the embedded PostgreSQL 18: the store holds what the raw logs say."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest

from helpers.cli import run_cli
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.churn import ChurnConfig
from vacuumlab.records.churn_spec import (
    POST_STEPS,
    Step,
    reloptions_in_force,
    setting_metric,
)
from vacuumlab.store import Point, Store
from vacuumlab.studies.churn import ChurnRun, load_steps

make_config = ChurnConfig.from_preset

NAPTIME_1S = Step("naptime 1s", {"autovacuum_naptime": "1s", "autovacuum_vacuum_cost_delay": "0"})


def raw_transactions(directory: Path) -> tuple[np.ndarray, np.ndarray]:
    """Completion times and latencies (ms) straight from pgbench's per-thread logs."""
    ends, latencies = [], []
    for path in sorted(directory.glob("pgbench_log.*")):
        for line in path.read_text().splitlines():
            fields = line.split()
            if fields[2].isdigit():
                latencies.append(int(fields[2]) / 1000)
                ends.append(int(fields[4]) + int(fields[5]) / 1e6)
    return np.array(ends), np.array(latencies)


def assert_summary_matches_raw_log(point: Point, directory: Path, config: ChurnConfig) -> None:
    ends, latencies = raw_transactions(directory)
    start = point.started_at.timestamp()
    window = latencies[(ends >= start + config.warmup) & (ends < start + config.seconds)]
    m = point.metrics
    assert m["transactions"] == len(window) > 0
    assert m["tps"] == pytest.approx(len(window) / (config.seconds - config.warmup), rel=1e-9)
    assert m["latency_mean_ms"] == pytest.approx(window.mean(), rel=1e-9)
    assert m["latency_stddev_ms"] == pytest.approx(window.std(), rel=1e-9)
    for q in (50, 95, 99):
        assert m[f"latency_p{q}_ms"] == pytest.approx(np.percentile(window, q), rel=1e-9)
    assert m["latency_mean_ci_low"] <= m["latency_mean_ms"] <= m["latency_mean_ci_high"]


def test_one_short_step_is_measured_and_stored(sandbox: Sandbox, tmp_path: Path) -> None:
    config = make_config("quick", steps=(NAPTIME_1S,), seconds=8, warmup=2, backlog=5000)
    with Store.open(tmp_path / "results.sqlite") as store:
        run = ChurnRun(config, Target.of_sandbox(sandbox), store)
        run_id = run.execute()
        [point] = store.points(run_id)
        assert store.run(run_id).status == "done"
        assert_summary_matches_raw_log(point, run.artifacts / "step-1-rep-0", config)
        tps = store.series(point.id, "tps")
        assert [t for t, _ in tps] == list(range(8))  # one value per second of load
        assert sum(v or 0 for _, v in tps) >= point.metrics["transactions"]
        dead = store.series(point.id, "n_dead_tup")
        assert len(dead) >= 6  # the 1 Hz sampler
        assert point.metrics["dead_tuples_peak"] == max(v for _, v in dead if v is not None)
        runs = store.series(point.id, "autovacuum")
        assert len(runs) == point.metrics["autovacuum_count"] >= 1  # naptime 1s, 8 s of churn
        assert all(0 <= duration < 8 for _, duration in runs)
    # The step's settings were applied for the step and put back afterwards.
    assert "autovacuum_naptime" not in (sandbox.pgdata / "postgresql.auto.conf").read_text()


@pytest.mark.slow
def test_two_steps_show_the_difference_autovacuum_makes(sandbox: Sandbox, tmp_path: Path) -> None:
    steps = (Step("naptime 1min", {"autovacuum_naptime": "1min"}), NAPTIME_1S)
    config = make_config("quick", steps=steps, seconds=20, warmup=3, backlog=20000)
    with Store.open(tmp_path / "results.sqlite") as store:
        run = ChurnRun(config, Target.of_sandbox(sandbox), store)
        run_id = run.execute()
        slow, fast = store.points(run_id)
        for number, point in enumerate((slow, fast), start=1):
            assert_summary_matches_raw_log(point, run.artifacts / f"step-{number}-rep-0", config)
        # With naptime 1 min nothing vacuums the table in 20 s; with 1 s autovacuum keeps up.
        assert fast.metrics["autovacuum_count"] > slow.metrics["autovacuum_count"]
        # How low the peak stays depends on when the launcher comes round (measured: a third
        # to a half of the other step's); without vacuum it would match it.
        assert fast.metrics["dead_tuples_peak"] < slow.metrics["dead_tuples_peak"] / 2
        assert fast.metrics["heap_bytes_end"] < slow.metrics["heap_bytes_end"]


def test_steps_file(tmp_path: Path) -> None:
    path = tmp_path / "steps.toml"
    path.write_text(
        '[[step]]\nname = "queue table"\nscope = "table"\n'
        "settings = { autovacuum_vacuum_scale_factor = 0.01, autovacuum_enabled = true }\n"
        '[[step]]\nname = "server"\nsettings = { autovacuum_naptime = "10s" }\n'
    )
    first, second = load_steps(path)
    assert first == Step(
        "queue table",
        {"autovacuum_vacuum_scale_factor": "0.01", "autovacuum_enabled": "on"},
        "table",
    )
    assert second.scope == "server"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not toml [", "is not valid TOML"),
        ("x = 1", "has no [[step]] tables"),
        ('[[step]]\nname = "a"', "has no settings"),
        ('[[step]]\nname = "a"\nscope = "db"\nsettings = {a = 1}', 'scope must be "server"'),
        ("[[step]]\nsettings = {a = 1}", "has no name"),
    ],
)
def test_bad_steps_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "steps.toml"
    path.write_text(text)
    with pytest.raises(VacuumlabError, match=message.replace("[", r"\[")):
        load_steps(path)


def test_config_round_trips_through_the_store_params() -> None:
    config = make_config("paper", clients=3, repeat=2)
    assert ChurnConfig.from_params(config.params()) == config
    assert config.steps == POST_STEPS
    assert (config.seconds, config.clients, config.jobs) == (300, 3, 2)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"warmup": 90}, "must be shorter than --seconds"),
        ({"clients": 0}, "at least 1"),
        ({"backlog": -1}, "must not be negative"),
    ],
)
def test_bad_config(overrides: dict[str, int], message: str) -> None:
    with pytest.raises(VacuumlabError, match=message):
        make_config("quick", **overrides)


def test_settings_are_validated_before_anything_runs(sandbox: Sandbox, tmp_path: Path) -> None:
    cases = [
        (Step("bad value", {"autovacuum_naptime": "0"}), "out of range"),
        (Step("per table", {"autovacuum_naptime": "1s"}, "table"), "cannot be set per table"),
        (Step("bad reloption", {"autovacuum_vacuum_scale_factor": "-3"}, "table"), "-3"),
    ]
    with Store.open(tmp_path / "results.sqlite") as store:
        for step, message in cases:
            config = make_config("quick", steps=(NAPTIME_1S, step), seconds=5, warmup=1)
            with pytest.raises(VacuumlabError, match=message):
                ChurnRun(config, Target.of_sandbox(sandbox), store).execute()
        assert store.runs() == []  # nothing was started


def test_named_server_needs_permission_for_server_settings(sandbox: Sandbox) -> None:
    target = Target.of_dsn(sandbox.dsn, allow_alter_system=False, pg_bin=None)
    with pytest.raises(VacuumlabError, match="pass --allow-alter-system"):
        target.check({"autovacuum_naptime": "1s"})
    target.check({})  # table-scope steps need nothing server-wide


def test_named_server_settings_are_restored(sandbox_root: Path) -> None:
    with Sandbox.start(sandbox_root / "named") as server:
        server.configure({"autovacuum_vacuum_cost_limit": "300"})  # set by ALTER SYSTEM before
        target = Target.of_dsn(server.dsn, allow_alter_system=True, pg_bin=None)
        target.apply({"autovacuum_vacuum_cost_limit": "5000", "autovacuum_naptime": "2s"})
        auto_conf = (server.pgdata / "postgresql.auto.conf").read_text()
        assert "5000" in auto_conf
        target.restore()
        auto_conf = (server.pgdata / "postgresql.auto.conf").read_text()
        assert "autovacuum_vacuum_cost_limit = '300'" in auto_conf
        assert "autovacuum_naptime" not in auto_conf
        with pytest.raises(VacuumlabError, match="need a server restart"):
            target.check({"shared_buffers": "64MB"})


def test_a_step_on_a_named_server_puts_back_what_the_one_before_changed(
    sandbox: Sandbox,
) -> None:
    """ALTER SYSTEM on a server the user names: each step reads as the baseline plus its own
    settings as soon as apply_step returns, a baseline set by ALTER SYSTEM comes back by value,
    and restore still leaves postgresql.auto.conf as it was."""
    names = ("autovacuum_vacuum_cost_limit", "autovacuum_naptime")

    def read() -> tuple[str, ...]:
        with psycopg.connect(sandbox.dsn) as conn:
            rows = dict(conn.execute(
                "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", [list(names)]
            ).fetchall())  # fmt: skip
        return tuple(rows[n] for n in names)

    sandbox.configure({"autovacuum_vacuum_cost_limit": "300"})  # the baseline, by ALTER SYSTEM
    try:
        naptime = read()[1]
        target = Target.of_dsn(sandbox.dsn, allow_alter_system=True, pg_bin=None)
        target.apply_step({"autovacuum_vacuum_cost_limit": "5000", "autovacuum_naptime": "2s"})
        assert read() == ("5000", "2")
        target.apply_step({"autovacuum_naptime": "3s"})
        assert read() == ("300", "3")
        target.apply_step({})
        assert read() == ("300", naptime)
        target.apply_step({"autovacuum_naptime": "4s"})
        target.restore()
        auto_conf = (sandbox.pgdata / "postgresql.auto.conf").read_text()
        assert "autovacuum_vacuum_cost_limit = '300'" in auto_conf
        assert "autovacuum_naptime" not in auto_conf
    finally:
        sandbox.configure({"autovacuum_vacuum_cost_limit": None})


def _points_in(store: Path) -> int:
    if not store.exists():
        return 0
    with sqlite3.connect(store) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM points").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


@pytest.mark.slow
def test_sigint_keeps_finished_steps_and_resume_finishes(tmp_path: Path) -> None:
    steps = tmp_path / "steps.toml"
    steps.write_text(
        '[[step]]\nname = "one"\nsettings = { autovacuum_naptime = "1s" }\n'
        '[[step]]\nname = "two"\nsettings = { autovacuum_naptime = "2s" }\n'
    )
    store, data_dir = tmp_path / "results.sqlite", tmp_path / "sandbox"
    args = ["run", "churn", "--steps", str(steps), "--seconds", "6", "--warmup", "1",
            "--backlog", "2000", "--store", str(store), "--data-dir", str(data_dir)]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "vacuumlab", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"COLUMNS": "160"},
    )
    deadline = time.monotonic() + 60
    while _points_in(store) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # well inside step two
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Continue with: vacuumlab run churn --resume 1" in stderr
    assert "Traceback" not in stderr
    assert not Sandbox.open(data_dir).is_running()
    with Store.open(store) as results:
        assert results.run(1).status == "interrupted"
        assert [p.params["name"] for p in results.points(1)] == ["one"]

    resumed = run_cli("run", "churn", "--resume", "1", "--store", str(store),
                      "--data-dir", str(data_dir))  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    with Store.open(store) as results:
        assert results.run(1).status == "done"
        assert [p.params["name"] for p in results.points(1)] == ["one", "two"]
    assert "report: " in resumed.stdout
    assert not Sandbox.open(data_dir).is_running()


class Recorder:
    """A reporter that keeps what it is told."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.labels: list[str] = []

    def started(self, total: int) -> None:
        pass

    def point_started(self, label: str, seconds: int | None) -> None:
        self.labels.append(label)

    def tick(self, elapsed: float, live: object) -> None:
        pass

    def point_finished(self, label: str, metrics: object) -> None:
        pass

    def message(self, text: str) -> None:
        self.messages.append(text)


@pytest.mark.slow
def test_continuous_repeated_steps_share_one_table(sandbox: Sandbox, tmp_path: Path) -> None:
    steps = (Step("a", {"autovacuum_naptime": "2s"}), Step("b", {"autovacuum_naptime": "1s"}))
    config = make_config(
        "quick", steps=steps, seconds=3, warmup=1, backlog=2000, repeat=2, continuous=True
    )
    recorder = Recorder()
    with Store.open(tmp_path / "results.sqlite") as store:
        run_id = ChurnRun(config, Target.of_sandbox(sandbox), store, recorder).execute()
        points = store.points(run_id)
    assert [(p.params["name"], p.repetition) for p in points] == [
        ("a", 0), ("b", 0), ("a", 1), ("b", 1),
    ]  # fmt: skip
    assert sum("backlog" in m for m in recorder.messages) == 1  # loaded once, not per step
    assert recorder.labels[-1] == "step 2/2: b (repetition 2/2)"


def _relations_outside(dsn: str, schema: str) -> set[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', %s) "
            "AND n.nspname !~ '^pg_toast'",
            [schema],
        ).fetchall()
    return {r[0] for r in rows}


def test_named_server_run_stays_in_its_schema(database: str, tmp_path: Path) -> None:
    """On a server the user names (the embedded 18, then VACUUMLAB_TEST_DSN): table-scope
    settings need no ALTER SYSTEM, the study touches nothing outside schema vacuumlab, and
    leaves nothing behind."""
    import psycopg

    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("CREATE TABLE bystander (id int PRIMARY KEY)")
        conn.execute("INSERT INTO bystander SELECT generate_series(1, 100)")
    before = _relations_outside(database, "vacuumlab")
    step = Step(
        "aggressive", {"autovacuum_vacuum_scale_factor": "0", "autovacuum_vacuum_threshold": "50",
                       "autovacuum_vacuum_cost_delay": "0ms"}, "table",
    )  # fmt: skip
    config = make_config("quick", steps=(step,), seconds=4, warmup=1, backlog=2000, target="server")
    target = Target.of_dsn(database, allow_alter_system=False, pg_bin=None)
    with Store.open(tmp_path / "results.sqlite") as store:
        run_id = ChurnRun(config, target, store).execute()
        [point] = store.points(run_id)
        assert point.metrics["transactions"] > 0
        assert store.run(run_id).status == "done"
    assert _relations_outside(database, "vacuumlab") == before
    with psycopg.connect(database) as conn:
        schemas = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'vacuumlab'").fetchall()
        rows = conn.execute("SELECT count(*) FROM bystander").fetchone()
    assert schemas == []  # the study's table and schema are gone
    assert rows == (100,)


def test_continuous_steps_keep_neither_table_nor_server_settings_of_the_one_before(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """On one table for all steps: a table step, a server step, then a table step that names
    less. Each runs with its own settings only, as read back just before its load: the server
    step on a table without the first step's storage parameters, the last without the first's
    cost delay and on the server's naptime as before the run."""
    steps = (
        Step("table", {"autovacuum_vacuum_scale_factor": "0.01",
                       "autovacuum_vacuum_cost_delay": "0"}, "table"),
        Step("server", {"autovacuum_naptime": "3s"}),
        Step("table, less", {"autovacuum_vacuum_scale_factor": "0.05"}, "table"),
    )  # fmt: skip
    config = make_config(
        "quick", steps=steps, seconds=2, warmup=1, backlog=1000, clients=2, jobs=1,
        continuous=True,
    )  # fmt: skip
    with psycopg.connect(sandbox.dsn) as conn:
        row = conn.execute("SELECT setting FROM pg_settings WHERE name = 'autovacuum_naptime'")
        naptime = row.fetchone()
    assert naptime is not None
    assert naptime[0] != "3"
    with Store.open(tmp_path / "results.sqlite") as store:
        run_id = ChurnRun(config, Target.of_sandbox(sandbox), store).execute()
        first, server, last = store.points(run_id)
    assert reloptions_in_force(first.metrics) == {
        "bencher": {"autovacuum_vacuum_scale_factor": "0.01", "autovacuum_vacuum_cost_delay": "0"}
    }
    assert reloptions_in_force(server.metrics) == {}
    assert reloptions_in_force(last.metrics) == {
        "bencher": {"autovacuum_vacuum_scale_factor": "0.05"}
    }
    naptimes = [p.metrics[setting_metric("autovacuum_naptime")] for p in (first, server, last)]
    assert naptimes == [naptime[0], "3", naptime[0]]
