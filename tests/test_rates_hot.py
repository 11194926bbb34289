"""Rates of a table whose updates are HOT, across a vacuum: every HOT update adds one to
n_dead_tup and on-access pruning takes it back (pgstat_update_heap_dead_tuples() from
heap_page_prune_and_freeze()), so a few seconds after a vacuum n_dead_tup stands at the
versions pruning has yet to reach and stays there: a level, no rate."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import psycopg
from psycopg import sql

from helpers.advise import T0, changed, relation
from helpers.db import execute, wait_for_counts
from vacuumlab.collect.snapshot import collect
from vacuumlab.model import rates
from vacuumlab.pg.connect import connect
from vacuumlab.records.snapshot import Relation, Snapshot

LATER = T0 + timedelta(seconds=60)


def test_the_pruning_backlog_of_a_hot_only_table_is_no_rate_after_a_vacuum() -> None:
    """10,000 updates in 60 s, all HOT; a vacuum ended 5 s before the later snapshot and
    n_dead_tup is back at 150, one a page as before it: 0/s, not 150 / 5 s = 30/s."""
    before = relation(1, "t", n_dead_tup=150, n_tup_upd=0, n_tup_hot_upd=0, autovacuum_count=1)
    after = changed(
        before, n_dead_tup=150, n_tup_upd=10_000, n_tup_hot_upd=10_000, autovacuum_count=2,
        last_autovacuum=LATER - timedelta(seconds=5),
    )  # fmt: skip
    found = rates.between(before, after, 60.0, LATER)
    assert found is not None
    assert found.dead_per_second == 0.0
    assert found.dead_source == "n_dead_tup since the vacuum in between, its non-HOT share"


def test_only_the_non_hot_share_of_the_count_since_a_vacuum_is_a_rate() -> None:
    """Half the updates HOT: of 1,200 counted in the 4 s since the vacuum, 600 are the
    non-HOT updates' (150/s, above the interval's 6,000 / 60 s = 100/s)."""
    before = relation(1, "t", n_tup_upd=0, n_tup_hot_upd=0, autovacuum_count=1)
    after = changed(
        before, n_dead_tup=1_200, n_tup_upd=12_000, n_tup_hot_upd=6_000, autovacuum_count=2,
        last_autovacuum=LATER - timedelta(seconds=4),
    )  # fmt: skip
    found = rates.between(before, after, 60.0, LATER)
    assert found is not None
    assert found.dead_per_second == 150.0
    assert found.dead_source == "n_dead_tup since the vacuum in between, its non-HOT share"


def _updates(dsn: str, table: str, rows: int, seconds: float) -> int:
    """One session updating a column no index covers, one random row a transaction."""
    statement = sql.SQL("UPDATE {} SET hits = hits + 1 WHERE id = %s").format(sql.Identifier(table))
    done = 0
    deadline = time.monotonic() + seconds
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            conn.execute(statement, ((done * 7919) % rows + 1,))
            done += 1
    return done


def _snapshot(dsn: str) -> Snapshot:
    with connect(dsn, application_name="vacuumlab-test") as session:
        return collect(session)


def _table(snapshot: Snapshot, name: str) -> Relation:
    return next(t.heap for t in snapshot.tables if t.heap.name == name)


def test_a_hot_only_table_on_the_server_shows_no_dead_tuple_rate_across_a_vacuum(
    embedded_database: str,
) -> None:
    """On the embedded server: a table at fillfactor 50 whose updates are all HOT plateaus at
    about one unpruned version a page, and after a VACUUM returns to it within a second or
    two; read across the vacuum, its dead-tuple rate is 0."""
    dsn, name, rows = embedded_database, "hot_only", 2_000
    execute(
        dsn,
        f"CREATE TABLE {name} (id int PRIMARY KEY, v int NOT NULL, hits int NOT NULL DEFAULT 0,"
        " pad text) WITH (fillfactor = 50, autovacuum_enabled = off)",
        f"CREATE INDEX ON {name} (v)",
        f"INSERT INTO {name} (id, v, pad) SELECT g, g, repeat('x', 80) FROM "
        f"generate_series(1, {rows}) g",
        f"VACUUM (ANALYZE) {name}",
    )
    _updates(dsn, name, rows, 2.0)
    time.sleep(1.2)  # the backends' counts reach shared memory at most once a second
    first = _snapshot(dsn)
    done = _updates(dsn, name, rows, 2.0)
    execute(dsn, f"VACUUM {name}")
    done += _updates(dsn, name, rows, 3.0)
    wait_for_counts(dsn, name, "n_tup_upd", (_table(first, name).n_tup_upd or 0) + done)
    second = _snapshot(dsn)
    before, after = _table(first, name), _table(second, name)
    updated = (after.n_tup_upd or 0) - (before.n_tup_upd or 0)
    assert updated == (after.n_tup_hot_upd or 0) - (before.n_tup_hot_upd or 0) == done
    assert after.vacuum_count == (before.vacuum_count or 0) + 1
    # The backlog: some hundreds on about 63 pages, where thousands were updated since the
    # vacuum (3 s of one session).
    assert (after.n_dead_tup or 0) < updated / 4
    seconds = (second.taken_at - first.taken_at).total_seconds()
    found = rates.between(before, after, seconds, second.taken_at)
    assert found is not None
    assert found.dead_per_second == 0.0


def test_a_vacuum_leaves_a_count_of_what_died_after_it_not_while_it_ran(
    embedded_database: str,
) -> None:
    """On the embedded server: a throttled VACUUM of a table whose rows keep being updated
    (non-HOT) for the seconds it runs. When it ends, n_dead_tup holds the updates the backend
    flushed after its report, at most about a second of them, not a share of those made
    while it ran: it pruned them with a horizon that moves (14+), and its report overwrote
    what the backends counted meanwhile. The simulator's dead_after_vacuum() rests on this."""
    dsn, name, rows = embedded_database, "churned", 40_000
    execute(
        dsn,
        f"CREATE TABLE {name} (id int PRIMARY KEY, v int NOT NULL, pad text) "
        "WITH (autovacuum_enabled = off)",
        f"CREATE INDEX ON {name} (v)",
        f"INSERT INTO {name} SELECT g, g, repeat('x', 80) FROM generate_series(1, {rows}) g",
        f"VACUUM (ANALYZE) {name}",
    )
    statement = sql.SQL("UPDATE {} SET v = v + 1 WHERE id = %s").format(sql.Identifier(name))
    done = [0]
    stop = threading.Event()

    def churn() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not stop.is_set():
                conn.execute(statement, ((done[0] * 7919) % rows + 1,))
                done[0] += 1

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        time.sleep(0.5)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SET vacuum_cost_limit = 3")
            conn.execute("SET vacuum_cost_delay = '10ms'")
            began, started = done[0], time.monotonic()
            conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(name)))
            during, seconds = done[0] - began, time.monotonic() - started
    finally:
        stop.set()
        worker.join()
    time.sleep(1.2)  # the updater's last counts reach shared memory
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_stat_get_dead_tuples(%s::regclass)", (name,)).fetchone()
    assert row is not None
    assert seconds > 5, "the vacuum must run long enough for updates to come during it"
    assert during > 1000
    rate = during / seconds
    # The backends flush their counts at most once a second (PGSTAT_MIN_INTERVAL): what
    # they had not flushed at the report is about a second of the updates (1.54 s of them
    # once, on a machine busy with the whole test suite: the rate is the vacuum's average).
    assert row[0] < 2 * rate, (row[0], during, seconds)
    # Half of those made during it, what the model held before (COUNTED_DURING), is more.
    assert row[0] < 0.5 * during, (row[0], during, seconds)
