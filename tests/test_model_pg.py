"""The model's forcing and horizon rules against a real PostgreSQL 18, on a sandbox of this
module's own: ``autovacuum_freeze_max_age`` at its minimum (100,000) so ages pass it after a
short burst of transactions, ``vacuum_failsafe_age`` 0 so the failsafe floor shows, and
``wal_level = logical`` for a logical slot.

Forced vacuums would otherwise take the aged tables at once: a session holds SHARE UPDATE
EXCLUSIVE on them, for which an anti-wraparound autovacuum waits (it is the one autovacuum that
does not skip locked tables: do_autovacuum() in autovacuum.c).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from helpers.db import execute
from vacuumlab.advise import advise
from vacuumlab.collect.snapshot import collect
from vacuumlab.model.knobs import stock_settings
from vacuumlab.pg.connect import connect
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Advice, Finding
from vacuumlab.records.snapshot import Snapshot

FREEZE_MAX_AGE = 100_000
#: 2^31 less the 3 million ids PostgreSQL keeps in reserve (varsup.c).
HARD_LIMIT = 2**31 - 3_000_000
AGED = ("own_high", "off_forced", "mx_own")
SETUP = (
    "CREATE TABLE own_high (id int) WITH (autovacuum_freeze_max_age = 1500000000)",
    "CREATE TABLE off_forced (id int PRIMARY KEY) WITH (autovacuum_enabled = off)",
    "INSERT INTO off_forced SELECT generate_series(1, 5000)",
    "DELETE FROM off_forced WHERE id <= 2000",
    "CREATE TABLE mx_own (id int) WITH (autovacuum_multixact_freeze_max_age = 10000)",
    "CREATE TABLE mx_burner (id int)",
    "INSERT INTO mx_burner VALUES (1)",
    "CREATE PROCEDURE burn(n int) LANGUAGE plpgsql AS $$ BEGIN FOR i IN 1..n LOOP "
    "PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$",
    "CREATE PROCEDURE share_lock(n int) LANGUAGE plpgsql AS $$ BEGIN FOR i IN 1..n LOOP "
    "PERFORM id FROM mx_burner FOR SHARE; COMMIT; END LOOP; END $$",
)


def burn(dsn: str, xids: int) -> None:
    execute(dsn, "SET synchronous_commit = off", f"CALL burn({xids})")


def multixacts(dsn: str, count: int) -> None:
    """A row share-locked by one open transaction and then by ``count`` others one after
    another: each later locker makes a new multixact of the two (MultiXactIdExpand() in
    multixact.c; one transaction would reuse its cached one)."""
    with psycopg.connect(dsn) as holder:
        holder.execute("SELECT id FROM mx_burner FOR SHARE")
        execute(dsn, "SET synchronous_commit = off", f"CALL share_lock({count})")
        holder.rollback()


@pytest.fixture(scope="module")
def aged_sandbox(sandbox_root: Path) -> Iterator[Sandbox]:
    settings = {
        "autovacuum_freeze_max_age": str(FREEZE_MAX_AGE),
        "vacuum_failsafe_age": "0",
        "wal_level": "logical",
    }
    with Sandbox.start(sandbox_root / "model", settings=settings) as sb:
        yield sb


@pytest.fixture(scope="module")
def aged(aged_sandbox: Sandbox) -> tuple[Snapshot, Advice]:
    """Tables past their freeze limits, one younger table, a logical slot: snapshot and advice."""
    execute(aged_sandbox.dsn, "CREATE DATABASE aged")
    dsn = make_conninfo(aged_sandbox.dsn, dbname="aged")
    execute(dsn, *SETUP, "ANALYZE off_forced")
    with psycopg.connect(dsn) as locker:
        lock = "LOCK TABLE {} IN SHARE UPDATE EXCLUSIVE MODE"
        locker.execute(sql.SQL(lock).format(sql.SQL(", ").join(map(sql.Identifier, AGED))))
        multixacts(dsn, 12_000)
        burn(dsn, 50_000)
        execute(dsn, "CREATE TABLE young (id int)")
        locker.execute(sql.SQL(lock).format(sql.Identifier("young")))
        execute(dsn, "SELECT pg_create_logical_replication_slot('vl_model_slot', 'pgoutput')")
        try:
            burn(dsn, 90_000)
            with connect(dsn, read_only=True) as session:
                snapshot = collect(session)
        finally:
            execute(dsn, "SELECT pg_drop_replication_slot('vl_model_slot')")
        locker.rollback()
    return snapshot, advise(snapshot)


def found(advice: Advice, question: str, relation: str | None, fragment: str) -> list[Finding]:
    return [
        f
        for f in advice.findings
        if f.question == question and f.relation == relation and fragment in f.title
    ]


def test_own_freeze_max_age_only_lowers_the_servers(aged: tuple[Snapshot, Advice]) -> None:
    """Bug 1: 1.5 billion on the table, 100,000 on the server: forced from 100,000."""
    _, advice = aged
    [f] = found(advice, "wraparound", "public.own_high", "transaction id age")
    assert "past autovacuum_freeze_max_age" in f.title
    assert f.evidence["freeze_max_age"] == FREEZE_MAX_AGE


def test_multixact_forcing_takes_the_tables_own_limit(aged: tuple[Snapshot, Advice]) -> None:
    """Bug 2: a table's autovacuum_multixact_freeze_max_age of 10,000 forces it."""
    snapshot, advice = aged
    [rel] = [t.heap for t in snapshot.tables if t.heap.name == "mx_own"]
    assert (rel.minmxid_age or 0) > 10_000  # the set-up made its multixacts
    [f] = found(advice, "wraparound", "public.mx_own", "multixact age")
    assert "past autovacuum_multixact_freeze_max_age" in f.title
    assert f.evidence["freeze_max_age"] == 10_000


def test_autovacuum_off_is_still_forced(aged: tuple[Snapshot, Advice]) -> None:
    """Bug 4: autovacuum off for a table past its freeze limit: PostgreSQL vacuums it anyway."""
    _, advice = aged
    texts = [
        f.title + f.detail + " ".join(r.reason for r in f.recommendations)
        for f in advice.findings
        if f.relation == "public.off_forced"
    ]
    assert texts
    assert not any("never removed" in text for text in texts), texts
    [f] = found(advice, "thresholds", "public.off_forced", "wraparound")
    assert f.severity == "warning"
    [status] = [t for t in advice.tables if t.relation == "public.off_forced"]
    assert status.seconds_to_vacuum is None or status.seconds_to_vacuum == 0


def test_time_left_counts_from_the_oldest_database(aged: tuple[Snapshot, Advice]) -> None:
    """Bug 8: the server stops at the cluster's oldest datfrozenxid, not at this table's."""
    snapshot, advice = aged
    [f] = found(advice, "wraparound", "public.young", "transaction id age")
    oldest = max(db.frozenxid_age for db in snapshot.databases)
    assert oldest > f.evidence["age"]  # type: ignore[operator]
    assert f.evidence["left"] == HARD_LIMIT - oldest


def test_failsafe_floor_is_above_freeze_max_age(aged: tuple[Snapshot, Advice]) -> None:
    """Bug 8: vacuum_failsafe_age 0 still leaves the failsafe at 1.05 × freeze_max_age."""
    _, advice = aged
    [f] = found(advice, "wraparound", "public.young", "transaction id age")
    assert f.evidence["failsafe_age"] == 1.05 * FREEZE_MAX_AGE
    assert f.severity == "warning"  # at about 90,000, under the failsafe's 105,000


def test_logical_slot_holds_catalogs_only(aged: tuple[Snapshot, Advice]) -> None:
    """Bug 5: a logical slot's catalog_xmin holds back the system catalogs, not user tables."""
    _, advice = aged
    [f] = found(advice, "horizon", None, "vl_model_slot")
    assert "catalogs only" in f.detail
    assert f.evidence["holds"] == "catalogs"


def test_stock_settings_are_the_servers_compiled_in_defaults(server: str) -> None:
    """What the tests and benchmarks take for a server nobody tuned is its pg_settings.boot_val,
    on 18 and on the server of VACUUMLAB_TEST_DSN."""
    with psycopg.connect(server) as conn:
        row = conn.execute("SELECT current_setting('server_version_num')::int").fetchone()
        assert row is not None
        stock = stock_settings(row[0])
        found = dict(
            conn.execute(
                "SELECT name, boot_val FROM pg_settings WHERE name = ANY(%s)", (list(stock),)
            ).fetchall()
        )
    assert found == stock
