"""The live view on records built here: the queue's order, the predicted starts, a running
vacuum's time left, the last vacuum's length, holders, wraparound and the metric families."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client.samples import Sample

from helpers.advise import PG18, T0, autovacuum, changed, relation, snapshot, toast_of
from helpers.db import execute, wait_for_counts, xmin_holder
from vacuumlab.model import time_left
from vacuumlab.model.simulator import PAGE_S
from vacuumlab.model.thresholds import of_tables, server_settings
from vacuumlab.records.live import LiveView
from vacuumlab.records.snapshot import (
    AutovacuumWorker,
    Backend,
    Database,
    Relation,
    Snapshot,
    Table,
)
from vacuumlab.watch import cluster
from vacuumlab.watch.metrics import Scrape, families
from vacuumlab.watch.source import Source
from vacuumlab.watch.view import Pick, live_view, row_key

DASHBOARD = Path(__file__).parent.parent / "docs" / "grafana-dashboard.json"
#: 1,000 tuples on 10 pages: vacuum threshold 50 + 0.2 × 1,000 = 250 dead tuples.
SIZED = {"reltuples": 1000.0, "relpages": 10, "n_live_tup": 1000}


def table(oid: int, name: str, **fields: object) -> Table:
    return Table(heap=relation(oid, name, **(SIZED | fields)), toast=None)


def later(t: Table, **fields: object) -> Table:
    return Table(heap=changed(t.heap, **fields), toast=t.toast)


def fleet() -> tuple[Snapshot, Snapshot]:
    """Eight relations, a minute apart: one being vacuumed, three due (one a TOAST relation,
    whose oid is the lowest), two gathering dead tuples at different rates, two quiet."""
    quiet_near, quiet_far = table(40, "quiet_near", n_dead_tup=150), table(30, "quiet_far")
    fast, slow = table(60, "fast"), table(50, "slow")
    owner = relation(80, "owner", **SIZED)
    toast = toast_of(owner, 5, **SIZED, n_dead_tup=900)
    due_high, due_low, running = table(100, "due_high"), table(90, "due_low"), table(70, "busy")
    first = [running, due_high, due_low, Table(heap=owner, toast=toast), fast, slow]
    first += [quiet_near, quiet_far]
    now = [
        later(running, n_dead_tup=600),
        later(due_high, n_dead_tup=2000),
        later(due_low, n_dead_tup=300),
        Table(heap=owner, toast=toast),
        later(fast, n_dead_tup=130),  # 130 a minute: 250 passed 55 s on
        later(slow, n_dead_tup=10),  # 10 a minute: reached 24 minutes on
        quiet_near,
        quiet_far,
    ]
    return snapshot(*first), snapshot(*now, seconds=60, vacuums=(autovacuum(70),))


def names(view: LiveView) -> list[str]:
    return [t.label for t in view.tables]


def test_queue_is_in_the_order_autovacuum_takes_the_relations() -> None:
    view = live_view(*fleet())
    assert names(view) == [
        "public.busy",  # a worker is on it
        "public.due_low",  # due: heaps by oid ...
        "public.due_high",
        "public.owner (TOAST)",  # ... then TOAST relations, whatever their oid
        "public.fast",  # then by predicted start
        "public.slow",
        "public.quiet_near",  # then the nearest to a threshold
        "public.quiet_far",
        "public.owner",
    ]


def test_predicted_starts_follow_the_rates_and_the_launcher() -> None:
    view = live_view(*fleet())
    start = {t.label: t.predicted_start_s for t in view.tables}
    assert start["public.busy"] == 0.0
    # Due now: the launcher's first visit, half a naptime in on average.
    assert start["public.due_low"] == pytest.approx(30.0, abs=1.0)
    # Past its threshold 55 s on; the launcher comes next at 90 s (30 s, then every naptime).
    assert start["public.fast"] == pytest.approx(90.0, abs=1.0)
    slow = start["public.slow"]
    assert slow is not None
    assert 24 * 60 <= slow <= 25 * 60 + 1
    assert start["public.quiet_near"] is None
    assert {t.label: t.dead_per_second for t in view.tables}["public.fast"] == pytest.approx(
        130 / 60
    )


def test_one_snapshot_gives_no_rates_and_no_starts_but_the_same_head() -> None:
    _, now = fleet()
    view = live_view(None, now)
    assert names(view)[:4] == names(live_view(*fleet()))[:4]
    assert all(t.dead_per_second is None for t in view.tables)
    assert {t.predicted_start_s for t in view.tables} == {None, 0.0}
    # Without starts, the nearest to a threshold come first.
    assert names(view)[4] == "public.quiet_near"


def test_progress_is_the_models() -> None:
    view = live_view(*fleet())
    due_high = next(t for t in view.tables if t.table == "due_high")
    assert due_high.vacuum_threshold == 250
    assert due_high.vacuum_progress == pytest.approx(2000 / 250)
    assert due_high.insert_threshold == 1000 + 0.2 * 1000
    assert due_high.due
    assert not due_high.running


def scan(rel: Relation, scanned: int, **fields: object) -> Snapshot:
    v = autovacuum(rel.oid).model_copy(
        update={"heap_blks_total": 1000, "heap_blks_scanned": scanned} | fields
    )
    return snapshot(Table(heap=rel, toast=None), vacuums=(v,))


def test_eta_is_the_cost_models_sleep_for_the_pages_left() -> None:
    rel = relation(10, "big", reltuples=100_000.0, relpages=1000)
    half = live_view(None, scan(rel, 500)).vacuums[0]
    # 500 pages left, each hit and dirtied (1 + 20) under a limit of 200 per 2 ms.
    assert half.eta_s == pytest.approx(500 * PAGE_S + 500 * 21 / 200 * 0.002)
    quarter = live_view(None, scan(rel, 750)).vacuums[0]
    assert quarter.eta_s == pytest.approx(half.eta_s / 2)
    assert half.scanned_share == 0.5
    assert half.relation == "public.big"
    assert half.elapsed_s == 0.0


def test_eta_counts_the_index_pass_still_to_come_and_the_workers_sharing() -> None:
    rel = relation(
        10, "big", reltuples=100_000.0, relpages=1000, n_dead_tup=50_000, n_indexes=1,
        index_bytes=200 * 8192,
    )  # fmt: skip
    v = autovacuum(10).model_copy(update={"heap_blks_total": 1000, "heap_blks_scanned": 1000})
    other = autovacuum(99)
    alone = live_view(None, snapshot(Table(heap=rel, toast=None), vacuums=(v,))).vacuums[0]
    # The heap is scanned; the index pass (200 pages, read and dirtied) is still to come, then
    # the second visit of the 1,000 heap pages holding dead items (a hit each, and one for its
    # free space map page).
    index, second = 200 * 21, 1000 * 2
    assert alone.eta_s == pytest.approx(1200 * PAGE_S + (index + second) / 200 * 0.002)
    shared = live_view(None, snapshot(Table(heap=rel, toast=None), vacuums=(v, other)))
    assert shared.workers.sharing == 2
    assert shared.vacuums[0].eta_s == pytest.approx(1200 * PAGE_S + (index + second) / 100 * 0.002)
    assert shared.workers.cost_limit_each == 100


def test_eta_scales_the_sleep_by_what_the_vacuum_really_slept() -> None:
    rel = relation(10, "big", reltuples=100_000.0, relpages=1000)
    # The model expects 500 pages × 21 / 200 × 2 ms = 105 ms asleep so far; 18 says 5 ms: the
    # pages were dirty already. The 500 pages ahead should sleep as little.
    eta = live_view(None, scan(rel, 500, delay_time_ms=5.0)).vacuums[0].eta_s
    assert eta == pytest.approx(500 * PAGE_S + 0.005)


def test_last_vacuum_length_from_the_vacuum_times_of_18() -> None:
    ended = T0 + timedelta(seconds=50)
    before = relation(
        10, "t", autovacuum_count=1, total_autovacuum_time_ms=1000.0, last_autovacuum=T0
    )
    after = changed(
        before, autovacuum_count=2, total_autovacuum_time_ms=4000.0, last_autovacuum=ended
    )
    assert time_left.last_duration(after, before) == 3.0
    assert time_left.last_duration(before) == 1.0  # the only vacuum so far
    assert time_left.last_duration(after, after) is None  # none ended in between


def test_last_vacuum_length_from_a_vacuum_seen_running() -> None:
    before = relation(10, "t", total_autovacuum_time_ms=None)
    after = changed(before, last_autovacuum=T0 + timedelta(seconds=42), autovacuum_count=1)
    assert time_left.last_duration(after, before, autovacuum(10)) == 42.0
    first = snapshot(Table(heap=before, toast=None), vacuums=(autovacuum(10),), version=170000)
    now = snapshot(Table(heap=after, toast=None), seconds=60, version=170000)
    assert live_view(first, now).tables[0].last_vacuum_s == 42.0
    # A later refresh that no longer sees it keeps what an earlier one learnt.
    assert live_view(now, now, durations={10: 42.0}).tables[0].last_vacuum_s == 42.0


def backend(pid: int, database: str, **fields: object) -> Backend:
    values = {
        "pid": pid, "backend_type": "client backend", "database": database, "user_name": "app",
        "application_name": None, "state": "active", "backend_xid": None, "backend_xmin": 1,
        "xmin_age": 10, "xact_start": T0 - timedelta(seconds=30), "query_start": T0,
        "state_change": T0,
        "wait_event": None, "query": None,
    }  # fmt: skip
    return Backend.model_validate(values | fields)


def test_holders_oldest_first_without_vacuums() -> None:
    now = snapshot(vacuums=(autovacuum(70),)).model_copy(
        update={
            "backends": [
                backend(1, "app", xmin_age=100, state="idle in transaction"),
                backend(2, "other", xmin_age=500),
                backend(10_070, "app", xmin_age=900),  # the worker: PROC_IN_VACUUM
                # A busy client mid-transaction, begun just now: not a holder worth a row.
                backend(3, "app", xmin_age=2_000, xact_start=T0 - timedelta(seconds=0.2)),
            ]
        }
    )
    view = live_view(None, now)
    assert [(h.name, h.holds_here) for h in view.holders] == [("pid 2", False), ("pid 1", True)]
    oldest = view.oldest_holder()
    assert oldest is not None
    assert oldest.kind == "idle in transaction"


def test_wraparound_against_the_limits() -> None:
    rel = relation(10, "old", frozenxid_age=150_000_000)
    dbs = [
        Database(name="app", frozenxid_age=160_000_000, minmxid_age=5, allow_connections=True),
        Database(name="b", frozenxid_age=20, minmxid_age=7, allow_connections=True),
    ]
    now = snapshot(Table(heap=rel, toast=None)).model_copy(update={"databases": dbs})
    xid, mxid = live_view(None, now).wraparound
    assert (xid.age, xid.database, xid.forcing_age) == (160_000_000, "app", 200_000_000)
    assert xid.failsafe_age == 1_600_000_000  # vacuum_failsafe_age's default
    assert (xid.table, xid.table_age) == ("public.old", 150_000_000)
    assert xid.share == pytest.approx(0.8)
    assert (mxid.age, mxid.database) == (7, "b")


def test_metric_families_are_named_helped_and_bounded() -> None:
    view = live_view(*fleet(), pick=Pick(limit=3))
    found = list(families(view, Scrape(True, 0.1, 13, 0)))
    assert all(f.name.startswith("vacuumlab_") and f.documentation for f in found)
    by_name = {f.name: f for f in found}
    dead = by_name["vacuumlab_table_dead_tuples"]
    assert [s.labels["table"] for s in dead.samples] == ["busy", "due_low", "due_high"]
    assert by_name["vacuumlab_relations_exported"].samples[0].value == 3
    assert by_name["vacuumlab_relations"].samples[0].value == 9
    assert by_name["vacuumlab_relations_due"].samples[0].value == 3  # busy has a worker
    public = table_samples(live_view(*fleet(), pick=Pick(schemas=frozenset({"public"}))))
    assert {s.labels["kind"] for s in public} == {"heap", "toast"}
    assert len(public) == 9
    assert table_samples(live_view(*fleet(), pick=Pick(schemas=frozenset({"elsewhere"})))) == []


def test_picked_rows_are_the_head_of_the_whole_queue() -> None:
    whole = live_view(*fleet())
    head = live_view(*fleet(), pick=Pick(limit=5))
    assert names(head) == names(whole)[:5]
    assert head.tables == whole.tables[:5]
    assert [row_key(t) for t in whole.tables] == sorted(row_key(t) for t in whole.tables)


def table_samples(view: LiveView) -> list[Sample]:
    return [
        s
        for f in families(view, Scrape(True, 0.1, 13, 0))
        if f.name == "vacuumlab_table_dead_tuples"
        for s in f.samples
    ]


def test_a_failed_scrape_exports_only_up_0() -> None:
    found = list(families(None, Scrape(False, 0.2, 0, 3)))
    values = {f.name: f.samples[0].value for f in found}
    assert values == {
        "vacuumlab_up": 0,
        "vacuumlab_scrape_duration_seconds": 0.2,
        "vacuumlab_scrape_statements": 0,
        "vacuumlab_scrape_errors": 3,
    }


def test_the_grafana_dashboard_uses_only_exported_metrics() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    used = {name for e in exprs for name in re.findall(r"vacuumlab_[a-z_]+", e)}
    view = live_view(*fleet())
    found = list(families(view, Scrape(True, 0.1, 13, 0)))
    exported = {f.name for f in found} | {s.name for f in found for s in f.samples}
    assert used
    assert used <= exported, used - exported


def test_the_head_of_a_real_queue_is_the_whole_queues_and_the_models(
    embedded_database: str,
) -> None:
    """On a real server's snapshots, with tables past, at and near their thresholds (reloptions,
    a TOAST relation's own, autovacuum off, a second schema) and some gathering dead tuples:
    the rows a pick's limit keeps are the head of the whole queue, the queue is in row_key
    order, and each row says what the model's full thresholds say of its relation. The view
    ranks every relation with standings() and builds thresholds for the rows only."""
    db = embedded_database
    made: list[str] = ["CREATE SCHEMA other"]
    for i in range(20):
        options = {5: "autovacuum_vacuum_scale_factor = 0.04", 9: "autovacuum_enabled = off"}
        schema = "other" if i % 7 == 3 else "public"
        made.append(
            f"CREATE TABLE {schema}.q{i} (id int PRIMARY KEY, body text)"
            + (f" WITH ({options[i]})" if i in options else "")
        )
        made.append(f"INSERT INTO {schema}.q{i} SELECT g, 'x' FROM generate_series(1, 1000) g")
    made += [
        "CREATE TABLE big (id int PRIMARY KEY, body text) "
        "WITH (toast.autovacuum_vacuum_threshold = 0, toast.autovacuum_vacuum_scale_factor = 0)",
        "ALTER TABLE big ALTER body SET STORAGE EXTERNAL",
        "INSERT INTO big SELECT g, repeat('y', 3000) FROM generate_series(1, 50) g",
        "ANALYZE",
    ]
    execute(db, *made)
    source = Source(db)
    with xmin_holder(db):  # nothing deleted below can be removed: the counts stay
        deletes = [
            f"DELETE FROM {'other' if i % 7 == 3 else 'public'}.q{i} WHERE id <= {i * 20}"
            for i in range(20)
        ]
        execute(db, *deletes, "DELETE FROM big WHERE id <= 10")
        wait_for_counts(db, "q19", "n_dead_tup", 380)
        first = source.take(source.open())
        execute(db, "DELETE FROM q8 WHERE id > 990", "DELETE FROM q12 WHERE id > 995")
        wait_for_counts(db, "q12", "n_dead_tup", 245)
        second = source.take(source.open())
    source.close()

    whole = live_view(first, second)
    rows = whole.tables
    for limit in (0, 1, 4, 9, len(rows), len(rows) + 3):
        assert live_view(first, second, pick=Pick(limit=limit)).tables == rows[:limit]
    other = live_view(first, second, pick=Pick(schemas=frozenset({"other"}), limit=2))
    assert other.tables == [t for t in rows if t.schema_name == "other"][:2]
    assert [row_key(t) for t in rows] == sorted(row_key(t) for t in rows)

    server = server_settings(second)
    full = of_tables(second.tables, server, second.server.version_num)
    by_oid = {t.oid: t for t in rows}
    assert len(by_oid) == len(full) == whole.relations
    for t in full:
        row = by_oid[t.relation.oid]
        assert (row.due, row.vacuum_threshold, row.insert_threshold, row.forced) == (
            t.needs_vacuum, t.vacuum, t.insert, t.forced
        )  # fmt: skip
        assert row.progress == max(t.vacuum_progress, t.insert_progress or 0.0)
    assert whole.due == sum(1 for t in rows if t.due and not t.running)
    oldest = max(full, key=lambda t: t.relation.frozenxid_age or 0)
    assert whole.wraparound[0].table_age == oldest.relation.frozenxid_age

    # What the queue held: due tables (the TOAST relation among them), near ones, moving ones.
    due = {t.label for t in rows if t.due}
    assert {"public.q13", "public.q19", "public.q5", "public.big (TOAST)"} <= due
    assert "public.q9" not in due  # autovacuum off, however many dead tuples
    assert sum(1 for t in rows if not t.due and 0.5 < t.progress <= 1.0) >= 3
    moving = [t for t in rows if not t.due and t.predicted_start_s is not None]
    assert {t.label for t in moving} >= {"public.q12"}


def test_busy_workers_count_every_autovacuum_worker_analyze_included() -> None:
    """The live view's busy workers come from pg_stat_activity: a worker running ANALYZE
    shows in no pg_stat_progress_vacuum row, yet holds a slot and shares the cost limit."""
    worker = AutovacuumWorker(pid=7, database="app", backend_start=T0, relid=42, doing="analyze")
    snap = snapshot().model_copy(update={"workers": [worker]})
    assert cluster.sharing(snap) == 1
    assert cluster.workers(snap, PG18, cluster.sharing(snap)).busy == 1
