"""Who holds the horizon, decided once (model/horizon.py) for the advisor and the live view:
a lazy VACUUM (an autovacuum worker's or a manual one) holds nobody back; VACUUM FULL and an
autovacuum worker's ANALYZE do. Records built here; the collection on a real server below."""

from __future__ import annotations

import threading
from contextlib import suppress
from datetime import timedelta

import psycopg
import pytest

from helpers.advise import T0, context, relation, snapshot
from vacuumlab.advise import advise, horizon
from vacuumlab.collect.snapshot import collect
from vacuumlab.model import horizon as hm
from vacuumlab.pg.connect import connect
from vacuumlab.records.snapshot import Backend, Snapshot, Table, VacuumProgress
from vacuumlab.report.snapshot.text import horizon_tables
from vacuumlab.watch import cluster

LONG_AGO = T0 - timedelta(hours=2)


def worker(pid: int, **fields: object) -> Backend:
    """A backend that has held one horizon for two hours: long past any vacuum cycle."""
    values: dict[str, object] = {
        "pid": pid,
        "backend_type": "autovacuum worker",
        "database": "app",
        "user_name": "postgres",
        "application_name": "",
        "state": "active",
        "backend_xid": None,
        "backend_xmin": 100,
        "xmin_age": 50_000_000,
        "xact_start": LONG_AGO,
        "query_start": LONG_AGO,
        "state_change": LONG_AGO,
        "wait_event": "Timeout:VacuumDelay",
        "query": "autovacuum: VACUUM public.big (to prevent wraparound)",
    }
    return Backend.model_validate(values | fields)


def progress(pid: int) -> VacuumProgress:
    return VacuumProgress(pid=pid, database="app", relid=1, relation="public.big",
                          is_autovacuum=True, phase="scanning heap", started=LONG_AGO,
                          heap_blks_total=100, heap_blks_scanned=10, heap_blks_vacuumed=0,
                          index_vacuum_count=0, dead_tuples=0, indexes_total=0,
                          indexes_processed=0, delay_time_ms=None)  # fmt: skip


def across(*backends: Backend, vacuums: tuple[VacuumProgress, ...] = ()) -> tuple[Snapshot, ...]:
    """Two snapshots 30 s apart, a table with dead tuples, ``backends`` in both."""
    vacuumed = T0 - timedelta(seconds=20)
    heap = relation(1, "t", reltuples=1000, n_dead_tup=5000, last_autovacuum=vacuumed)
    dirty = Table(heap=heap, toast=None)
    first = snapshot(dirty, vacuums=vacuums).model_copy(update={"backends": list(backends)})
    return first, first.model_copy(update={"taken_at": T0 + timedelta(seconds=30)})


@pytest.mark.parametrize(
    "running",
    [
        pytest.param(worker(7, in_lazy_vacuum=True), id="anti-wraparound autovacuum"),
        pytest.param(
            worker(7, backend_type="client backend", query="VACUUM big", in_lazy_vacuum=True),
            id="manual VACUUM",
        ),
    ],
)
def test_a_running_lazy_vacuum_holds_nothing(running: Backend) -> None:
    """It shows a backend_xmin for hours, in both snapshots: no horizon finding, no
    pg_terminate_backend, no dead tuples blamed on it, and the live view lists no holder."""
    first, second = across(running)
    ctx = context(first, second)
    assert horizon.findings(ctx) == []
    assert not horizon.held(ctx)
    everything = " ".join(f.title + f.detail for f in advise(first, second).findings)
    assert "pg_terminate_backend" not in everything
    assert "xmin horizon keeps" not in everything
    assert cluster.holders(second) == []
    assert list(horizon_tables(second)) == []  # `vacuumlab snapshot` lists none


def test_a_snapshot_saved_before_the_flag_falls_back_on_the_progress_view() -> None:
    """in_lazy_vacuum absent (None): the pids of pg_stat_progress_vacuum decide."""
    first, second = across(worker(7), vacuums=(progress(7),))
    assert horizon.findings(context(first, second)) == []
    unknown, _ = across(worker(7))
    assert [b.pid for b in hm.holding(unknown).backends] == [7]


def test_vacuum_full_holds_and_is_cancelled_not_terminated() -> None:
    full = worker(8, backend_type="client backend", query="VACUUM FULL big",
                  in_lazy_vacuum=False, rewriting="VACUUM FULL")  # fmt: skip
    first, second = across(full)
    [found] = horizon.findings(context(first, second))
    assert found.severity == "critical"
    assert found.evidence["kind"] == hm.REWRITE
    assert "pg_cancel_backend(8)" in found.detail
    assert "pg_terminate_backend" not in found.detail
    assert horizon.held(context(first, second))


def test_an_autovacuum_analyze_holds_and_ends_by_itself() -> None:
    analyze = worker(9, query="autovacuum: ANALYZE public.big", in_lazy_vacuum=False)
    first, second = across(analyze)
    [found] = horizon.findings(context(first, second))
    assert found.evidence["kind"] == hm.ANALYZE
    assert "ends by itself" in found.detail
    assert "pg_terminate_backend" not in found.detail
    assert [h.kind for h in cluster.holders(second)] == [hm.ANALYZE]


def test_a_manual_vacuum_is_collected_as_in_lazy_vacuum(embedded_database: str) -> None:
    """On the server: a VACUUM throttled to crawl shows a backend_xmin in pg_stat_activity,
    and the snapshot marks it in_lazy_vacuum, so nothing takes it for a holder."""
    dsn = embedded_database
    with psycopg.connect(dsn, autocommit=True) as setup:
        setup.execute("CREATE TABLE crawl AS SELECT g AS id FROM generate_series(1, 300000) g")
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("SET vacuum_cost_delay = 100")
    conn.execute("SET vacuum_cost_limit = 1")
    pid = conn.info.backend_pid

    def crawl() -> None:
        with suppress(psycopg.errors.QueryCanceled):
            conn.execute("VACUUM crawl")

    thread = threading.Thread(target=crawl)
    thread.start()
    try:
        with connect(dsn) as session:
            for _ in range(100):
                snap = collect(session)
                mine = [b for b in snap.backends if b.pid == pid]
                if mine and mine[0].in_lazy_vacuum:
                    break
        assert mine, snap.backends
        assert mine[0].in_lazy_vacuum
        assert mine[0].backend_xmin is not None  # the row that used to be taken for a holder
        assert pid not in [b.pid for b in hm.holding(snap).backends]
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_cancel_backend(%s)", (pid,))
        thread.join()
        conn.close()
