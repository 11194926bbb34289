"""The custom study on the embedded PostgreSQL 18: the churn queue written as a schema and a
script, and hand-built profiles replayed at their captured rates."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from helpers.cli import run_cli
from helpers.db import execute
from vacuumlab.errors import Interrupted
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.churn import Step
from vacuumlab.records.custom import AS_IS, CustomConfig, Script
from vacuumlab.records.custom_spec import (
    CAPTURE_SECONDS,
    checks,
    rate_metric,
    reloptions_in_force,
    setting_metric,
)
from vacuumlab.records.profile import (
    CapturedTable,
    Column,
    ColumnStats,
    Constraint,
    Index,
    Profile,
    Rates,
    Shape,
    Statement,
    load_profile,
)
from vacuumlab.report.custom import render
from vacuumlab.store import Store
from vacuumlab.studies.base import Silent
from vacuumlab.studies.custom import CustomRun
from vacuumlab.studies.steps import load_steps

DOCS = Path(__file__).parent.parent / "docs" / "studies" / "custom.md"
NAPTIME = Step("naptime 1s", {"autovacuum_naptime": "1s"})


def docs_files(tmp_path: Path) -> tuple[Path, Path]:
    """The schema and script the docs show, as written there (the backlog made small)."""
    blocks = re.findall(r"```sql\n(.*?)```", DOCS.read_text(), re.S)
    schema, script = tmp_path / "queue-schema.sql", tmp_path / "queue.sql"
    schema.write_text(blocks[0].replace("100000", "3000"))
    script.write_text(blocks[1])
    return schema, script


@pytest.mark.slow
def test_docs_queue_runs_as_custom_study(tmp_path: Path) -> None:
    schema, script = docs_files(tmp_path)
    store = tmp_path / "r.sqlite"
    result = run_cli("run", "custom", "--schema", str(schema), "--script", f"{script}@1",
                     "--seconds", "4", "--warmup", "1", "--store", str(store),
                     "--data-dir", str(tmp_path / "sb"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    with Store.open(store) as s:
        [point] = s.points(1)
        m = point.metrics
        assert m["transactions"] > 0
        assert m[rate_metric("replayed", "inserts", "bencher")] > 0
        assert m[rate_metric("replayed", "deletes", "bencher")] > 0
        assert len(s.series(point.id, "n_dead_tup")) >= 3
        assert len(s.series(point.id, "tps")) == 5
    html = (tmp_path / "runs" / "1" / "report" / "report.html").read_text()
    assert "nothing was captured to compare with" in html
    assert "off by more than 10 %" not in html


def _column(name: str, type_: str, distinct: float = -1.0, corr: float | None = 1.0,
            width: int = 4, not_null: bool = True) -> Column:  # fmt: skip
    stats = ColumnStats(null_frac=0.0, avg_width=width, n_distinct=distinct, correlation=corr)
    return Column(name=name, type=type_, not_null=not_null, storage="plain", stats=stats)


def accounts(rows: int, update_rate: float, hot_share: float) -> CapturedTable:
    """A pgbench_accounts-like table updated by aid, abalance unindexed."""
    shape = Shape(
        schema_name="public", name="accounts", rows=rows, pages=rows // 60, heap_bytes=0,
        columns=[_column("aid", "integer"), _column("bid", "integer", 1, 1.0),
                 _column("abalance", "integer", 100, 0.0),
                 Column(name="filler", type="character(84)", not_null=False, storage="extended",
                        stats=ColumnStats(null_frac=0, avg_width=85, n_distinct=1,
                                          correlation=1.0))],
        indexes=[Index(name="accounts_pkey", definition="CREATE UNIQUE INDEX accounts_pkey ON "
                       "public.accounts USING btree (aid)", columns=["aid"], unique=True,
                       primary=True)],
        constraints=[Constraint(name="accounts_pkey", kind="p", definition="PRIMARY KEY (aid)")],
        fillfactor=None,
    )  # fmt: skip
    rates = Rates(inserts=0, updates=update_rate, hot_updates=update_rate * hot_share,
                  deletes=0, dead_tuples=0)  # fmt: skip
    return CapturedTable(shape=shape, rates=rates, explained=1.0)


def queue(rows: int, rate: float) -> CapturedTable:
    """A job queue: inserts, an update of the indexed status (three values), deletes."""
    shape = Shape(
        schema_name="app", name="jobs", rows=rows, pages=rows // 100, heap_bytes=0,
        columns=[Column(name="id", type="bigint", not_null=True, storage="plain", identity="d",
                        stats=ColumnStats(null_frac=0, avg_width=8, n_distinct=-1,
                                          correlation=1.0)),
                 _column("status", "text", 3, 0.2, 6), _column("attempts", "integer", 5, 0.0),
                 _column("payload", "text", -1, 0.0, 120, not_null=False)],
        indexes=[Index(name="jobs_pkey", definition="CREATE UNIQUE INDEX jobs_pkey ON app.jobs "
                       "USING btree (id)", columns=["id"], unique=True, primary=True),
                 Index(name="jobs_status", definition="CREATE INDEX jobs_status ON app.jobs "
                       "USING btree (status)", columns=["status"])],
        constraints=[Constraint(name="jobs_pkey", kind="p", definition="PRIMARY KEY (id)")],
    )  # fmt: skip
    rates = Rates(inserts=rate, updates=rate, hot_updates=0.0, deletes=rate, dead_tuples=0)
    return CapturedTable(shape=shape, rates=rates, explained=1.0)


def statement(qid: int, kind: str, table: str, rate: float, sets: list[str] = []) -> Statement:  # noqa: B006
    return Statement(queryid=qid, kind=kind, table=table, sets=sets, filters=["id"],  # type: ignore[arg-type]
                     calls_per_s=rate, rows_per_call=1.0, mean_ms=0.1)  # fmt: skip


def profile(tables: list[CapturedTable], statements: list[Statement]) -> Profile:
    return Profile(vacuumlab_version="test", captured_at=datetime.now(UTC), seconds=60,
                   server_version_num=180000, tables=tables, source="pg_stat_statements",
                   statements=statements)  # fmt: skip


def replay(
    sandbox: Sandbox, store: Store, p: Profile, seconds: int = 6, warmup: int = 3
) -> dict[str, object]:
    config = CustomConfig.from_preset(
        "quick", profile=p.model_dump(mode="json"), seconds=seconds, warmup=warmup,
        steps=(NAPTIME,),
    )  # fmt: skip
    run_id = CustomRun(config, Target.of_sandbox(sandbox), store).execute()
    [point] = store.points(run_id)
    return dict(point.metrics)


@pytest.mark.slow
def test_profile_replays_at_captured_rates(sandbox: Sandbox, store: Store, tmp_path: Path) -> None:
    p = profile(
        [accounts(20_000, 150, 0.9), queue(2_000, 100)],
        [statement(1, "update", "public.accounts", 150, ["abalance"]),
         statement(2, "insert", "app.jobs", 100, ["status", "attempts", "payload"]),
         statement(3, "update", "app.jobs", 100, ["status"]),
         statement(4, "delete", "app.jobs", 100)],
    )  # fmt: skip
    m = replay(sandbox, store, p, seconds=7)
    found = checks(m, 10)
    for check in found:
        if check.what != "HOT share":
            assert not check.off, check
    by = {(c.table, c.what): c for c in found}
    assert by["accounts", "HOT share"].replayed > 0.7  # abalance is in no index
    assert by["jobs", "HOT share"].replayed < 0.1  # status is indexed
    assert abs(by["accounts", "HOT share"].replayed - 0.9) <= 0.1
    html = render(store, 1, tmp_path / "report").read_text()
    assert "captured × scale" in html


@pytest.mark.slow
def test_counters_profile_replays_as_synthetic_mix(sandbox: Sandbox, store: Store) -> None:
    table = queue(2_000, 80)
    table = table.model_copy(update={"rates": Rates(inserts=80, updates=80, hot_updates=40,
                                                    deletes=80, dead_tuples=0)})  # fmt: skip
    p = profile([table], []).model_copy(update={"source": "counters"})
    m = replay(sandbox, store, p)
    for check in checks(m, 9):
        assert not check.off, check


def test_a_short_replay_allows_for_its_random_arrivals() -> None:
    """A tune's 4-second trial at 100 rows a second drew 355 inserts (88.8 a second) and was
    flagged, which cost the tune its verdict. 85 a second over 4 seconds is within the spread
    of 400 random arrivals (10 % and three times √25), not off; the same shortfall over 60
    seconds (6,000 expected) is."""
    metrics = {
        rate_metric("captured", "inserts", "jobs"): 100.0,
        rate_metric("replayed", "inserts", "jobs"): 85.0,
    }
    [short] = checks(metrics, 4)
    assert not short.off, short
    [long] = checks(metrics, 60)
    assert long.off, long
    metrics[rate_metric("replayed", "inserts", "jobs")] = 70.0  # 30 % short: off even at 4 s
    assert checks(metrics, 4)[0].off


def test_off_replay_warns_at_the_top(store: Store, tmp_path: Path) -> None:
    config = CustomConfig.from_preset("quick", profile=profile([queue(10, 5)], []).model_dump(
        mode="json"), seconds=5, warmup=1)  # fmt: skip
    run_id = store.create_run("custom", config.params(), server_version="PostgreSQL 18",
                              settings={})  # fmt: skip
    metrics = {"tps": 10.0, "rate_seconds": 6, "sampled_table": "jobs"}
    for rate, replayed, captured in (("inserts", 5.0, 5.0), ("updates", 1.0, 5.0),
                                     ("hot_updates", 0, 0), ("deletes", 5.0, 5.0),
                                     ("dead_tuples", 1, 0)):  # fmt: skip
        metrics[rate_metric("replayed", rate, "jobs")] = replayed
        metrics[rate_metric("captured", rate, "jobs")] = captured
    params = {"step": 1, "name": "as is", "scope": "server", "settings": {}}
    store.record_point(run_id, params, 0, metrics, started_at=datetime.now(UTC),
                       ended_at=datetime.now(UTC))  # fmt: skip
    html = render(store, run_id, tmp_path / "report").read_text()
    notice = html.index("off by more than 10 %")
    assert notice < html.index('id="run"')
    assert "jobs updates −80.0 %" in html or "jobs updates -80.0 %" in html


def test_a_short_capture_widens_the_margin_by_its_counters_lag() -> None:
    """Inserts replayed 15 % above the captured rate over a 2-minute replay: off against a
    5-minute capture, within the margin of a 10-second one, whose counters may have been read
    a second behind."""
    metrics: dict[str, object] = {rate_metric("replayed", "inserts", "jobs"): 115.0,
                                  rate_metric("captured", "inserts", "jobs"): 100.0}  # fmt: skip
    for window, off in ((None, True), (300.0, True), (10.0, False)):
        found = checks(metrics if window is None else metrics | {CAPTURE_SECONDS: window}, 120)
        assert [(c.what, c.off) for c in found] == [("inserts", off)], window


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--profile", "{missing}"], "cannot read"),
        (["--profile", "{bad}"], "not a vacuumlab profile"),
        (["--schema", "{empty}", "--script", "{script}"], "is empty"),
        (["--schema", "{script}", "--script", "{badscript}"], "unknown pgbench meta-command"),
        (["--schema", "{script}"], "--schema needs at least one --script"),
        (["--schema", "{script}", "--script", "{script}", "--steps", "{bad}"], "not valid TOML"),
    ],
)
def test_bad_inputs_start_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    files = {"missing": tmp_path / "none.json", "bad": tmp_path / "bad.json",
             "empty": tmp_path / "empty.sql", "script": tmp_path / "ok.sql",
             "badscript": tmp_path / "bad.sql"}  # fmt: skip
    files["bad"].write_text("{ not json = [")
    files["empty"].write_text("  \n")
    files["script"].write_text("SELECT 1;\n")
    files["badscript"].write_text("\\sett x 1\nSELECT :x;\n")
    data_dir = tmp_path / "sb"
    result = run_cli("run", "custom", *[a.format(**files) for a in args], "--data-dir",
                     str(data_dir), "--store", str(tmp_path / "r.sqlite"))  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert message in lines[0]
    assert not data_dir.exists()


JOBS = (
    "CREATE TABLE jobs (id bigserial PRIMARY KEY, status text NOT NULL DEFAULT 'new', "
    "payload text, created timestamptz DEFAULT now())",
    "CREATE INDEX jobs_new ON jobs (created) WHERE status = 'new'",
    "INSERT INTO jobs (payload) SELECT repeat('x', 200) FROM generate_series(1, 3000)",
)
#: A job queue of plain statements: enqueue, take the oldest new job, delete a taken one.
JOBS_SCRIPT = """INSERT INTO jobs (payload) VALUES (repeat('p', 200));
UPDATE jobs SET status = 'taken' WHERE id = (SELECT id FROM jobs WHERE status = 'new'
  ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED);
DELETE FROM jobs WHERE id = (SELECT id FROM jobs WHERE status = 'taken'
  ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED);
"""


@pytest.mark.slow
def test_captured_tables_replay_faithfully(
    sandbox: Sandbox, embedded_database: str, store: Store, tmp_path: Path
) -> None:
    """pgbench TPC-B's accounts and a job queue of plain statements, captured in one 15-second
    window while both run, then replayed together at scale 1: each table's inserts, updates
    and deletes within the report's margin (10 % of the captured rates, plus 1/15 for the
    capture's own uncertainty), HOT share within 0.1 (none for the queue, whose updates
    change an indexed column; nearly all for the accounts).

    The capture starts 4 s into the load, as it would on a workload that has been running:
    started 1 s in, the counters' rates came out 5 % under what pg_stat_statements counted
    in the same window, and the replay, driven at the statements' rates, up to 17 % over
    them. Started 4 s in, three runs on a quiet machine gave every rate within 5.2 %; beside
    the whole suite and another test run, the queue's inserts came out 10.6 % over."""
    pgbench = str(sandbox.bin.exe("pgbench"))
    subprocess.run([pgbench, "-i", "-s", "1", "-F", "90", "-q", embedded_database], check=True,
                   capture_output=True)  # fmt: skip
    execute(embedded_database, *JOBS, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    script = tmp_path / "jobs.sql"
    script.write_text(JOBS_SCRIPT)
    loads = [
        subprocess.Popen(
            [pgbench, *args, "-T", "21", embedded_database],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for args in (["-R", "150", "-c", "4"], ["-n", "-R", "60", "-c", "2", "-f", str(script)])
    ]
    try:
        time.sleep(4)
        out = tmp_path / "captured.json"
        result = run_cli("capture", embedded_database, "--table", "public.pgbench_accounts",
                         "--table", "public.jobs", "--for", "15s", "-o", str(out))  # fmt: skip
        assert result.returncode == 0, result.stderr
    finally:
        for load in loads:
            load.wait(timeout=60)
    captured = load_profile(out)
    kinds = {s.kind for s in captured.statements if s.table == "public.jobs"}
    assert {"insert", "update", "delete"} <= kinds
    # The accounts have fillfactor 90, which the capture records and the replay builds: room
    # for HOT updates from the start. At pgbench's default 100 the share is a transient that
    # grows as pruning frees room (captured 0.62 over the load's 1st to 16th second, replayed
    # 0.45 over the same seconds of its own).
    m = replay(sandbox, store, captured, seconds=15, warmup=1)
    assert m[CAPTURE_SECONDS] == pytest.approx(15, abs=1)
    found = {(c.table, c.what): c for c in checks(m, 1 + 15)}  # the rates cover the warm-up
    assert found["pgbench_accounts", "updates"].captured > 30  # the capture saw the load
    assert found["jobs", "inserts"].captured > 20
    assert found["jobs", "HOT share"].captured < 0.1
    assert found["pgbench_accounts", "HOT share"].captured > 0.7
    for table in ("pgbench_accounts", "jobs"):
        for what in ("inserts", "updates", "deletes", "HOT share"):
            assert not found[table, what].off, found[table, what]


class StopAfterFirst(Silent):
    def point_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        raise Interrupted("SIGINT")


@pytest.mark.slow
def test_on_a_named_server_an_interrupted_run_resumes_with_what_it_lacks(
    embedded_database: str, tmp_path: Path
) -> None:
    """Two steps of the docs' queue on a server the user names: interrupted after the first,
    resumed from the store, it measures only the second; the study stays in schema vacuumlab
    and leaves the server as it found it."""
    schema, script = docs_files(tmp_path)
    steps = (Step("lazy", {"autovacuum_vacuum_scale_factor": "0.2"}, "table"),
             Step("eager", {"autovacuum_vacuum_scale_factor": "0.01"}, "table"))  # fmt: skip
    config = CustomConfig.from_preset(
        "quick", schema=schema.read_text(), scripts=(Script("queue.sql", script.read_text()),),
        steps=steps, seconds=3, warmup=1, target="server",
    )  # fmt: skip
    target = Target.of_dsn(embedded_database, allow_alter_system=False, pg_bin=None)
    with Store.open(tmp_path / "r.sqlite") as store:
        with pytest.raises(Interrupted):
            CustomRun(config, target, store, StopAfterFirst()).execute()
        assert store.run(1).status == "interrupted"
        [first] = store.points(1)
        resumed = CustomConfig.from_params(store.run(1).params)
        CustomRun(resumed, target, store, run_id=1).execute()
        assert store.run(1).status == "done"
        points = store.points(1)
    assert [p.params["name"] for p in points] == ["lazy", "eager"]
    assert points[0].id == first.id  # kept, not measured again
    with psycopg.connect(embedded_database) as conn:
        left = conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'vacuumlab'")
        assert left.fetchone() == (0,)


# -- each step on the baseline plus its own settings ----------------------------------------

#: A small table and one update a transaction, throttled: the steps below measure what the
#: server ran with, not what the load did.
SMALL_SCHEMA = (
    "CREATE TABLE counts (id int PRIMARY KEY, n int NOT NULL DEFAULT 0);\n"
    "INSERT INTO counts (id) SELECT generate_series(1, 1000);\n"
)
SMALL_SCRIPT = "\\set id random(1, 1000)\nUPDATE counts SET n = n + 1 WHERE id = :id;\n"
#: The settings the steps below change, and one they leave alone.
WATCHED = ("autovacuum_naptime", "autovacuum_vacuum_cost_delay", "autovacuum_vacuum_scale_factor",
           "autovacuum_vacuum_cost_limit")  # fmt: skip


def small_run(steps: tuple[Step, ...], repeat: int = 1) -> CustomConfig:
    return CustomConfig.from_preset(
        "quick", schema=SMALL_SCHEMA, scripts=(Script("counts.sql", SMALL_SCRIPT),), steps=steps,
        seconds=1, warmup=0, rate=200, clients=2, jobs=1, repeat=repeat,
    )  # fmt: skip


def vacuum_settings(dsn: str) -> dict[str, str]:
    """Every vacuum setting as a new session reads it, and where it comes from."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT name, setting || ' from ' || source FROM pg_settings WHERE name ~ 'vacuum'"
        ).fetchall()
    return dict(rows)


def read_back(point: Any) -> dict[str, object]:
    """The settings a point recorded, by name."""
    return {n: point.metrics.get(setting_metric(n)) for n in WATCHED}


@pytest.fixture
def cost_delay_by_alter_system(sandbox: Sandbox) -> Iterator[str]:
    """A baseline a step must restore by value, not by RESET: the cost delay set by ALTER
    SYSTEM before the run (5 ms against the default 2). Yields its pg_settings.setting."""
    sandbox.configure({"autovacuum_vacuum_cost_delay": "5ms"})
    try:
        yield "5"
    finally:
        sandbox.configure({"autovacuum_vacuum_cost_delay": None})


@pytest.mark.slow
def test_a_repeated_step_runs_on_the_baseline_not_on_the_steps_before(
    sandbox: Sandbox, store: Store, tmp_path: Path, cost_delay_by_alter_system: str
) -> None:
    """Three partial steps twice over: the second repetition of the first reads back the
    naptime and cost delay of the server before the run, not the third step's (which the old
    Target left in force: naptime 10, cost delay 0), and afterwards every vacuum setting reads
    as before the run, the one set by ALTER SYSTEM included."""
    steps_file = tmp_path / "steps.toml"
    steps_file.write_text(
        '[[step]]\nname = "defaults"\nsettings = { autovacuum_vacuum_scale_factor = 0.2 }\n'
        '[[step]]\nname = "scale 0.01"\nsettings = { autovacuum_vacuum_scale_factor = 0.01 }\n'
        '[[step]]\nname = "eager"\nsettings = { autovacuum_naptime = "10s", '
        "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0 }\n"
    )
    before = vacuum_settings(sandbox.dsn)
    naptime = before["autovacuum_naptime"].split()[0]
    assert naptime != "10"
    run_id = CustomRun(small_run(load_steps(steps_file), repeat=2), Target.of_sandbox(sandbox),
                       store).execute()  # fmt: skip
    points = {(p.params["step"], p.repetition): p for p in store.points(run_id)}
    assert len(points) == 6
    delay = cost_delay_by_alter_system
    limit = before["autovacuum_vacuum_cost_limit"].split()[0]
    for repetition in (0, 1):
        assert read_back(points[1, repetition]) == {
            "autovacuum_naptime": naptime, "autovacuum_vacuum_cost_delay": delay,
            "autovacuum_vacuum_scale_factor": "0.2", "autovacuum_vacuum_cost_limit": limit,
        }, repetition  # fmt: skip
        assert read_back(points[2, repetition])["autovacuum_naptime"] == naptime
        assert read_back(points[2, repetition])["autovacuum_vacuum_scale_factor"] == "0.01"
        assert read_back(points[3, repetition]) == {
            "autovacuum_naptime": "10", "autovacuum_vacuum_cost_delay": "0",
            "autovacuum_vacuum_scale_factor": "0.01", "autovacuum_vacuum_cost_limit": limit,
        }, repetition  # fmt: skip
    assert vacuum_settings(sandbox.dsn) == before
    auto_conf = (sandbox.pgdata / "postgresql.auto.conf").read_text()
    assert "autovacuum_vacuum_cost_delay = '5'" in auto_conf
    assert "autovacuum_naptime" not in auto_conf


def test_scopes_leave_nothing_behind_and_an_empty_step_runs_on_the_baseline(
    sandbox: Sandbox, store: Store, tmp_path: Path
) -> None:
    """A server step, a table step, then the default step that names nothing: the table step
    runs on the server's baseline, the empty step on the baseline with the tables as built;
    the report shows each step what it ran with."""
    steps = (
        Step("server", {"autovacuum_naptime": "7s", "autovacuum_vacuum_cost_limit": "5000"}),
        Step("table", {"autovacuum_vacuum_scale_factor": "0.01",
                       "autovacuum_vacuum_cost_delay": "0"}, "table"),
        AS_IS,
    )  # fmt: skip
    before = vacuum_settings(sandbox.dsn)
    run_id = CustomRun(small_run(steps), Target.of_sandbox(sandbox), store).execute()
    server, table, as_is = store.points(run_id)
    base = {n: before[n].split()[0] for n in WATCHED}
    assert read_back(server) == base | {"autovacuum_naptime": "7",
                                        "autovacuum_vacuum_cost_limit": "5000"}  # fmt: skip
    assert read_back(table) == base
    assert read_back(as_is) == base
    assert reloptions_in_force(server.metrics) == {}
    assert reloptions_in_force(table.metrics) == {
        "counts": {"autovacuum_vacuum_scale_factor": "0.01", "autovacuum_vacuum_cost_delay": "0"}
    }
    assert reloptions_in_force(as_is.metrics) == {}
    assert vacuum_settings(sandbox.dsn) == before
    html = render(store, run_id, tmp_path / "report").read_text()
    shown = {anchor: html.split(f'id="in-force-{anchor}"')[1].split("</table>")[0]
             for anchor in ("step-1-0", "step-2-0", "step-3-0")}  # fmt: skip
    assert ">7 s<" in shown["step-1-0"]
    assert "this step" in shown["step-1-0"]
    assert f">{base['autovacuum_naptime']} s<" in shown["step-2-0"]
    assert "<td>counts</td>" in shown["step-2-0"]  # the table step's storage parameters
    assert "<td>counts</td>" not in shown["step-3-0"]


def test_a_key_only_non_hot_update_draws_the_identity_s_next_value() -> None:
    """A queue whose only index is its identity key, with updates that were not HOT: the
    replay updates the key, from the identity's own sequence. A value drawn from the replay's
    key sequence collided with the rows the inserts added (duplicate key; pgbench aborted)."""
    from helpers.tune import queue_profile
    from vacuumlab.studies.custom_replay import plan

    found = plan(queue_profile(5_000, 300.0), 1.0)
    [update] = [s for s in found.scripts if "update" in s.name]
    assert 'SET "id" = DEFAULT' in update.text
    assert "nextval" not in update.text
