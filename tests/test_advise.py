"""The advisor against real servers: the embedded PostgreSQL 18 and VACUUMLAB_TEST_DSN."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from helpers.advise import BLOATED_TABLE, run_recommendations
from helpers.cli import run_cli
from helpers.db import execute, xmin_holder
from vacuumlab.advise import advise
from vacuumlab.collect.exact import with_exact
from vacuumlab.collect.snapshot import PROBES, collect
from vacuumlab.lab.advice import collect_advice
from vacuumlab.pg.connect import connect
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Advice, Finding

SCENARIO = (
    # A queue: 20,000 rows in, 19,000 out, analysed: far past a threshold of 50 + 0.2 × 1,000.
    "CREATE TABLE queue (id bigserial PRIMARY KEY, payload text)",
    "INSERT INTO queue (payload) SELECT md5(i::text) FROM generate_series(1, 20000) i",
    "DELETE FROM queue WHERE id <= 19000",
    # Autovacuum off for this one, and 2,000 of its 5,000 rows dead.
    "CREATE TABLE forgotten (id int PRIMARY KEY) WITH (autovacuum_enabled = false)",
    "INSERT INTO forgotten SELECT generate_series(1, 5000)",
    "DELETE FROM forgotten WHERE id <= 2000",
    # A per-table override.
    "CREATE TABLE tuned (id int) WITH (autovacuum_vacuum_scale_factor = 0.05)",
    "INSERT INTO tuned SELECT generate_series(1, 1000)",
)


def analyzed_when_counted(dsn: str) -> None:
    """ANALYZE only once the DML counts reached the shared statistics (they flush late)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(n_tup_del), 0) FROM pg_stat_user_tables"
            ).fetchone()
        if row and row[0] >= 21000:
            break
        time.sleep(0.2)
    execute(dsn, "ANALYZE queue, forgotten, tuned")


def finding(advice: Advice, question: str, relation: str | None, fragment: str) -> Finding:
    matches = [
        f
        for f in advice.findings
        if f.question == question and f.relation == relation and fragment in f.title
    ]
    assert matches, [(f.question, f.relation, f.title) for f in advice.findings]
    return matches[0]


@pytest.fixture
def scenario(database: str) -> Iterator[str]:
    with xmin_holder(database):  # opened first: nothing deleted below can be removed
        execute(database, *SCENARIO)
        analyzed_when_counted(database)
        yield database


def test_advice_on_a_churned_database(scenario: str) -> None:
    with xmin_holder(scenario) as holder:
        time.sleep(1.1)  # past the holder's first second, so it counts as held
        advice, statements = collect_advice(scenario)
    # The queue: far past its threshold, recognised as a queue, with the churn study's settings.
    queue = finding(advice, "thresholds", "public.queue", "its vacuum threshold")
    # This machine's PostgreSQL 15 runs with autovacuum off: the advisor must say so.
    if advice.server.version_num < 180000 and "autovacuum is off for the whole server" in [
        f.title for f in advice.findings
    ]:
        assert "autovacuum is off for the whole server" in queue.title
    assert queue.evidence["n_dead_tup"] == 19000
    assert queue.evidence["vacuum_threshold"] == 50 + 0.2 * 1000
    assert queue.title.startswith("76× its vacuum threshold: ")  # 19,000 / 250
    shaped = finding(advice, "thresholds", "public.queue", "queue-like")
    assert shaped.evidence["turnover"] == pytest.approx((20000 + 19000) / 1000)
    assert {r.setting for r in shaped.recommendations} == {
        "autovacuum_vacuum_cost_delay",
        "autovacuum_vacuum_scale_factor",
    }
    # The table with autovacuum off: critical, and the SQL to turn it back on.
    off = finding(advice, "thresholds", "public.forgotten", "autovacuum is off for it")
    assert off.severity == "critical"
    assert off.evidence["n_dead_tup"] == 2000
    assert off.evidence["vacuum_threshold"] == 50 + 0.2 * 3000
    assert off.recommendations[0].sql == (
        'ALTER TABLE "public"."forgotten" SET ("autovacuum_enabled" = \'on\');'
    )
    # The override shows where each table stands.
    tuned = next(t for t in advice.tables if t.relation == "public.tuned")
    assert tuned.overridden == ["autovacuum_vacuum_scale_factor"]
    assert tuned.vacuum_threshold == 50 + 0.05 * 1000
    # The session holding the horizon, by its pid.
    held = [f for f in advice.findings if f.question == "horizon" and f.evidence["pid"] == holder]
    assert held
    assert held[0].evidence["kind"] == "idle in transaction"
    # One statement per probe the server can answer (pg_stat_io needs 16) and the server info.
    answerable = len(PROBES) - (advice.server.version_num < 160000)
    assert statements == answerable + 1


def test_prepared_transaction_holds_the_horizon(embedded_database: str) -> None:
    execute(embedded_database, "CREATE TABLE t (id int)")
    with psycopg.connect(embedded_database, autocommit=True) as conn:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("PREPARE TRANSACTION 'vl-advise-gid'")
    try:
        advice, _ = collect_advice(embedded_database)
    finally:
        execute(embedded_database, "ROLLBACK PREPARED 'vl-advise-gid'")
    held = finding(advice, "horizon", None, "prepared transaction 'vl-advise-gid'")
    # One snapshot cannot tell whether it will be resolved in a moment: info, and it says so.
    assert held.severity == "info"
    assert "advise with --interval" in held.detail
    assert "ROLLBACK PREPARED 'vl-advise-gid';" in held.detail


def test_every_recommended_statement_runs(scenario: str, sandbox: Sandbox) -> None:
    """Every SQL the advisor prints is valid: it runs on the sandbox (settings reset after)."""
    advice, _ = collect_advice(scenario)
    recommendations = [r for _, r in advice.recommendations()]
    assert recommendations
    run_recommendations(recommendations, scenario, sandbox.dsn)


def test_the_advisor_never_writes(scenario: str) -> None:
    def counters() -> tuple[int, ...]:
        with psycopg.connect(scenario) as conn:
            conn.execute("SELECT pg_stat_force_next_flush()")
        time.sleep(1.2)
        with psycopg.connect(scenario) as conn:
            row = conn.execute(
                "SELECT tup_inserted, tup_updated, tup_deleted FROM pg_stat_database"
                " WHERE datname = current_database()"
            ).fetchone()
        assert row is not None
        return tuple(row)

    before = counters()
    with connect(scenario) as session:
        assert session.scalar("SHOW default_transaction_read_only") == "on"
        assert (
            int(session.scalar("SELECT setting FROM pg_settings WHERE name = 'statement_timeout'"))
            <= 5000
        )
        assert (
            int(session.scalar("SELECT setting FROM pg_settings WHERE name = 'lock_timeout'"))
            <= 100
        )
    collect_advice(scenario, interval=0.5)
    assert counters() == before


def test_advice_from_saved_snapshots_needs_no_server(scenario: str, tmp_path: Path) -> None:
    saved = []
    for n in (1, 2):
        path = tmp_path / f"snap{n}.json"
        result = run_cli("snapshot", scenario, "--format", "json", "-o", str(path))
        assert result.returncode == 0, result.stderr
        saved.append(path)
    out = run_cli("advise", "--input", str(saved[0]), "--input", str(saved[1]), "--format", "json")
    assert out.returncode == 0, out.stderr
    advice = Advice.model_validate_json(out.stdout)
    assert advice.interval_s is not None
    assert any(f.relation == "public.forgotten" for f in advice.findings)


def test_exact_figures_survive_a_saved_snapshot(embedded_database: str, tmp_path: Path) -> None:
    """--exact measures into the snapshot, so advise --input on the saved JSON keeps it."""
    execute(embedded_database, *BLOATED_TABLE)
    with connect(embedded_database) as session:
        snap = with_exact(session, collect(session))
    [row] = [r for r in snap.exact if r.oid == snap.tables[0].heap.oid]
    assert row.dead_tuple_count == 15000  # pgstattuple reads the pages: no stats lag
    path = tmp_path / "exact.json"
    path.write_text(snap.dump_json())
    out = run_cli("advise", "--input", str(path), "--format", "json")
    assert out.returncode == 0, out.stderr
    saved = Advice.model_validate_json(out.stdout)
    live = advise(snap)
    assert saved.exact
    assert live.exact
    measured = finding(saved, "bloat", "public.churned", "bloat measured")
    assert measured == finding(live, "bloat", "public.churned", "bloat measured")
    assert measured.evidence["measured_dead_tuple_percent"] == row.dead_tuple_percent


def test_exact_without_pgstattuple_says_how_to_install_it(embedded_database: str) -> None:
    execute(embedded_database, "CREATE TABLE t (id int)")
    advice, _ = collect_advice(embedded_database, exact=True)
    assert advice.exact
    [note] = [n for n in advice.notes if n.probe == "exact"]
    assert note.fix == "CREATE EXTENSION pgstattuple;"


def test_cli_formats(scenario: str, tmp_path: Path) -> None:
    for fmt in ("table", "md", "html", "json"):
        result = run_cli("advise", scenario, "--format", fmt, "-o", str(tmp_path / f"a.{fmt}"))
        assert result.returncode == 0, result.stderr
        assert "forgotten" in (tmp_path / f"a.{fmt}").read_text()
    assert_bad = run_cli("advise", scenario, "--interval", "soon")
    assert assert_bad.returncode == 2
    assert "--interval takes seconds" in assert_bad.stderr


@pytest.fixture
def fast_autovacuum(sandbox_root: Path) -> Iterator[Sandbox]:
    with Sandbox.start(sandbox_root / "thresholds", settings={"autovacuum_naptime": "1s"}) as sb:
        yield sb


def autovacuums(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT autovacuum_count FROM pg_stat_user_tables WHERE relname = 'edge'"
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.slow
def test_threshold_arithmetic_matches_postgresql(fast_autovacuum: Sandbox) -> None:
    """Stay a few rows under the computed threshold: no autovacuum. Cross it by a few: one."""
    dsn = fast_autovacuum.dsn
    execute(
        dsn,
        "DROP TABLE IF EXISTS edge",
        "CREATE TABLE edge (id int) WITH (autovacuum_vacuum_threshold = 20,"
        " autovacuum_vacuum_scale_factor = 0.1, autovacuum_analyze_threshold = 1000000,"
        " autovacuum_vacuum_insert_threshold = 1000000)",
        "INSERT INTO edge SELECT generate_series(1, 1000)",
        "ANALYZE edge",
    )
    with connect(dsn) as session:
        advice = advise(collect(session))
    [edge] = [t for t in advice.tables if t.relation == "public.edge"]
    threshold = edge.vacuum_threshold
    assert threshold == 20 + 0.1 * 1000
    execute(dsn, f"DELETE FROM edge WHERE id <= {int(threshold) - 3}")
    time.sleep(5)  # five naptimes
    assert autovacuums(dsn) == 0
    execute(dsn, f"DELETE FROM edge WHERE id <= {int(threshold) + 3}")
    deadline = time.monotonic() + 15
    while autovacuums(dsn) == 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert autovacuums(dsn) == 1


def test_only_pg_monitor_gets_a_useful_report(embedded_database: str) -> None:
    role = "vl_monitor_only"
    execute(
        embedded_database,
        # An option of its own keeps it in the status table (an idle table is counted there).
        "CREATE TABLE t (id int) WITH (autovacuum_vacuum_scale_factor = 0.1)",
        sql.SQL("CREATE ROLE {} LOGIN IN ROLE pg_monitor").format(sql.Identifier(role)),
    )
    try:
        advice, _ = collect_advice(make_conninfo(embedded_database, user=role))
    finally:
        execute(embedded_database, sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    assert [t.relation for t in advice.tables] == ["public.t"]
    assert advice.server.can_read_all_stats
