"""``vacuumlab watch --all-databases``: the merged view of several databases on records built
here (the ranking across databases), the refreshes of a real server's databases (three of
the embedded PostgreSQL's: one busy, one quiet, one the pg_monitor role may not connect to),
and the screen in a real terminal (tmux)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from helpers.advise import autovacuum, relation, server, snapshot
from helpers.cli import assert_one_line_error, run_cli
from helpers.databases import BUSY_DEAD, Databases, three_databases
from helpers.terminal import queue_rows, watching
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.live import LiveView
from vacuumlab.records.snapshot import Snapshot, Table
from vacuumlab.watch.all_databases import ServerSource
from vacuumlab.watch.detail import detail
from vacuumlab.watch.merged import merged
from vacuumlab.watch.source import Source
from vacuumlab.watch.view import live_view

#: 1,000 tuples: vacuum threshold 50 + 0.2 × 1,000 = 250 dead tuples.
SIZED = {"reltuples": 1000.0, "relpages": 10, "n_live_tup": 1000}


def table(oid: int, name: str, **fields: object) -> Table:
    return Table(heap=relation(oid, name, **(SIZED | fields)), toast=None)


def of_database(name: str, *tables: Table, running: int | None = None) -> Snapshot:
    """A snapshot of database ``name``; ``running``: the relid of database b's vacuum, which
    every database's snapshot lists (pg_stat_progress_vacuum is the cluster's)."""
    vacuums = () if running is None else (autovacuum(running).model_copy(update={"database": "b"}),)
    found = snapshot(*tables, vacuums=vacuums)
    return found.model_copy(update={"server": server().model_copy(update={"database": name})})


def views() -> list[LiveView]:
    """Database a: two due, one near its threshold, one quiet and old; database b: one being
    vacuumed, one due, one nearer its threshold than a's is."""
    a = of_database(
        "a",
        table(10, "due_a1", n_dead_tup=2000),
        table(20, "due_a2", n_dead_tup=1000),
        table(30, "quiet_a", frozenxid_age=5_000),
        table(40, "near_a", n_dead_tup=240),
        running=15,
    )
    b = of_database(
        "b",
        table(5, "due_b1", n_dead_tup=300),
        table(15, "running_b", n_dead_tup=400),
        table(25, "near_b", n_dead_tup=245, frozenxid_age=9_000),
        running=15,
    )
    return [live_view(None, s, named=True) for s in (a, b)]


def test_the_server_ranks_each_databases_first_in_turn_and_caps_the_whole() -> None:
    a, b = views()
    assert [t.label for t in a.tables] == [
        "a:public.due_a1", "a:public.due_a2", "a:public.near_a", "a:public.quiet_a"
    ]  # fmt: skip
    view = merged([a, b], home="a", unread={}, limit=6)
    # Being vacuumed; then due, a database's first before any's second; then the nearest.
    assert [t.label for t in view.tables] == [
        "b:public.running_b",
        "a:public.due_a1",
        "b:public.due_b1",
        "a:public.due_a2",
        "b:public.near_b",
        "a:public.near_a",
    ]
    whole = merged([a, b], home="a", unread={})
    assert whole.tables[:6] == view.tables
    assert len(whole.tables) == 7
    # The counts are the sums; each database's are kept.
    assert (view.relations, view.due) == (7, 3)
    assert view.dead_tuples == a.dead_tuples + b.dead_tuples == 2000 + 1000 + 240 + 300 + 645
    assert [(d.database, d.dead_tuples) for d in view.databases] == [("a", 3240), ("b", 945)]
    # What the cluster shares, once: b's vacuum as b's view tells it, the oldest relation.
    [vacuum] = view.vacuums
    assert vacuum.relation == "b:public.running_b"
    assert vacuum.eta_s is not None  # only its own database's view can tell the time left
    xid = next(w for w in view.wraparound if w.counter == "xid")
    assert (xid.table, xid.table_age) == ("b:public.near_b", 9_000)


def test_one_databases_view_is_as_before() -> None:
    a, _ = views()
    plain = live_view(None, snapshot(table(10, "due_a1", n_dead_tup=2000)))
    assert plain.databases == []
    assert plain.unread == {}
    assert [t.label for t in plain.tables] == ["public.due_a1"]
    assert plain.tables[0].database is None
    # Naming the database changes the row's name only.
    assert a.tables[0].model_copy(update={"database": None}) == plain.tables[0]


# -- on the embedded PostgreSQL -----------------------------------------------------------------


@pytest.fixture(scope="module")
def databases(sandbox: Sandbox) -> Iterator[Databases]:
    with three_databases(sandbox.dsn, "vl_wdb") as found:
        yield found


def test_every_database_is_read_and_a_refused_one_is_a_note(databases: Databases) -> None:
    db = databases
    source = ServerSource(db.dsn(db.quiet, monitor=True))
    try:
        first, second = source.refresh(), source.refresh()
    finally:
        source.close()
    assert first.error is None
    assert second.error is None
    view = second.view
    assert view is not None
    assert {db.busy, db.quiet} <= {d.database for d in view.databases}
    assert list(view.unread) == [db.locked]
    note = view.unread[db.locked]
    assert "permission denied for database" in note.reason
    assert note.fix == f'GRANT CONNECT ON DATABASE "{db.locked}" TO "{db.role}";'
    # Ranked together, labelled with their database: the busy table, past its threshold,
    # before every other relation of the two databases.
    mine = [t.label for t in view.tables if t.database in (db.busy, db.quiet)]
    assert mine[0] == f"{db.busy}:public.forgotten"
    assert {f"{db.quiet}:public.quiet_{i}" for i in range(4)} <= set(mine)
    assert len(mine) == 8
    # The second refresh has each database's previous one: rates.
    assert view.interval_s is not None
    forgotten = next(t for t in view.tables if t.label == f"{db.busy}:public.forgotten")
    assert forgotten.dead == 2000
    assert forgotten.dead_per_second == 0
    # The details come from the relation's own database's snapshot.
    snap = second.snapshot_of(db.busy)
    assert snap is not None
    assert second.snapshot is None
    found = detail(snap, forgotten.oid)
    assert found is not None
    assert found.label == "public.forgotten"
    busy = next(d for d in view.databases if d.database == db.busy)
    assert (busy.dead_tuples, busy.past_threshold.vacuum) == (BUSY_DEAD, 1)


def test_one_database_is_watched_as_before(databases: Databases) -> None:
    source = Source(databases.dsn(databases.busy, monitor=True))
    try:
        view = source.refresh().view
    finally:
        source.close()
    assert view is not None
    assert view.databases == []
    assert view.unread == {}
    assert view.tables[0].label == "public.forgotten"


def test_record_is_refused_with_all_databases(databases: Databases) -> None:
    result = run_cli("watch", databases.dsn(databases.quiet), "--all-databases", "--record")
    assert_one_line_error(result, "--record keeps one database's refreshes")


def test_the_screen_ranks_every_database_and_notes_the_refused_one(databases: Databases) -> None:
    db = databases
    busy = f"{db.busy}:public.forgotten"
    with watching(db.dsn(db.quiet, monitor=True), "--all-databases", "--refresh", "1") as term:
        screen = term.wait(lambda s: busy in queue_rows(s))
        status = screen.splitlines()[0]
        assert "databases (1 not read)" in status
        assert f"not read: {db.locked}" in screen
        assert f'GRANT CONNECT ON DATABASE "{db.locked}" TO "{db.role}";' in screen
        assert screen.count(f"not read: {db.locked}") == 1
        rows = queue_rows(screen)
        assert rows.index(busy) < min(rows.index(f"{db.quiet}:public.quiet_{i}") for i in range(4))

        term.keys("/", *db.busy[-12:], "Enter")  # the filter matches the database's name
        screen = term.wait(lambda s: set(queue_rows(s)) == {busy} | busy_tables(db))
        term.keys("Enter")
        detail_screen = term.wait_for("Thresholds")
        assert busy in detail_screen
        assert "2,000 dead" in detail_screen
        term.keys("Escape", "q")
        term.wait_for("EXIT 0", timeout=10)


def busy_tables(db: Databases) -> set[str]:
    return {f"{db.busy}:public.busy_{i}" for i in range(3)}
