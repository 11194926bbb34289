"""Refreshes of a real server: a vacuum made slow by its cost settings shows in the view, with
its progress rising between two refreshes and the time the cost model leaves it coming true."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import psycopg
from psycopg import errors, sql
from psycopg.conninfo import conninfo_to_dict

from helpers.db import execute
from vacuumlab.records.live import LiveView, RunningVacuum
from vacuumlab.watch.source import Source

#: About 590 heap pages, half their tuples dead; autovacuum off so only our VACUUM runs.
BIG = (
    "CREATE TABLE big (id int PRIMARY KEY, pad text) WITH (autovacuum_enabled = off)",
    "INSERT INTO big SELECT i, repeat('x', 200) FROM generate_series(1, 20000) i",
    "DELETE FROM big WHERE id % 2 = 0",
)


@contextmanager
def slow_vacuum(dsn: str) -> Iterator[threading.Thread]:
    """VACUUM big in the background at 10 cost units per 10 ms (about 3 s in all); cancelled
    on the way out if it has not ended. Yields its thread."""
    name = conninfo_to_dict(dsn)["dbname"]
    execute(
        dsn,
        sql.SQL("ALTER DATABASE {} SET vacuum_cost_delay = 10").format(sql.Identifier(name)),
        sql.SQL("ALTER DATABASE {} SET vacuum_cost_limit = 10").format(sql.Identifier(name)),
    )

    def run() -> None:
        with (
            psycopg.connect(dsn, autocommit=True, application_name="vl-slow-vacuum") as conn,
            suppress(errors.QueryCanceled),
        ):
            conn.execute("VACUUM big")

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield thread
    finally:
        execute(
            dsn,
            "SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'vl-slow-vacuum'",
        )
        thread.join()


def running(source: Source) -> tuple[LiveView, RunningVacuum]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        view = source.refresh().view
        assert view is not None
        if view.vacuums and view.vacuums[0].heap_blks_scanned > 0:
            return view, view.vacuums[0]
        time.sleep(0.2)
    raise AssertionError("the vacuum never showed")


def test_a_slow_vacuum_shows_and_advances(embedded_database: str) -> None:
    execute(embedded_database, *BIG)
    source = Source(embedded_database)
    try:
        with slow_vacuum(embedded_database) as vacuum:
            _, first = running(source)
            first_seen = time.monotonic()
            time.sleep(1.0)
            view, second = running(source)
            second_seen = time.monotonic()
            vacuum.join(timeout=120)
            ended = time.monotonic()
    finally:
        source.close()
    assert first.relation == "public.big"
    assert not first.is_autovacuum
    assert first.heap_blks_total >= 550
    assert second.heap_blks_scanned > first.heap_blks_scanned
    assert first.eta_s is not None
    assert second.eta_s is not None
    assert 0 < second.eta_s < first.eta_s
    # The cost model, scaled by what the vacuum really slept so far, says when it ends: within
    # a factor of two (the machine may be busy), from both sightings.
    for eta, seen in ((first.eta_s, first_seen), (second.eta_s, second_seen)):
        assert eta / 2 - 0.2 < ended - seen < 2 * eta + 0.5
    assert second.elapsed_s is not None
    assert second.elapsed_s >= 1.0
    assert second.dead_items_share is not None
    assert 0 <= second.dead_items_share < 1
    assert second.delay_s is not None  # 18, track_cost_delay_timing on in the sandbox
    assert second.delay_s > 0
    big = next(t for t in view.tables if t.table == "big")
    assert big.dead == 10_000
    assert big.running
    assert view.tables[0] is big  # being vacuumed: first in the queue
