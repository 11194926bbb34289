"""The tables question asked in two halves on two sessions at once (a large catalog): the same
tables as asked whole, a sibling opened as its session was, and the whole question still
answered when no sibling can be opened or one is lost."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import errors, sql
from psycopg.conninfo import make_conninfo

from helpers.db import execute
from vacuumlab.collect import snapshot as snapshot_module
from vacuumlab.collect.snapshot import SPLIT_CATALOG_BYTES, Kept, collect, sized_query
from vacuumlab.pg.connect import Session, connect
from vacuumlab.records.snapshot import Snapshot

#: 40 tables, so that each half has some (by a hash of the oid: all in one half 1 time in 2^39),
#: one of them with rows in its TOAST relation and a second index.
TABLES = (
    *(f"CREATE TABLE h{i} (id int PRIMARY KEY, body text)" for i in range(40)),
    "CREATE INDEX ON h0 (length(body))",
    """INSERT INTO h0 SELECT g, (SELECT string_agg(md5(g::text || j::text), '')
        FROM generate_series(1, 128) j) FROM generate_series(1, 100) g""",
)
AGES = {"frozenxid_age", "minmxid_age"}


def comparable(snap: Snapshot) -> list[dict[str, object]]:
    return [t.model_dump(exclude={"heap": AGES, "toast": AGES}) for t in snap.tables]


def collected(session: Session) -> tuple[Snapshot, int]:
    """A snapshot and the statements it sent."""
    before = session.statements
    snap = collect(session, halves=True)
    return snap, session.statements - before


@pytest.fixture
def halved(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every catalog counts as large: the question is asked in halves."""
    monkeypatch.setattr(snapshot_module, "SPLIT_CATALOG_BYTES", 0)


def test_a_small_catalog_is_asked_whole(embedded_database: str) -> None:
    execute(embedded_database, *TABLES)
    with connect(embedded_database) as session:
        assert 0 < session.catalog_bytes < SPLIT_CATALOG_BYTES
        collect(session, halves=True)
        assert session._sibling is None  # never opened


def test_two_halves_give_the_tables_asked_whole(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On each server version: the same tables, each paired with its TOAST relation, one
    more statement (the sibling's), and both halves had tables to give."""
    execute(database, *TABLES)
    with connect(database) as session:
        whole, whole_statements = collected(session)
        monkeypatch.setattr(snapshot_module, "SPLIT_CATALOG_BYTES", 0)
        halves, halves_statements = collected(session)
        sibling = session.sibling()
        assert sibling is not None
        assert sibling.conn.info.backend_pid != session.conn.info.backend_pid
        text = sized_query(session, "tables", "measured")
        parts = [
            {
                row[columns.index("name")]
                for columns, rows in session.chunks(
                    text, {"measure": True, "parts": 2, "part": part}, size=1000
                )
                for row in rows
            }
            for part in (0, 1)
        ]
    assert sibling.conn.closed  # closed with its session
    assert len(whole.tables) == 40
    assert comparable(halves) == comparable(whole)
    wide = next(t for t in halves.tables if t.heap.name == "h0")
    assert wide.toast is not None
    assert wide.heap.n_indexes == 2
    assert wide.heap.toast_bytes == (wide.toast.heap_bytes or 0) + (wide.toast.index_bytes or 0)
    assert (wide.heap.toast_bytes or 0) > 8192
    assert halves_statements == whole_statements + 1
    # Each table in exactly one half, and each half with some.
    names = {f"h{i}" for i in range(40)}
    assert parts[0] & names
    assert parts[1] & names
    assert (parts[0] | parts[1]) >= names
    assert not parts[0] & parts[1] & names


def test_the_sibling_is_opened_as_its_session_was(embedded_database: str, halved: None) -> None:
    with connect(embedded_database) as session:
        collect(session, halves=True)
        sibling = session.sibling()
        assert sibling is not None
        for setting in ("application_name", "lock_timeout", "statement_timeout"):
            assert sibling.scalar(f"SHOW {setting}") == session.scalar(f"SHOW {setting}")
        with pytest.raises(errors.ReadOnlySqlTransaction):
            sibling.execute("CREATE TABLE must_not_exist (id int)")


@pytest.fixture
def one_session_role(embedded_database: str) -> Iterator[str]:
    """A DSN for a role allowed one connection at a time."""
    role = f"vl_one_{uuid.uuid4().hex[:6]}"
    execute(
        embedded_database,
        *TABLES,
        sql.SQL("CREATE ROLE {} LOGIN CONNECTION LIMIT 1").format(sql.Identifier(role)),
    )
    try:
        yield make_conninfo(embedded_database, user=role)
    finally:
        execute(embedded_database, sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_no_sibling_to_be_had_asks_both_halves_here(one_session_role: str, halved: None) -> None:
    """A role limited to one connection: the sibling is refused, both halves are asked on the
    one session, and the tables are all there; no sibling is tried again, and the question
    is asked whole from then on."""
    with connect(one_session_role) as session:
        snap, statements = collected(session)
        assert session.sibling_refused
        again, statements_again = collected(session)
    assert {t.heap.name for t in snap.tables} == {f"h{i}" for i in range(40)}
    assert comparable(again) == comparable(snap)
    assert statements == statements_again + 1  # two halves here, then the question whole


def test_a_lost_sibling_has_its_half_asked_here(embedded_database: str, halved: None) -> None:
    """The sibling's backend is terminated between two snapshots (as an idle session timeout
    would): the second snapshot still has every table, and the sibling is given up."""
    execute(embedded_database, *TABLES)
    with connect(embedded_database) as session:
        first, _ = collected(session)
        sibling = session.sibling()
        assert sibling is not None
        pid = sibling.conn.info.backend_pid
        with psycopg.connect(embedded_database, autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
            deadline = time.monotonic() + 10
            while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
                assert time.monotonic() < deadline, "the sibling's backend did not end"
                time.sleep(0.05)
        second, _ = collected(session)
        assert session.sibling_refused
        assert session.sibling() is None
    assert comparable(second) == comparable(first)


def test_kept_relations_across_halves(
    embedded_database: str, halved: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live view's refreshes keep their relations when the two halves fill one Kept from
    two threads: every relation is kept, and a refresh gives the tables a whole one does."""
    execute(embedded_database, *TABLES)
    kept = Kept()
    with connect(embedded_database) as session:
        first = collect(session, kept=kept, halves=True)
        assert len(kept.rows) == 80  # 40 heaps and their TOAST relations
        execute(embedded_database, "INSERT INTO h1 VALUES (1, 'one')")
        second = collect(session, kept=kept, halves=True)
        assert len(kept.rows) == 80
        assert session.sibling() is not None
    monkeypatch.setattr(snapshot_module, "SPLIT_CATALOG_BYTES", 1 << 62)  # whole, one session
    with connect(embedded_database) as session:
        whole = collect(session)
    assert comparable(second) == comparable(whole)
    before = {t.heap.name: d for t, d in zip(first.tables, comparable(first), strict=True)}
    after = {t.heap.name: d for t, d in zip(second.tables, comparable(second), strict=True)}
    assert [name for name in after if after[name] != before[name]] == ["h1"]  # its new row
