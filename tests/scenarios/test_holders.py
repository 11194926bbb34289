"""Scenarios of what holds vacuum back: a long report query, a leftover prepared transaction,
an unconsumed logical slot (on a server of its own with wal_level = logical)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from scenarios.expect import (
    HORIZON_BLAME,
    NO_IDLE_TIMEOUT,
    SERVER,
    Expect,
    Match,
    Top,
    Verdict,
    no_blame,
)
from scenarios.workloads import (
    BURN,
    advise_over,
    burn,
    execute_all,
    fresh_database,
    load_table,
    pgbench_load,
    running_query,
    update_script,
    write_script,
)
from vacuumlab.pg.sandbox import Sandbox

CHURN_ROWS = 1000
BLAMED = Match(
    "churn's dead tuples blamed on the horizon",
    "thresholds",
    "public.churn",
    title=HORIZON_BLAME,
    at_least="info",
)


def churn(dsn: str, tmp_path: Path) -> Path:
    load_table(dsn, "churn", CHURN_ROWS)
    return write_script(tmp_path, "churn", update_script("churn", CHURN_ROWS))


def long_report(pid: int) -> Expect:
    return Expect(
        must=(
            Match(
                "the report query holds the horizon",
                "horizon",
                SERVER,
                evidence={"pid": pid, "kind": "long transaction"},
                detail="statement_timeout",
            ),
            BLAMED,
        ),
        may=(Match("churn's timing", "timing", "public.churn"),),
        must_not=(NO_IDLE_TIMEOUT,),
    )


@pytest.mark.slow
@pytest.mark.usefixtures("short_naptime")
def test_long_report_query(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """A report query runs for 40 s (active, not idle) while a table churns. Must: a horizon
    finding at warning naming that backend, the churning table's dead tuples blamed on it.
    Must not: an idle-session timeout, which never ends an active query. The advisor names
    the backend and pg_terminate_backend, and says what ends it for good (a statement_timeout
    on the reporting role, or a standby for reports) without recommending a server-wide
    setting, which would end the legitimate long queries too."""
    script = churn(embedded_database, tmp_path)
    report = "SELECT count(*) FROM churn, pg_sleep(40)"
    with (
        pgbench_load(sandbox, embedded_database, 36, clients=2, script=script),
        running_query(embedded_database, report, settle=8) as pid,
    ):
        advice, _ = advise_over(embedded_database, interval=20)
    verdict(advice, long_report(pid))


GID = "vl_scenario_leftover"
LEFTOVER_PREPARED = Expect(
    must=(
        Match(
            "the prepared transaction holds the horizon", "horizon", SERVER, evidence={"gid": GID}
        ),
        BLAMED,
    ),
    may=(Match("churn's timing", "timing", "public.churn"),),
    must_not=(NO_IDLE_TIMEOUT,),
)


@pytest.mark.slow
@pytest.mark.usefixtures("short_naptime")
def test_leftover_prepared_transaction(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """A transaction prepared and never resolved (max_prepared_transactions is 10 on the
    sandbox) while a table churns. Must: the prepared transaction found at warning, the
    churning table's dead tuples blamed on the horizon. Must not: an idle-session timeout
    (no session holds it). ROLLBACK PREPARED at the end, whatever happens."""
    script = churn(embedded_database, tmp_path)
    execute_all(embedded_database, "CREATE TABLE ledger (id int)")
    with psycopg.connect(embedded_database, autocommit=True) as conn:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO ledger VALUES (1)")
        conn.execute(f"PREPARE TRANSACTION '{GID}'")
    try:
        with pgbench_load(sandbox, embedded_database, 36, clients=2, script=script):
            execute_all(embedded_database, "SELECT pg_sleep(8)")
            advice, _ = advise_over(embedded_database, interval=20)
    finally:
        execute_all(embedded_database, f"ROLLBACK PREPARED '{GID}'")
    verdict(advice, LEFTOVER_PREPARED)


@pytest.fixture(scope="module")
def logical_sandbox(sandbox_root: Path) -> Iterator[Sandbox]:
    """A server of its own with wal_level = logical (a restart) and a 5 s naptime."""
    settings = {"wal_level": "logical", "autovacuum_naptime": "5"}
    with Sandbox.start(sandbox_root / "logical", settings=settings) as sb:
        yield sb


SLOT = "vl_scenario_slot"
UNCONSUMED_SLOT = Expect(
    must=(
        Match(
            "the slot found holding catalogs only",
            "horizon",
            SERVER,
            evidence={"slot": SLOT, "holds": "catalogs"},
        ),
    ),
    may=(Match("churn's timing", "timing", "public.churn"),),
    must_not=(no_blame(), NO_IDLE_TIMEOUT),
)


@pytest.mark.slow
def test_unconsumed_logical_slot(
    logical_sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """A logical slot nobody reads while a user table churns. Must: the slot found, as
    holding the catalogs only (its catalog_xmin; it has no xmin). Must not: the churning
    table's dead tuples blamed on the horizon — the slot does not hold them, and autovacuum
    removes them. The slot is dropped at the end."""
    with fresh_database(logical_sandbox.dsn, "vl_scenario_slot") as dsn:
        script = churn(dsn, tmp_path)
        execute_all(dsn, f"SELECT pg_create_logical_replication_slot('{SLOT}', 'test_decoding')")
        try:
            with pgbench_load(logical_sandbox, dsn, 36, clients=2, script=script):
                execute_all(dsn, "SELECT pg_sleep(8)")
                advice, _ = advise_over(dsn, interval=20)
        finally:
            execute_all(dsn, f"SELECT pg_drop_replication_slot('{SLOT}')")
    verdict(advice, UNCONSUMED_SLOT)


@contextmanager
def throttled_vacuum(dsn: str, table: str) -> Iterator[int]:
    """A manual VACUUM of ``table`` throttled to crawl (cost limit 10, 100 ms a sleep), on a
    connection of its own in a thread; yields its pid once pg_stat_progress_vacuum shows it,
    cancels it on exit."""
    conn = psycopg.connect(dsn, autocommit=True, application_name="vl-scenario-vacuum")
    pid: int = conn.info.backend_pid
    conn.execute("SET vacuum_cost_delay = 100")
    conn.execute("SET vacuum_cost_limit = 10")
    thread = threading.Thread(target=_vacuum_until_cancelled, args=(conn, table))
    thread.start()
    try:
        wait_until(dsn, "SELECT count(*) FROM pg_stat_progress_vacuum WHERE pid = %s", pid)
        yield pid
    finally:
        execute_all(dsn, f"SELECT pg_cancel_backend({pid})")
        thread.join()
        conn.close()


def _vacuum_until_cancelled(conn: psycopg.Connection[tuple[object, ...]], table: str) -> None:
    with suppress(psycopg.errors.QueryCanceled):
        conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(table)))


def wait_until(dsn: str, count: str, *args: object, seconds: float = 30.0) -> None:
    """Poll ``count`` (a query giving one number) until it is above 0."""
    deadline = time.monotonic() + seconds
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(count, args).fetchone()  # type: ignore[arg-type]
            if row is not None and row[0]:
                return
            time.sleep(0.2)
    raise AssertionError(f"never true within {seconds:g} s: {count}")


#: A table autovacuum must vacuum "to prevent wraparound" (its own freeze_max_age is the least
#: allowed, 100,000) and that it vacuums at a crawl; autovacuum_enabled = off does not stop a
#: forced vacuum (relation_needs_vacanalyze() in autovacuum.c).
FORCED_TABLE = (
    "CREATE TABLE forced (id int, n int) WITH (autovacuum_enabled = off, "
    "autovacuum_freeze_max_age = 100000, autovacuum_vacuum_cost_limit = 10, "
    "autovacuum_vacuum_cost_delay = 100)",
    "INSERT INTO forced SELECT g, 0 FROM generate_series(1, 600000) g",
)
FORCED_ON = Match(
    "autovacuum back on for the forced table",
    relation="public.forced",
    setting="autovacuum_enabled",
    at_least="info",
)
RUNNING_VACUUMS = Expect(
    may=(
        Match("churn's timing", "timing", "public.churn"),
        # True: the forced table is past its own freeze_max_age with autovacuum off for it.
        Match("the forced table's age", "wraparound", "public.forced"),
        Match("the forced table's thresholds", "thresholds", "public.forced"),
    ),
    top=(Top(FORCED_ON),),
    must_not=(
        Match("no horizon finding", "horizon", at_least="info"),
        Match("no terminating anything", detail="pg_terminate_backend", at_least="info"),
        no_blame(),
        NO_IDLE_TIMEOUT,
    ),
)


@pytest.mark.slow
@pytest.mark.usefixtures("short_naptime")
def test_running_vacuums_hold_nothing(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """A manual VACUUM throttled to crawl and an anti-wraparound autovacuum, both running
    through the whole interval (each shows a backend_xmin in pg_stat_activity), while a
    table churns. Must not: a horizon finding, pg_terminate_backend anywhere, the churning
    table's dead tuples blamed on the horizon. A lazy VACUUM is left out of every horizon
    (PROC_IN_VACUUM in ComputeXidHorizons(), procarray.c): advice to end one would cost the
    vacuum's work and fix nothing."""
    dsn = embedded_database
    script = churn(dsn, tmp_path)
    load_table(dsn, "ledger", 200_000, pad=40)
    execute_all(dsn, *FORCED_TABLE, "UPDATE ledger SET n = 1 WHERE id % 7 = 0", BURN)
    burn(dsn, 110_000)
    wraparound = (
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' "
        "AND query LIKE '%%forced (to prevent wraparound)%%'"
    )
    wait_until(dsn, wraparound, seconds=30)
    with (
        throttled_vacuum(dsn, "ledger"),
        pgbench_load(sandbox, dsn, 30, clients=2, script=script),
    ):
        execute_all(dsn, "SELECT pg_sleep(5)")
        advice, later = advise_over(dsn, interval=20)
    in_vacuum = [b for b in later.backends if b.in_lazy_vacuum]
    assert len(in_vacuum) >= 2, later.backends  # the situation is the one the test claims
    verdict(advice, RUNNING_VACUUMS)
