"""The model's rules in the advisor's output, each against the embedded PostgreSQL 18 where
the situation can be made there: booleans as PostgreSQL stores them, holders matched to the
database they hold, dead-tuple rates across a vacuum with pruning, table-scope ranges, and
tables past their analyze threshold."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql

from helpers.db import execute, wait_for_counts, xmin_holder
from vacuumlab.advise import advise
from vacuumlab.advise.context import Context
from vacuumlab.advise.estimate import relation_rates
from vacuumlab.collect.snapshot import collect
from vacuumlab.errors import VacuumlabError
from vacuumlab.lab.advice import collect_advice
from vacuumlab.model.knobs import KNOBS, Knob
from vacuumlab.pg.connect import connect
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.snapshot import Relation, Snapshot


def snap(dsn: str) -> Snapshot:
    with connect(dsn, read_only=True) as session:
        return collect(session)


def heap(snapshot: Snapshot, name: str) -> Relation:
    [rel] = [t.heap for t in snapshot.tables if t.heap.name == name]
    return rel


def test_stored_booleans_read_as_postgresql_reads_them(embedded_database: str) -> None:
    """Bug 8: autovacuum_enabled stored as ``t`` or ``y`` is on (parse_bool() in bool.c)."""
    execute(
        embedded_database,
        "CREATE TABLE as_t (id int) WITH (autovacuum_enabled = t)",
        "CREATE TABLE as_y (id int) WITH (autovacuum_enabled = y)",
        "CREATE TABLE as_of (id int) WITH (autovacuum_enabled = of)",
    )
    snapshot = snap(embedded_database)
    assert heap(snapshot, "as_t").reloptions == {"autovacuum_enabled": "t"}  # stored as typed
    enabled = {t.relation: t.autovacuum_enabled for t in advise(snapshot).tables}
    assert enabled == {"public.as_t": True, "public.as_y": True, "public.as_of": False}


def test_holders_in_other_databases_do_not_hold_this_one(
    embedded_database: str, sandbox: Sandbox
) -> None:
    """Bug 5: a backend or a prepared transaction of another database holds back its own
    database's tables, not these (ComputeXidHorizons() in procarray.c)."""
    other = sandbox.dsn  # the postgres database
    execute(other, "CREATE TABLE IF NOT EXISTS vl_other_db (id int)")
    execute(embedded_database, "CREATE TABLE here (id int)")
    with xmin_holder(other) as pid, psycopg.connect(other, autocommit=True) as conn:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO vl_other_db VALUES (1)")
        conn.execute("PREPARE TRANSACTION 'vl-other-db'")
        try:
            advice, _ = collect_advice(embedded_database)
        finally:
            conn.execute("ROLLBACK PREPARED 'vl-other-db'")
    held = [f.title for f in advice.findings if f.question == "horizon"]
    assert not [t for t in held if f"pid {pid}:" in t or "vl-other-db" in t], held
    assert not any(r.setting == "idle_in_transaction_session_timeout" for _, r in
                   advice.recommendations())  # fmt: skip


def test_dead_tuple_rate_across_a_vacuum_is_not_updates(embedded_database: str) -> None:
    """Bug 6: after a vacuum, HOT updates whose dead versions pruning removed again do not
    count: the rate comes from n_dead_tup, not n_tup_upd + n_tup_del."""
    db = embedded_database
    execute(
        db,
        "CREATE TABLE hot (id int PRIMARY KEY, n int) WITH (autovacuum_enabled = off)",
        "INSERT INTO hot SELECT g, 0 FROM generate_series(1, 100) g",
    )
    first = snap(db)
    execute(db, "VACUUM hot", *["UPDATE hot SET n = n + 1"] * 30)
    wait_for_counts(db, "hot", "n_tup_upd", 3000)
    later = snap(db)
    after = heap(later, "hot")
    assert (after.n_dead_tup or 0) < 1000  # pruning removed most of the 3,000 versions
    ctx = Context(first, later)
    rates = relation_rates(ctx, after)
    assert rates is not None
    assert rates.dead_per_second is not None
    assert rates.dead_source is not None
    # n_dead_tup since the vacuum (its non-HOT share), or the non-HOT updates when more.
    assert "n_dead_tup" in rates.dead_source or "non-HOT" in rates.dead_source
    assert rates.dead_per_second * (ctx.seconds or 0) < 1000


def _table_knobs() -> list[Knob]:
    return [
        k
        for k in KNOBS.values()
        if "table" in k.scopes and k.vartype in ("integer", "real") and k.since <= 180000
    ]


@pytest.mark.parametrize("k", _table_knobs(), ids=lambda k: k.name)
def test_table_ranges_match_postgresql(embedded_database: str, k: Knob) -> None:
    """Bug 8: a reloption's range is its own (reloptions.c): cost delay from 0 and cost limit
    from 1 on a table, where the GUCs take -1. vacuumlab accepts what the server accepts."""
    execute(embedded_database, "CREATE TABLE ranged (id int)")
    for value in sorted({-1.0, 0.0, 1.0, k.minimum or 0.0, (k.minimum or 0.0) - 1}):
        text = f"{value:g}"
        assert _server_accepts(embedded_database, k.name, text) == _we_accept(k, text), text


def _server_accepts(dsn: str, name: str, value: str) -> bool:
    statement = sql.SQL("ALTER TABLE ranged SET ({} = {})").format(
        sql.Identifier(name), sql.Literal(value)
    )
    try:
        execute(dsn, statement)
    except psycopg.errors.InvalidParameterValue:
        return False
    return True


def _we_accept(k: Knob, value: str) -> bool:
    try:
        k.check(value, "table", 180000)
    except VacuumlabError:
        return False
    return True


def test_analyze_threshold_is_reported(embedded_database: str) -> None:
    """Bug 8: a table past its analyze threshold is reported (relation_needs_vacanalyze()'s
    doanalyze). A lock keeps autovacuum, which skips locked tables, from analysing it first."""
    db = embedded_database
    execute(db, "CREATE TABLE fresh (id int) WITH (autovacuum_vacuum_insert_threshold = -1)")
    with psycopg.connect(db) as locker:
        locker.execute("LOCK TABLE fresh IN SHARE UPDATE EXCLUSIVE MODE")
        execute(db, "INSERT INTO fresh SELECT generate_series(1, 5000)")
        wait_for_counts(db, "fresh", "n_mod_since_analyze", 5000)
        advice = advise(snap(db))
        locker.rollback()
    [status] = [t for t in advice.tables if t.relation == "public.fresh"]
    assert status.needs_analyze
    titles = [f.title for f in advice.findings if f.relation == "public.fresh"]
    # Never analyzed (reltuples -1): its threshold is the base 50 rows, no "100×" of it.
    assert titles == ["never analyzed: an autoanalyze is due"], titles
