"""The exporter against the embedded PostgreSQL: scraped over HTTP with urllib, parsed with
prometheus_client's parser, and checked against the advisor on the same tables."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from prometheus_client.metrics_core import Metric
from psycopg import sql
from psycopg.conninfo import make_conninfo

from helpers.cli import assert_one_line_error, run_cli
from helpers.db import execute
from helpers.exporter import exporting, scrape, value
from vacuumlab.advise import advise
from vacuumlab.collect.snapshot import collect
from vacuumlab.model.thresholds import of_table, server_settings
from vacuumlab.pg.connect import connect
from vacuumlab.pg.sandbox import Sandbox

#: 10,000 rows analysed, then 3,000 updated: 3,000 dead tuples against 50 + 0.2 × 10,000.
#: Autovacuum is off for it, so no worker empties it between the scrape and the advice.
CHURN = (
    "CREATE TABLE churn (id int PRIMARY KEY, v int) WITH (autovacuum_enabled = off)",
    "INSERT INTO churn SELECT i, 0 FROM generate_series(1, 10000) i",
    "ANALYZE churn",
    "UPDATE churn SET v = 1 WHERE id <= 3000",
)
TABLE = {"schema": "public", "table": "churn", "kind": "heap"}


def wait_for_dead(dsn: str, table: str, count: int) -> None:
    """Until the statistics show the dead tuples: backends flush them about once a second."""
    deadline = time.monotonic() + 15
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = %s", (table,)
            ).fetchone()
            if row is not None and row[0] == count:
                return
            time.sleep(0.2)
    raise AssertionError(f"{table} never showed {count} dead tuples")


@pytest.fixture
def churned(embedded_database: str) -> str:
    execute(embedded_database, *CHURN)
    wait_for_dead(embedded_database, "churn", 3000)
    return embedded_database


def advised_status(dsn: str, relation: str = "public.churn") -> object:
    with connect(dsn) as session:
        snap = collect(session)
    return next(t for t in advise(snap).tables if t.relation == relation)


def test_threshold_progress_agrees_with_the_advisor(churned: str) -> None:
    with exporting(churned) as (url, _):
        families = scrape(url)
    status = advised_status(churned)
    assert value(families, "vacuumlab_up") == 1
    assert value(families, "vacuumlab_table_dead_tuples", **TABLE) == 3000
    threshold = value(families, "vacuumlab_table_vacuum_threshold_tuples", **TABLE)
    assert threshold == status.vacuum_threshold == 50 + 0.2 * 10_000  # type: ignore[attr-defined]
    ratio = value(families, "vacuumlab_table_vacuum_threshold_ratio", **TABLE)
    assert ratio == pytest.approx(status.vacuum_progress, rel=1e-12)  # type: ignore[attr-defined]
    assert ratio == pytest.approx(3000 / 2050)
    inserts = value(families, "vacuumlab_table_insert_threshold_ratio", **TABLE)
    inserted, limit = status.inserted, status.insert_threshold  # type: ignore[attr-defined]
    assert inserts == pytest.approx(inserted / limit, rel=1e-12)
    assert all(f.documentation for f in families.values())


def test_the_model_gives_the_same_thresholds_on_a_snapshot(churned: str) -> None:
    with connect(churned) as session:
        snap = collect(session)
    [heap] = of_table(snap.tables[0], server_settings(snap), snap.server.version_num)
    with exporting(churned) as (url, _):
        families = scrape(url)
    ratio = value(families, "vacuumlab_table_vacuum_threshold_ratio", **TABLE)
    assert ratio == pytest.approx(heap.vacuum_progress, rel=1e-12)


def test_a_pg_monitor_role_gets_every_family(churned: str) -> None:
    role = "vl_exporter_monitor"
    execute(
        churned, sql.SQL("CREATE ROLE {} LOGIN IN ROLE pg_monitor").format(sql.Identifier(role))
    )
    try:
        with exporting(make_conninfo(churned, user=role)) as (url, _):
            first, second = scrape(url), scrape(url)
    finally:
        execute(churned, sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    assert value(second, "vacuumlab_up") == 1
    ratio = value(second, "vacuumlab_table_vacuum_threshold_ratio", **TABLE)
    assert ratio == pytest.approx(3000 / 2050)
    assert value(second, "vacuumlab_autovacuum_workers_available") == 3
    assert value(second, "vacuumlab_wraparound_forcing_age", counter="xid") == 200_000_000
    statements = value(first, "vacuumlab_scrape_statements")
    assert statements == value(second, "vacuumlab_scrape_statements")
    assert statements is not None
    assert statements > 0
    # The second scrape has rates: the simulator predicts the next vacuum of what moves.
    assert "vacuumlab_table_next_vacuum_seconds" in second


def test_a_lost_connection_exports_up_0_then_reconnects(churned: str) -> None:
    with exporting(churned) as (url, _):
        assert value(scrape(url), "vacuumlab_up") == 1
        execute(
            churned,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'vacuumlab-watch' AND datname = current_database()",
        )
        lost = scrape(url)
        again = scrape(url)
    assert value(lost, "vacuumlab_up") == 0
    assert value(lost, "vacuumlab_scrape_errors_total") == 1
    assert "vacuumlab_table_dead_tuples" not in lost
    assert value(again, "vacuumlab_up") == 1
    assert value(again, "vacuumlab_table_dead_tuples", **TABLE) == 3000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape_when_up(url: str, process: subprocess.Popen[str]) -> dict[str, Metric]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        try:
            return scrape(url)
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the exporter never answered")


def test_cli_bounds_the_series_and_stops_on_ctrl_c(embedded_database: str) -> None:
    tables = [f"CREATE TABLE t{i} (id int)" for i in range(2)]
    tables += ["CREATE SCHEMA s2"] + [f"CREATE TABLE s2.t{i} (id int)" for i in range(3)]
    execute(embedded_database, *tables)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "vacuumlab", "exporter", embedded_database, "--listen",
         f"127.0.0.1:{port}", "--max-tables", "2", "--schema", "s2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        families = scrape_when_up(f"http://127.0.0.1:{port}/metrics", process)
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    samples = families["vacuumlab_table_dead_tuples"].samples
    assert len(samples) == 2
    assert {s.labels["schema"] for s in samples} == {"s2"}
    assert value(families, "vacuumlab_relations") == 5
    assert value(families, "vacuumlab_relations_exported") == 2
    assert process.returncode == 130, stderr
    assert f"serving http://127.0.0.1:{port}/metrics" in stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["host=127.0.0.1 port"], "invalid connection string"),
        (["postgresql://postgres@127.0.0.1:1/postgres"], "Connection refused"),
        (["SANDBOX", "--listen", "127.0.0.1:http"], "--listen takes HOST:PORT"),
        (["SANDBOX", "--listen", "127.0.0.1:70000"], "--listen takes HOST:PORT"),
        (["SANDBOX", "--max-tables", "0"], "--max-tables"),
        (["SANDBOX", "--max-tables", "many"], "--max-tables"),
        (["SANDBOX", "--listen", "no.such.host.invalid:9187"], "cannot listen on"),
    ],
)
def test_bad_dsn_and_options_give_one_line(
    sandbox: Sandbox, args: list[str], fragment: str
) -> None:
    args = [sandbox.dsn if a == "SANDBOX" else a for a in args]
    assert_one_line_error(run_cli("exporter", *args), fragment)


def test_a_port_in_use_gives_one_line(sandbox: Sandbox) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("exporter", sandbox.dsn, "--listen", f"127.0.0.1:{port}")
    assert_one_line_error(result, f"cannot listen on 127.0.0.1:{port}")


def test_no_dsn_and_no_sandbox(tmp_path: Path) -> None:
    result = run_cli("exporter", "--data-dir", str(tmp_path / "none"))
    assert_one_line_error(result, "no DSN given and no sandbox running")
