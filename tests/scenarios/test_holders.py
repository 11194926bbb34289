"""Scenarios of what holds vacuum back: a long report query, a leftover prepared transaction,
an unconsumed logical slot (on a server of its own with wal_level = logical)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from scenarios.expect import (
    HORIZON_BLAME,
    NO_IDLE_TIMEOUT,
    SERVER,
    Expect,
    Match,
    Verdict,
    no_blame,
)
from scenarios.workloads import (
    advise_over,
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
