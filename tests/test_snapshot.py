"""The snapshot against real servers: the embedded PostgreSQL 18 and VACUUMLAB_TEST_DSN."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors, sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from helpers.db import execute, xmin_holder
from helpers.snapshot import SIZED
from vacuumlab.collect.snapshot import (
    PROBES,
    Kept,
    TableRows,
    collect,
    in_name_order,
    sized_query,
    with_sizes,
)
from vacuumlab.errors import VacuumlabError
from vacuumlab.model.forecast import inputs
from vacuumlab.model.simulator import Simulator
from vacuumlab.pg import connect as connect_module
from vacuumlab.pg import queries
from vacuumlab.pg.connect import connect
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.snapshot import Snapshot, Table, parse_snapshot

SCENARIO = (
    # Dead tuples that stay: autovacuum is off for the table; ANALYZE counts them.
    """CREATE TABLE churned (id int PRIMARY KEY, v int, note text) WITH (autovacuum_enabled = false,
        autovacuum_vacuum_threshold = 123, toast.autovacuum_vacuum_scale_factor = 0.05)""",
    "INSERT INTO churned SELECT i, i, NULL FROM generate_series(1, 1000) i",
    "DELETE FROM churned WHERE id <= 400",
    # 4 kB of md5 text per row does not compress, so it is stored out of line in TOAST.
    "CREATE TABLE wide (id int, body text) WITH (autovacuum_enabled = false)",
    """INSERT INTO wide SELECT i, (SELECT string_agg(md5(i::text || j::text), '')
        FROM generate_series(1, 128) j) FROM generate_series(1, 200) i""",
)


def build_scenario(dsn: str) -> None:
    """Create the scenario; ANALYZE only once the DML counters have reached the shared stats,
    or their late flush would add to the counts ANALYZE sets."""
    execute(dsn, *SCENARIO)
    until(
        dsn,
        lambda s: (
            table(s, "churned").heap.n_tup_del == 400 and table(s, "wide").heap.n_tup_ins == 200
        ),
    )
    execute(dsn, "ANALYZE churned, wide")


def snapshot_of(dsn: str) -> Snapshot:
    with connect(dsn) as session:
        return collect(session)


def table(snap: Snapshot, name: str) -> Table:
    return next(t for t in snap.tables if t.heap.name == name)


def until(dsn: str, check: object, timeout: float = 10.0) -> Snapshot:
    """Snapshots until ``check(snapshot)`` holds: cumulative stats arrive asynchronously."""
    deadline = time.monotonic() + timeout
    while True:
        snap = snapshot_of(dsn)
        if check(snap) or time.monotonic() > deadline:  # type: ignore[operator]
            return snap
        time.sleep(0.2)


def max_prepared(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT current_setting('max_prepared_transactions')::int").fetchone()
        assert row is not None
        return int(row[0])


@pytest.fixture
def prepared_xact(database: str) -> Iterator[str | None]:
    """A prepared transaction in ``database`` (None where the server allows none)."""
    if max_prepared(database) == 0:
        yield None
        return
    gid = "vl-test-gid"
    execute(database, "CREATE TABLE IF NOT EXISTS twophase (id int)")
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO twophase VALUES (1)")
        conn.execute(sql.SQL("PREPARE TRANSACTION {}").format(sql.Literal(gid)))
    try:
        yield gid
    finally:
        execute(database, sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(gid)))


def test_snapshot_of_a_churned_database(database: str, prepared_xact: str | None) -> None:
    build_scenario(database)
    with xmin_holder(database) as holder_pid:
        snap = until(database, lambda s: (table(s, "churned").heap.n_dead_tup or 0) >= 400)
    version = snap.server.version_num

    churned = table(snap, "churned").heap
    assert churned.n_dead_tup == 400
    assert churned.n_live_tup == 600
    assert churned.reltuples == 600
    assert churned.n_tup_del == 400
    assert churned.n_indexes == 1
    assert churned.heap_bytes == churned.relpages * snap.server.block_size > 0
    assert churned.reloptions == {
        "autovacuum_enabled": "false",
        "autovacuum_vacuum_threshold": "123",
    }
    toast = table(snap, "churned").toast
    assert toast is not None
    assert toast.reloptions == {"autovacuum_vacuum_scale_factor": "0.05"}
    assert toast.toast_of == churned.oid
    assert churned.frozenxid_age is not None
    assert churned.frozenxid_age > 0

    wide = table(snap, "wide")
    assert wide.toast is not None
    assert wide.toast.heap_bytes is not None
    assert wide.toast.heap_bytes > 200 * 4096  # every value went out of line
    assert wide.heap.toast_bytes == wide.toast.heap_bytes + (wide.toast.index_bytes or 0)
    assert (wide.heap.heap_bytes or 0) < wide.toast.heap_bytes

    # Version-dependent fields are there exactly where the server has them.
    assert (churned.n_tup_newpage_upd is not None) == (version >= 160000)
    assert (churned.relallfrozen is not None) == (version >= 180000)
    assert (churned.total_vacuum_time_ms is not None) == (version >= 180000)
    assert bool(snap.io) == (version >= 160000)
    assert any(n.probe == "io" for n in snap.notes) == (version < 160000)

    holders = {b.pid: b for b in snap.backends}
    assert holder_pid in holders
    assert holders[holder_pid].state == "idle in transaction"
    assert holders[holder_pid].backend_xmin is not None
    if prepared_xact is not None:
        [prepared] = [p for p in snap.prepared if p.gid == prepared_xact]
        assert prepared.database == conninfo_to_dict(database)["dbname"]
        assert prepared.xid_age >= 0

    settings = {s.name: s for s in snap.settings}
    assert settings["autovacuum_naptime"].unit == "s"
    assert settings["autovacuum_vacuum_scale_factor"].vartype == "real"
    assert "vacuum_cost_page_miss" in settings
    assert ("autovacuum_vacuum_max_threshold" in settings) == (version >= 180000)
    assert snap.checkpointer is not None
    assert snap.bgwriter is not None
    assert snap.wal is not None
    assert snap.wal.lsn is not None
    assert snap.xids is not None
    assert snap.xids.next_xid > 0
    assert conninfo_to_dict(database)["dbname"] in {d.name for d in snap.databases}


def test_query_count_does_not_grow_with_tables(embedded_database: str) -> None:
    def statements() -> int:
        with connect(embedded_database) as session:
            collect(session)
            return session.statements

    execute(embedded_database, "CREATE TABLE t0 (id int PRIMARY KEY, body text)")
    few = statements()
    for i in range(1, 80):
        execute(embedded_database, f"CREATE TABLE t{i} (id int PRIMARY KEY, body text)")
    assert statements() == few == len(PROBES) + 1  # one per probe, plus the server info


#: What moves with every transaction anywhere, left out where two snapshots are compared.
AGED = {
    "heap": {"frozenxid_age", "minmxid_age"},
    "toast": {"frozenxid_age", "minmxid_age"},
}


@pytest.mark.parametrize("by_file", [True, False], ids=["pg_stat_file", "pg_relation_size"])
def test_sizes_are_postgresqls_own(database: str, by_file: bool) -> None:
    """Both ways of measuring (pg/queries/fragments/) give pg_relation_size()'s figures."""
    execute(database, *SIZED)
    with psycopg.connect(database) as conn:
        # Main forks, as heap_bytes and index_bytes count (pg_indexes_size() adds the other
        # forks: an unlogged index's init fork, an index's free space map).
        rows = conn.execute(
            "WITH ix AS (SELECT indrelid, sum(pg_relation_size(indexrelid))::bigint AS bytes"
            " FROM pg_index GROUP BY indrelid)"
            " SELECT c.relname, pg_relation_size(c.oid), coalesce(i.bytes, 0),"
            " pg_relation_size(c.reltoastrelid), coalesce(ti.bytes, 0)"
            " FROM pg_class c LEFT JOIN ix i ON i.indrelid = c.oid"
            " LEFT JOIN ix ti ON ti.indrelid = c.reltoastrelid"
            " WHERE c.relname IN ('fresh', 'written', 'rolled_back',"
            " 'emptied', 'truncated', 'unlogged', 'rewritten')"
        ).fetchall()
    with connect(database) as session:
        assert session.info.can_stat_files  # these tests connect as a superuser
        session.info = session.info.model_copy(update={"can_stat_files": by_file})
        snap = collect(session)
    assert len(rows) == 7
    tables = {t.heap.name: t for t in snap.tables}
    for name, heap, indexes, toast, toast_indexes in rows:
        t = tables[name]
        assert (t.heap.heap_bytes, t.heap.index_bytes) == (heap, indexes), name
        if t.toast is None:
            assert toast is None, name
            continue
        assert (t.toast.heap_bytes, t.toast.index_bytes) == (toast, toast_indexes), name
        assert t.heap.toast_bytes == toast + toast_indexes, name
    block = 8192
    assert tables["written"].heap.relpages == 0 < tables["written"].toast.heap_bytes // block  # type: ignore[union-attr]
    assert tables["rolled_back"].heap.heap_bytes > 0  # type: ignore[operator]
    assert tables["emptied"].heap.heap_bytes == 0
    assert tables["emptied"].heap.index_bytes > block  # type: ignore[operator]
    assert tables["unlogged"].heap.heap_bytes > 0 < tables["rewritten"].heap.heap_bytes  # type: ignore[operator]


def test_rows_in_any_order_and_chunks_make_the_same_relations(embedded_database: str) -> None:
    """A heap's TOAST bytes come from its TOAST relation's row, which the query sends first;
    rows that come the other way round, in chunks of any size, still make the same records,
    kept or not."""
    execute(embedded_database, *SIZED)
    with connect(embedded_database) as session:
        text = sized_query(session, "tables", "measured")
        params = {"measure": True, "parts": 1, "part": 0}
        (names, rows), *rest = session.chunks(text, params, size=100_000)
    assert not rest
    toast_rows = [i for i, row in enumerate(rows) if row[names.index("toast_of")] is not None]
    assert toast_rows == list(range(len(toast_rows))) != []  # TOAST relations first

    def built(order: list[tuple[Any, ...]], size: int, kept: Kept | None) -> list[Table]:
        if kept is not None:
            kept.begin()
        made = TableRows(kept)
        for at in range(0, len(order), size):
            made.add(names, order[at : at + size])
        if kept is not None:
            kept.end()
        return in_name_order(made.done())

    expected = built(rows, len(rows), None)
    wide = next(t for t in expected if t.heap.name == "written")
    assert wide.toast is not None
    assert wide.heap.toast_bytes == (wide.toast.heap_bytes or 0) + (wide.toast.index_bytes or 0)
    assert (wide.heap.toast_bytes or 0) > 8192
    heaps_first = rows[len(toast_rows) :] + rows[: len(toast_rows)]
    kept = Kept()
    assert built(heaps_first, 3, None) == expected
    assert built(heaps_first, 2, kept) == expected
    assert built(rows, 5, kept) == expected  # kept from heaps-first rows, now in order
    assert built(heaps_first, 7, kept) == expected


def test_an_older_libpq_gets_the_rows_whole_and_the_same_snapshot(
    embedded_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libpq before 17 cannot send rows in chunks: the tables come in one list, the same."""
    execute(embedded_database, *SIZED)
    streamed = snapshot_of(embedded_database)
    monkeypatch.setattr(connect_module, "CHUNKED_LIBPQ", 10**9)
    whole = snapshot_of(embedded_database)
    assert len(whole.tables) == 7
    assert [t.model_dump(exclude=AGED) for t in whole.tables] == [
        t.model_dump(exclude=AGED) for t in streamed.tables
    ]


def test_statistics_times_and_options_read_as_the_server_gives_them(database: str) -> None:
    """The tables come in PostgreSQL's binary formats: each timestamp is the instant, and
    prints with the offset, that the text format gives, in a time zone that is not UTC;
    options, counters and names are the same values."""
    execute(
        database,
        sql.SQL("ALTER DATABASE {} SET timezone = 'America/St_Johns'").format(
            sql.Identifier(conninfo_to_dict(database)["dbname"])
        ),
        "CREATE TABLE t (id int PRIMARY KEY, note text)"
        " WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.01)",
        "INSERT INTO t SELECT i, repeat('x', i) FROM generate_series(1, 500) i",
        "DELETE FROM t WHERE id % 5 = 0",
        "VACUUM t",
        "ANALYZE t",
    )
    columns = ("last_vacuum", "last_analyze", "vacuum_count", "analyze_count", "n_tup_del")
    query = f"SELECT {', '.join(columns)} FROM pg_stat_all_tables WHERE relid = 't'::regclass"
    snap = until(database, lambda s: table(s, "t").heap.last_analyze is not None)
    with psycopg.connect(database) as conn:  # text format
        expected = conn.execute(query).fetchone()
        assert conn.execute("SHOW timezone").fetchone() == ("America/St_Johns",)
    assert expected is not None
    heap = table(snap, "t").heap
    got = tuple(getattr(heap, c) for c in columns)
    assert got == expected
    assert [v.isoformat() for v in got[:2]] == [v.isoformat() for v in expected[:2]]
    assert expected[0].utcoffset() != timedelta(0)
    assert heap.reloptions == {"fillfactor": "70", "autovacuum_vacuum_scale_factor": "0.01"}


def test_snapshot_session_is_read_only(database: str) -> None:
    with connect(database) as session:
        assert session.scalar("SHOW transaction_read_only") == "on"
        assert session.scalar("SHOW application_name") == "vacuumlab"
        assert (
            int(session.scalar("SELECT setting FROM pg_settings WHERE name = 'lock_timeout'")) > 0
        )
        with pytest.raises(errors.ReadOnlySqlTransaction):
            session.execute("CREATE TABLE must_not_exist (id int)")


def test_a_probe_without_privilege_is_turned_off_with_a_note(embedded_database: str) -> None:
    role = f"vl_limited_{uuid.uuid4().hex[:6]}"
    execute(
        embedded_database,
        sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)),
        "CREATE TABLE visible (id int)",
        # Views in pg_catalog carry their own ACL per database: revoke one, for this one only.
        "REVOKE SELECT ON pg_catalog.pg_prepared_xacts FROM PUBLIC",
    )
    try:
        snap = snapshot_of(make_conninfo(embedded_database, user=role))
    finally:
        execute(embedded_database, sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    notes = {n.probe: n for n in snap.notes}
    assert "permission denied" in notes["prepared"].reason
    assert notes["prepared"].fix == f"GRANT pg_monitor TO {role};"
    assert "pg_read_all_stats" in notes["backends"].reason
    assert [t.heap.name for t in snap.tables] == ["visible"]  # the other probes went on
    assert snap.settings
    assert not snap.server.can_stat_files


def test_a_role_granted_pg_stat_file_sizes_from_the_files(embedded_database: str) -> None:
    """can_stat_files follows the grant, and the sizes come out the same either way."""
    role = f"vl_files_{uuid.uuid4().hex[:6]}"
    ident = sql.Identifier(role)
    execute(
        embedded_database,
        sql.SQL("CREATE ROLE {} LOGIN IN ROLE pg_monitor").format(ident),
        "CREATE TABLE filled (id int PRIMARY KEY, body text)",
        "INSERT INTO filled SELECT i, repeat(md5(i::text), 100) FROM generate_series(1, 500) i",
        sql.SQL("GRANT SELECT ON filled TO {}").format(ident),
    )
    dsn = make_conninfo(embedded_database, user=role)
    try:
        before = snapshot_of(dsn)
        execute(
            embedded_database,
            sql.SQL("GRANT EXECUTE ON FUNCTION pg_stat_file(text, boolean) TO {}").format(ident),
        )
        after = snapshot_of(dsn)
    finally:
        execute(
            embedded_database,
            sql.SQL("DROP OWNED BY {}").format(ident),
            sql.SQL("DROP ROLE {}").format(ident),
        )
    assert (before.server.can_stat_files, after.server.can_stat_files) == (False, True)
    sizes = [
        [(t.heap.heap_bytes, t.heap.index_bytes, t.heap.toast_bytes) for t in snap.tables]
        for snap in (before, after)
    ]
    assert sizes[0] == sizes[1]
    assert sizes[0][0][0] > 0  # type: ignore[operator]


WEIRD_NAMES = (
    'with "quotes"',
    "with spaces",
    "CamelCase",
    "ünïcödé_表",
    "select",
    "[red]markup[/red]",
    "x" * 63,
    "é" * 31 + "x",  # 63 bytes in UTF-8
)


def test_awkward_names_come_through_intact(database: str) -> None:
    schema = "Odd Schema"
    statements: list[sql.Composable] = [
        sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)),
    ]
    for name in WEIRD_NAMES:
        ident = sql.Identifier(schema, name)
        statements.append(sql.SQL("CREATE TABLE {} (id int, note text)").format(ident))
    execute(database, *statements)
    snap = snapshot_of(database)
    assert sorted(t.heap.name for t in snap.tables) == sorted(WEIRD_NAMES)
    assert {t.heap.schema_name for t in snap.tables} == {schema}
    assert all(len(name.encode()) <= 63 for name in WEIRD_NAMES)


def test_tables_come_in_the_servers_own_name_order(database: str) -> None:
    """The query leaves sorting to Python: the order must still be ``ORDER BY nspname,
    relname`` as the server gives it (``name`` sorts in collation "C": "B" before "a", "z"
    before "é"), whatever order the tables were made in."""
    names = ("z", "é", "a", "B", "a_b", "aa", "Z9", "_x")
    statements: list[sql.Composable] = [sql.SQL("CREATE SCHEMA {}").format(sql.Identifier("b"))]
    for schema in ("public", "b"):
        for name in names:
            ident = sql.Identifier(schema, name)
            statements.append(sql.SQL("CREATE TABLE {} (id int, note text)").format(ident))
    execute(database, *statements)
    with psycopg.connect(database) as conn:
        expected = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname IN ('public', 'b') "
            "ORDER BY n.nspname, c.relname"
        ).fetchall()
    got = [(t.heap.schema_name, t.heap.name) for t in snapshot_of(database).tables]
    assert got == expected
    assert got[0] == ("b", "B")
    assert got[-1] == ("public", "é")


def test_json_round_trip_is_exact(database: str) -> None:
    build_scenario(database)
    snap = snapshot_of(database)
    assert parse_snapshot(snap.model_dump(mode="json"), "memory") == snap
    assert parse_snapshot(json.loads(snap.dump_json()), "file") == snap  # schema 2: columns


def test_relations_and_tables_share_one_set_of_their_fields(database: str) -> None:
    """Pydantic's set of the fields given, one per record, took 2.2 kB a relation: a snapshot's
    relations share one, and its tables another; copying one record with a field changed
    leaves the shared set as it was."""
    build_scenario(database)
    snap = snapshot_of(database)
    relations = [r for t in snap.tables for r in (t.heap, t.toast) if r is not None]
    assert len(relations) > 2
    assert len({id(r.__pydantic_fields_set__) for r in relations}) == 1
    assert len({id(t.__pydantic_fields_set__) for t in snap.tables}) == 1
    shared = set(relations[0].__pydantic_fields_set__)
    copied = relations[0].model_copy(update={"n_dead_tup": 7})
    assert copied.n_dead_tup == 7
    assert relations[1].__pydantic_fields_set__ == shared
    assert relations[1].model_dump(exclude_unset=True).keys() == shared


def test_a_snapshot_saved_before_exact_existed_still_loads(embedded_database: str) -> None:
    raw = snapshot_of(embedded_database).model_dump(mode="json")
    del raw["exact"]  # snapshots written before --exact was part of the snapshot
    assert parse_snapshot(raw, "old.json").exact == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], "not a vacuumlab snapshot"),
        ({"kind": "something.else"}, "not a vacuumlab snapshot"),
        ({"kind": "vacuumlab.snapshot", "schema_version": 99}, "upgrade vacuumlab"),
        ({"kind": "vacuumlab.snapshot", "schema_version": 1}, "damaged snapshot"),
    ],
)
def test_foreign_snapshots_are_refused(raw: object, message: str) -> None:
    with pytest.raises(VacuumlabError, match=message):
        parse_snapshot(raw, "file.json")


#: Values for the parameters a query file takes: pg_class has an oid every server knows.
PARAMS = {"relid": 1259, "name": "pgstattuple", "relation": "pg_class", "names": ["autovacuum"],
          "since": None, "pid": 0, "schema": "pg_catalog", "prefix": "SELECT",
          "relids": [1259], "oids": [1259], "oid": 1259, "tables": ["pg_class"], "measure": True,
          "parts": 1, "part": 0}  # fmt: skip


def test_version_fragments_fill_one_file_for_every_version() -> None:
    """The tables question is one file; the columns a version adds come from the closest
    fragment at or below the server's version, reading the relation the file names."""
    assert queries.versions("tables") == [130000, 160000, 180000]
    old, new = queries.get("tables", 170000), queries.get("tables", 180000)
    assert old is not None
    assert new is not None
    assert "NULL::integer AS relallfrozen" in old
    assert "t.relallfrozen" not in old
    assert "c.relallvisible, c.relallfrozen, c.reloptions" in new
    assert "t.relallvisible, t.relallfrozen, t.reloptions" in new
    assert "pg_stat_get_tuples_newpage_updated(c.oid)" in old
    assert "pg_stat_get_tuples_newpage_updated" not in (queries.get("tables", 150000) or "")
    assert "{" not in queries.with_versions("{newpage_updated:c}", 160000)


def test_every_sql_file_runs_where_it_is_meant_to(database: str) -> None:
    """Each file runs on this server when its version is at or below the server's; a file a
    newer one replaces may fail only for a column that the newer version removed."""
    execute(database, "CREATE EXTENSION pgstattuple")  # for exact_bloat
    with connect(database) as session:
        version = session.info.version_num
        for name in queries.names():
            usable = [v for v in queries.versions(name) if v <= version]
            for v in usable:
                text = queries.get(name, v)
                assert text is not None
                assert text.startswith("--"), f"{name} {v}: first line must say what changed"
                if "{schema}" in text:  # an extension's view: tests/test_pg_probes.py
                    continue
                for statement in with_fragments(text):
                    spelt = statement if isinstance(statement, str) else statement.as_string()
                    params = {k: v for k, v in PARAMS.items() if f"%({k})s" in spelt} or None
                    try:
                        session.query(statement, dict, params)  # type: ignore[arg-type]
                    except errors.UndefinedColumn:
                        assert v != max(usable), f"{name} for {v} fails on {version}"


def with_fragments(text: str) -> list[sql.Composable | str]:
    """``text`` with each of its ways to measure filled in (pg/queries/fragments/)."""
    if "{sizes}" not in text:
        return [text]
    return [with_sizes(text, by_file=by_file) for by_file in (True, False)]


def test_own_queries_are_tagged_in_pg_stat_statements(embedded_database: str) -> None:
    """The tag survives into pg_stat_statements, so a study can leave our own queries out."""
    execute(embedded_database, "CREATE EXTENSION pg_stat_statements")
    snapshot_of(embedded_database)
    with psycopg.connect(embedded_database) as conn:
        rows = conn.execute(
            "SELECT query FROM pg_stat_statements WHERE query LIKE %s "
            "AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
            ["%/* vacuumlab:%"],
        ).fetchall()
    tags = {q.rsplit("/* vacuumlab:", 1)[1].rstrip(" */") for (q,) in rows}
    assert {"tables", "settings", "backends", "server_info"} <= tags


def test_workers_come_from_pg_stat_activity_analyze_included(sandbox_root: Path) -> None:
    """An autovacuum worker running ANALYZE, caught on a server of its own with a naptime of a
    second: a table past its analyze threshold only, analysed at a cost limit of 1 per 100 ms,
    so the worker stays in ANALYZE for many seconds. pg_stat_progress_vacuum shows nothing;
    the snapshot's workers show it, with the table and what it does."""
    settings = {"autovacuum_naptime": "1"}
    with Sandbox.start(sandbox_root / "workers", settings=settings) as server:
        execute(
            server.dsn,
            """CREATE TABLE sampled (id int, pad text) WITH (autovacuum_vacuum_threshold =
            1000000000, autovacuum_vacuum_insert_threshold = -1, autovacuum_analyze_threshold
            = 0, autovacuum_analyze_scale_factor = 0, autovacuum_vacuum_cost_limit = 1,
            autovacuum_vacuum_cost_delay = 100)""",
            "INSERT INTO sampled SELECT i, repeat('x', 200) FROM generate_series(1, 100000) i",
        )
        deadline = time.monotonic() + 60  # a loaded machine may start the worker late
        while True:
            snap = snapshot_of(server.dsn)
            assert snap.workers is not None
            found = [w for w in snap.workers if w.doing == "analyze"]
            if found or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        oid = table(snap, "sampled").heap.oid
        assert [(w.relid, w.database) for w in found] == [(oid, "postgres")], snap.workers
        assert not any(v.relid == oid for v in snap.vacuums)
        assert found[0].pid not in {v.pid for v in snap.vacuums}


def test_catalog_position_is_the_pg_class_rows_physical_place(database: str) -> None:
    """A table whose pg_class row an ALTER TABLE rewrote sits after younger tables in pg_class,
    as a worker's scan meets them; the oids say the opposite. The forecast lists them so."""
    execute(
        database,
        "CREATE TABLE first (id int)",
        "CREATE TABLE second (id int)",
        "ALTER TABLE first SET (autovacuum_vacuum_scale_factor = 0.1)",
    )
    with psycopg.connect(database) as conn:
        rows = dict(conn.execute("SELECT relname, ctid::text FROM pg_class").fetchall())
    snap = snapshot_of(database)
    first, second = table(snap, "first").heap, table(snap, "second").heap
    assert first.oid < second.oid
    assert first.catalog_position is not None
    assert second.catalog_position is not None
    assert first.catalog_position > second.catalog_position
    block, line = map(int, rows["first"].strip("()").split(","))
    assert first.catalog_position == block * 65536 + line
    given = inputs(snap, snap.model_copy(update={"taken_at": snap.taken_at + timedelta(seconds=1)}))
    heaps = [s.label for s in Simulator(given.subjects, given.launcher, 1).subjects]
    assert heaps.index("public.second") < heaps.index("public.first")
