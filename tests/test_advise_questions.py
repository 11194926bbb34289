"""The advisor's timing, workers, HOT, TOAST and bloat questions: on synthetic snapshots with
every number worked out by hand, and on the embedded PostgreSQL 18, where every statement
they recommend is run."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import psycopg
import pytest
from psycopg import sql

from helpers.advise import (
    BLOCK,
    MB,
    T0,
    autovacuum,
    changed,
    context,
    relation,
    run_recommendations,
    snapshot,
    toast_of,
)
from helpers.db import execute
from vacuumlab.advise import advise, bloat, estimate, hot, thresholds, timing, toast, workers
from vacuumlab.advise.context import Context
from vacuumlab.collect.snapshot import collect
from vacuumlab.pg.connect import connect
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Finding, Recommendation
from vacuumlab.records.snapshot import (
    AutovacuumWorker,
    Database,
    ExactBloat,
    Relation,
    Snapshot,
    Table,
)

MODULES = (timing, workers, hot, toast, bloat)


def only(found: list[Finding], relation: str | None = None) -> Finding:
    matches = [f for f in found if f.relation == relation]
    assert len(matches) == 1, [(f.relation, f.title) for f in found]
    return matches[0]


def sqls(finding: Finding) -> list[str]:
    return [r.sql for r in finding.recommendations]


# -- timing ---------------------------------------------------------------------------------------


def timing_steady() -> Context:
    """10,000 rows on 1,000 pages, 400 all-visible, one 200-page index; 60 s apart dead tuples
    go 50 -> 650 and 300 rows are inserted."""
    before = relation(
        100,
        "orders",
        reltuples=10_000.0,
        relpages=1000,
        relallvisible=400,
        index_bytes=200 * BLOCK,
        n_indexes=1,
        n_live_tup=10_000,
        n_dead_tup=50,
    )
    after = changed(before, n_dead_tup=650, n_tup_ins=300, n_ins_since_vacuum=300, n_tup_upd=600)
    return context(
        snapshot(Table(heap=before, toast=None)),
        snapshot(Table(heap=after, toast=None), seconds=60),
    )


def test_timing_rates_next_vacuum_and_duration() -> None:
    [f] = timing.findings(timing_steady())
    # Dead: (650 - 50) / 60 = 10/s; vacuum threshold 50 + 0.2 × 10,000 = 2,050, reached in
    # (2,050 - 650) / 10 = 140 s. Inserts: 300 / 60 = 5/s against 1,000 + 0.2 × 10,000 = 3,000,
    # reached in (3,000 - 300) / 5 = 540 s: later.
    # Heap pages: 400 of 1,000 all-visible, and 2,050 rows updated or deleted by the vacuum,
    # at random: a page keeps its bit with e^(-2.05) = 13 %, so 5 % of the pages are
    # skippable, in runs far shorter than 32: vacuum reads all 1,000 (vacuumlazy.c), not
    # 1,000 - 400. With 200 index pages (2,050 dead tuples can fill 20 or more pages: no
    # bypass). Cost (bufmgr.c): each heap page read a hit and a hit on the free space map,
    # 2,000; each index page a hit, 200; the 871 heap pages with dead items (1 - e^(-2.05)
    # of 1,000) a hit again in the second pass: 3,071 if every changed page is still dirty.
    # Dirtied: the 883 heap pages holding changes (30 filled by the inserts, then 853 = 970 ×
    # (1 - e^(-2,050 / 970))) and the 200 index pages, 20 each where clean. A page changed k
    # times is clean only if its last change is older than the last checkpoint: 2 / (k + 1)
    # of the share for one change, so 600 + 853 × 20 × 2 / (2,050 / 853 + 1) + 200 × 20 × 2 /
    # (2,050 / 200 + 1) = 11,333 more if every change were old: 14,404. Clean: the changes go
    # back 650 / 10 = 65 s, and 140 s more to the vacuum: 205 s over 2 × checkpoint_timeout
    # (300 s) = 0.342; 3,071 + 0.342 × 11,333 = 6,943, / 200 × 2 ms = 0.069 s of sleeps, and
    # the work between them (model/cost.py): 2 ms, 3 µs for each of the 1,000 heap pages read,
    # 20 µs for each of the 200 index pages and the 871 heap pages visited again, and 6 ms for
    # the changed pages (4 µs each, 15 µs more for a clean one): 0.033 s, 0.102 s in all.
    assert f.relation == "public.orders"
    assert f.severity == "info"
    assert f.title == (
        "next autovacuum in 2.3 min to 3.3 min (by dead tuples); it should take about 0.1 s"
    )
    e = f.evidence
    assert e["dead_per_second"] == 10.0
    assert e["dead_rate_from"] == "n_dead_tup"
    assert e["inserts_per_second"] == 5.0
    assert e["vacuum_threshold"] == 2050
    assert e["seconds_to_vacuum"] == 140.0
    assert e["seconds_to_vacuum_latest"] == 200.0
    assert e["cycle_seconds"] == 205.0
    assert (e["heap_pages_to_visit"], e["index_pages"], e["index_scan"]) == (1000, 200, True)
    assert e["heap_pages_from"] == "estimated"
    assert (e["cost_low"], e["cost"], e["cost_high"]) == (3071, 6943, 14_404)
    assert (e["pages_missed_share"], e["changed_pages_clean_share"]) == (0.0, 0.342)
    assert e["estimated_vacuum_seconds"] == 0.102
    assert e["estimated_vacuum_seconds_low"] == 0.063
    assert e["estimated_vacuum_seconds_high"] == 0.177
    assert "shared buffers" in str(e["assumptions"])
    assert f.recommendations == []
    assert estimate.table_rates(timing_steady()) == {
        100: (10.0, 140.0, pytest.approx(0.1021, abs=1e-4))
    }


def timing_queue(**options: str) -> Context:
    """A sparse queue: 1,000 rows on 200,000 pages, two indexes on 10,000 pages; an autovacuum
    ended 1.5 s before the second snapshot, 150 dead tuples since; 3,000 updates and 3,000
    deletes in the interval (pruned or vacuumed: they do not count); two other autovacuums
    run."""
    before = relation(
        200,
        "jobs",
        reltuples=1000.0,
        relpages=200_000,
        index_bytes=10_000 * BLOCK,
        n_indexes=2,
        n_live_tup=1000,
        n_dead_tup=900,
        autovacuum_count=3,
        reloptions=options,
    )
    after = changed(
        before,
        n_dead_tup=150,
        last_autovacuum=T0 + timedelta(seconds=58.5),
        n_ins_since_vacuum=100,
        n_tup_ins=3000,
        n_tup_upd=3000,
        n_tup_del=3000,
        autovacuum_count=4,
    )
    busy = (autovacuum(901), autovacuum(902))
    return context(
        snapshot(Table(heap=before, toast=None)),
        snapshot(Table(heap=after, toast=None), seconds=60, vacuums=busy),
    )


def test_timing_of_a_queue_that_outruns_its_vacuum() -> None:
    [f] = timing.findings(timing_queue())
    # A vacuum ended 1.5 s before the second snapshot: 150 dead tuples since = 100/s (not the
    # 6,000 updates and deletes: pruning removes dead versions between vacuums).
    # Threshold 50 + 0.2 × 1,000 = 250: (250 - 150) / 100 = 1.0 s. 250 dead tuples fill at most
    # 250 < 2 % × 200,000 = 4,000 pages: index vacuuming is bypassed, only the 200,000 heap
    # pages count, each a hit and a hit on the free space map: 400,000; the 350 holding the
    # changes (250 updated or deleted, 100 inserted, a page each) are dirtied, 20 each where
    # clean, and they are 2.5 s old of 2 × 300 s: 400,029, at 200 / 2 workers and 2 ms: 8.0 s
    # of sleeps; and 0.6 s of work between them, 2 ms, 3 µs a page read and 4 µs more for
    # each of the 350 changed: 8.6 s.
    assert f.severity == "warning"
    assert f.title == (
        "next autovacuum in 1.0 s to 61 s (by dead tuples); it should take about 8.6 s"
    )
    assert f.evidence["dead_rate_from"] == "n_dead_tup since the vacuum in between"
    assert f.evidence["dead_per_second"] == 100.0
    assert f.evidence["index_scan"] is False
    assert f.evidence["workers_sharing_limit"] == 2
    assert f.evidence["estimated_vacuum_seconds"] == 8.604
    assert f.evidence["cycle_seconds"] == 2.5
    # 8.6 s > the 2.5 s cycle: an own limit so it sleeps 1.25 s:
    # 400,029 × 0.002 / 1.25 = 640 -> 700. And the 2.5 s cycle beats naptime 60 s.
    assert sqls(f) == [
        'ALTER TABLE "public"."jobs" SET ("autovacuum_vacuum_cost_limit" = \'700\');',
        "ALTER SYSTEM SET \"autovacuum_naptime\" = '10s'; SELECT pg_reload_conf();",
    ]
    assert "6,000 more dead tuples" in f.recommendations[1].reason  # 100/s × 60 s
    assert "1.71 ms" in (f.recommendations[1].evidence or "")


def test_no_naptime_for_a_toast_relation_whose_values_are_replaced() -> None:
    """The queue's counts on a TOAST relation (values replaced: chunks inserted and deleted
    over its size): a read fetches a value by its own chunk_id, never through the dead chunks
    of replaced values, so the churn study's latency evidence for a shorter naptime does not
    apply; dead chunks cost space, which the TOAST question reports."""
    queue = timing_queue()
    first, second = (queue.snapshot.tables[0].heap, queue.now.tables[0].heap)
    heap = relation(199, "docs", reltuples=1000.0, relpages=10, n_live_tup=1000, n_dead_tup=0)
    tables = [
        Table(heap=heap, toast=toast_of(heap, 200, **_fields(rel))) for rel in (first, second)
    ]
    ctx = context(snapshot(tables[0]), snapshot(tables[1], seconds=60, vacuums=queue.now.vacuums))
    [f] = [f for f in timing.findings(ctx) if f.relation == "public.docs (TOAST)"]
    assert "autovacuum_naptime" not in [r.setting for r in f.recommendations]


def _fields(rel: Relation) -> dict[str, object]:
    skip = {"oid", "name", "schema_name", "kind", "toast_of"}
    return {k: v for k, v in rel.model_dump().items() if k not in skip}


def test_timing_honours_index_cleanup_and_own_cost_settings() -> None:
    # vacuum_index_cleanup = on: no bypass, so 10,000 index pages more and the 250 heap pages
    # with dead items read again: 410,250 and the dirty charges, / 100 × 2 ms = 8.2 s, and
    # the work: 0.6 s for the heap as above, 20 µs for each of the 10,250 pages more.
    rates = estimate.table_rates(timing_queue(vacuum_index_cleanup="on"))
    assert rates[200] == (100.0, 1.0, pytest.approx(8.206 + 0.808, abs=1e-3))
    # Its own cost limit of 1,000: unbalanced, 400,029 / 1,000 × 2 ms = 0.8 s, and the work.
    rates = estimate.table_rates(timing_queue(autovacuum_vacuum_cost_limit="1000"))
    assert rates[200][2] == pytest.approx(0.80006 + 0.60342, abs=1e-5)
    # Its own delay of 0: unthrottled, no estimate.
    [f] = timing.findings(timing_queue(autovacuum_vacuum_cost_delay="0"))
    assert f.title.endswith("; it runs unthrottled")
    assert estimate.table_rates(timing_queue(autovacuum_vacuum_cost_delay="0"))[200][2] is None


def test_timing_needs_two_snapshots() -> None:
    ctx = timing_steady()
    single = context(ctx.snapshot)
    [f] = timing.findings(single)
    assert (f.severity, f.relation, f.title) == ("info", None, "run with --interval 60s for rates")
    # No rates, but the duration of a vacuum at the threshold: 50 dead < 2 % of 1,000 pages is
    # not true for the 2,050 of the threshold, so 1,200 pages; with no rates the age of the
    # changes is unknown, taken as old: 14,176, 0.142 s, and 0.038 s of work.
    assert estimate.table_rates(single) == {100: (None, None, pytest.approx(0.17947, abs=1e-5))}


# -- workers --------------------------------------------------------------------------------------


def queue_table(oid: int, name: str, relpages: int, dead_before: int, dead_after: int) -> tuple:
    before = relation(
        oid, name, reltuples=1000.0, relpages=relpages, n_live_tup=1000, n_dead_tup=dead_before
    )
    return Table(heap=before, toast=None), Table(
        heap=changed(before, n_dead_tup=dead_after), toast=None
    )


def workers_context(
    pages: tuple[int, ...],
    dead_after: int,
    *,
    version: int = 180001,
    values: dict[str, str] | None = None,
    running: int = 0,
) -> Context:
    pairs = [queue_table(300 + i, f"q{i}", p, 0, dead_after) for i, p in enumerate(pages)]
    busy = tuple(autovacuum(900 + i) for i in range(running))
    return context(
        snapshot(*(b for b, _ in pairs), version=version, values=values),
        snapshot(*(a for _, a in pairs), seconds=60, version=version, values=values, vacuums=busy),
    )


def test_workers_one_hot_table_gets_its_own_budget() -> None:
    # q0: 1,000 rows on 50,000 pages, 6,000 dead in 60 s: 100/s / 0.02 rows a page = 5,000
    # pages/s; q1: 1,000 rows on 200 pages: 100/s / 5 = 20 pages/s. Budget 200 / 21 / 2 ms.
    budget, found = workers.findings(workers_context((50_000, 200), 6000))
    assert budget.severity == "warning"
    assert budget.evidence["needed_pages_per_second"] == 5020.0
    assert budget.evidence["budget_pages_per_second"] == round(200 / 21 / 0.002, 1)
    assert budget.evidence["hottest"] == "public.q0"
    assert budget.title == (
        "dead tuples need 5,020 pages/s of vacuum; the cost budget allows 4,762 (105%)"
    )
    # 2 × 5,000 pages/s × 21 × 2 ms = 420 -> 500, for q0 alone.
    assert sqls(budget) == [
        'ALTER TABLE "public"."q0" SET ("autovacuum_vacuum_cost_limit" = \'500\');'
    ]
    assert "1.71 ms" in (budget.recommendations[0].evidence or "")
    assert found.severity == "info"


def test_workers_shared_budget_and_waiting_tables() -> None:
    # Three tables of 2,000 pages/s (1,000 rows on 20,000 pages, 100 dead/s): 6,000 pages/s;
    # none has half: 2 × 6,000 × 21 × 2 ms = 504 -> 600, server-wide.
    ctx = workers_context((20_000, 20_000, 20_000), 6000, running=3)
    budget, found = workers.findings(ctx)
    assert budget.evidence["needed_pages_per_second"] == 6000.0
    assert sqls(budget) == [
        "ALTER SYSTEM SET \"autovacuum_vacuum_cost_limit\" = '600'; SELECT pg_reload_conf();"
    ]
    # 6,000 dead > 50 + 0.2 × 1,000 = 250: three tables wait, all 3 workers busy: 3 + 3 = 6.
    assert found.severity == "warning"
    assert found.title == (
        "3 of 3 autovacuum workers busy; relations past their threshold without one: 3"
    )
    assert found.evidence == {
        "autovacuum_max_workers": 3,
        "running": 3,
        "free": 0,
        "waiting": 3,
        "waited_the_interval": 0,  # 60 s: under two naptimes, too short to tell
    }
    assert sqls(found) == [
        "ALTER SYSTEM SET \"autovacuum_max_workers\" = '6'; SELECT pg_reload_conf();"
    ]
    # Before 18 the change needs a restart.
    old = workers_context((20_000, 20_000, 20_000), 6000, running=3, version=170005)
    assert sqls(workers.findings(old)[1]) == [
        "ALTER SYSTEM SET \"autovacuum_max_workers\" = '6'; -- then restart the server"
    ]


def test_tables_waiting_for_a_busy_worker_leave_the_warning_to_the_workers_question() -> None:
    """Many tables past their thresholds while every worker is busy: one server finding says
    so at warning (above); each table says it waits, at info, and points there."""
    ctx = workers_context((20_000, 20_000, 20_000), 6000, running=3)
    waiting = [f for f in thresholds.findings(ctx) if "worker is busy" in f.title]
    assert len(waiting) == 3
    assert {f.severity for f in waiting} == {"info"}
    assert all("Cost budget and workers" in f.title for f in waiting)


def test_many_slow_vacuums_under_the_shared_budget_are_the_budgets_to_fix() -> None:
    """Three tables whose vacuums all outlast their cycles under the one shared budget: a
    cost limit of each one's own would only raise the budget three times over, out of
    balancing. Each says so at info and points to the budget, which recommends the change.
    Each reads 60,000 pages at a hit and a hit on the free space map: 120,000 / (200 / 3) ×
    2 ms = 3.6 s of sleeps, over the 2.5 s cycle."""
    ctx = workers_context((60_000, 60_000, 60_000), 6000, running=3)
    found = timing.findings(ctx)
    assert len(found) == 3
    assert {f.severity for f in found} == {"info"}
    assert [r for f in found for r in f.recommendations] == []
    assert all("Cost budget and workers" in f.detail for f in found)
    [budget, _] = workers.findings(ctx)
    assert budget.severity == "warning"
    assert [r.setting for r in budget.recommendations] == ["autovacuum_vacuum_cost_limit"]


def test_workers_beyond_the_highest_cost_limit_and_without_slots() -> None:
    # 60,000 dead in 60 s on 20,000 pages: 1,000/s / 0.05 = 20,000 pages/s each, 60,000 in all.
    # At the old 20 ms delay: 2 × 60,000 × 21 × 20 ms = 50,400 > 10,000: the limit goes to
    # 10,000 and the delay to 10,000 / (2 × 60,000 × 21) s = 3.97 ms -> 3.9.
    slow = {"autovacuum_vacuum_cost_delay": "20", "autovacuum_worker_slots": "3"}
    budget, found = workers.findings(
        workers_context((20_000, 20_000, 20_000), 60_000, values=slow, running=3)
    )
    assert sqls(budget) == [
        "ALTER SYSTEM SET \"autovacuum_vacuum_cost_limit\" = '10000'; SELECT pg_reload_conf();",
        "ALTER SYSTEM SET \"autovacuum_vacuum_cost_delay\" = '3.9ms'; SELECT pg_reload_conf();",
    ]
    # Every worker slot is in use: nothing to raise without a restart.
    assert found.recommendations == []
    assert "autovacuum_worker_slots" in found.detail


def waiting_context(*, vacuumed: bool = False, seconds: float = 120.0) -> Context:
    """Three tables past their threshold (500 dead > 50 + 0.2 × 1,000) in both snapshots, one
    of three workers busy at the later one (on another relation), naptime 60 s."""
    pairs = [queue_table(300 + i, f"q{i}", 200, 500, 600) for i in range(3)]
    later = [
        Table(heap=changed(a.heap, autovacuum_count=1), toast=None) if vacuumed else a
        for _, a in pairs
    ]
    return context(
        snapshot(*(b for b, _ in pairs)),
        snapshot(*later, seconds=seconds, vacuums=(autovacuum(999),)),
    )


def test_tables_that_waited_the_whole_interval_mean_the_workers_are_short() -> None:
    """Past the threshold at both snapshots, two naptimes apart, vacuumed by nobody: with a
    slot free the launcher would have sent a worker within a naptime, so they waited for a
    slot, though only one of three workers is busy at the instant of the snapshot."""
    found = workers.findings(waiting_context())[-1]
    assert found.severity == "warning"
    assert found.evidence["waited_the_interval"] == 3
    assert found.title.endswith("without one: 3; 3 waited the whole 120 s")
    assert "They waited for a slot, or behind other relations' vacuums" in found.detail
    assert sqls(found) == [
        "ALTER SYSTEM SET \"autovacuum_max_workers\" = '6'; SELECT pg_reload_conf();"
    ]


def behind_long_vacuums(workers_max: int) -> Context:
    """Two busy tables of 200,000 pages, with a cost limit of their own of 20 (a vacuum of
    about 420 s each; at 20,000 dead tuples a second past their threshold of 2,000,050 again
    100 s after one ends, a vacuum leaving only what the backends flush after it), and a small
    table after them in pg_class order, all past their threshold at both snapshots, 120 s
    apart; the large ones are being vacuumed at the later snapshot, as many as there are
    slots."""

    def big(oid: int, name: str) -> tuple[Table, Table]:
        before = relation(
            oid, name, reltuples=10_000_000.0, relpages=200_000, n_live_tup=10_000_000,
            n_dead_tup=2_500_000, reloptions={"autovacuum_vacuum_cost_limit": "10"},
        )  # fmt: skip
        after = changed(before, n_dead_tup=4_900_000)  # 20,000 dead tuples a second
        return Table(heap=before, toast=None), Table(heap=after, toast=None)

    pairs = [big(300, "big0"), big(301, "big1"), queue_table(302, "small", 200, 500, 600)]
    values = {"autovacuum_max_workers": str(workers_max)}
    running = tuple(autovacuum(oid) for oid in (300, 301)[:workers_max])
    return context(
        snapshot(*(b for b, _ in pairs), values=values),
        snapshot(*(a for _, a in pairs), seconds=120, values=values, vacuums=running),
    )


def workers_finding(ctx: Context) -> Finding:
    """The workers finding as the advisor gives it: with the simulation's answer."""
    return next(
        f
        for f in advise(ctx.snapshot, ctx.later).findings
        if f.question == "workers" and "workers busy" in f.title
    )


def test_a_table_behind_long_vacuums_with_a_slot_free_is_the_launchers_pace() -> None:
    """Three slots, two busy: the small table waited two naptimes with a slot free. The
    simulation agrees (the worker at each naptime takes the next long vacuum in its list): more
    workers would not help, a shorter naptime would."""
    found = workers_finding(behind_long_vacuums(3))
    assert found.severity == "warning"
    assert found.evidence["simulated_waiting_with_slots_free"] >= 1
    assert found.evidence["simulated_waiting_for_a_slot"] == 0
    assert sqls(found) == [
        "ALTER SYSTEM SET \"autovacuum_naptime\" = '30s'; SELECT pg_reload_conf();"
    ]
    assert "More workers would not shorten that" in found.detail


def test_a_table_waiting_while_every_slot_is_busy_needs_more_workers() -> None:
    """One slot, busy with a 420 s vacuum: the small table waits for the slot, in the
    simulation too, and more workers is the advice."""
    found = workers_finding(behind_long_vacuums(1))
    assert found.evidence["simulated_waiting_for_a_slot"] >= 1
    assert found.evidence["simulated_waiting_with_slots_free"] == 0
    assert [r.setting for r in found.recommendations] == ["autovacuum_max_workers"]


def test_tables_vacuumed_in_between_or_over_a_short_interval_did_not_wait() -> None:
    vacuumed = workers.findings(waiting_context(vacuumed=True))[-1]
    assert vacuumed.severity == "info"
    assert vacuumed.evidence["waited_the_interval"] == 0
    short = workers.findings(waiting_context(seconds=90))[-1]  # under two naptimes
    assert short.severity == "info"
    assert short.recommendations == []


def analyzing(relid: int | None, pid: int) -> AutovacuumWorker:
    """An autovacuum worker running ANALYZE (relid) or between two relations (None)."""
    doing = "analyze" if relid is not None else None
    return AutovacuumWorker(pid=pid, database="app", backend_start=T0, relid=relid, doing=doing)


def test_workers_running_analyze_hold_slots_and_share_the_cost_limit() -> None:
    """pg_stat_progress_vacuum shows no worker, but pg_stat_activity shows three: two running
    ANALYZE, one between relations. Each holds a slot (three of three busy while tables wait)
    and has wi_dobalance (autovac_recalculate_workers_for_balance() counts it)."""
    ctx = workers_context((20_000, 20_000, 20_000), 6000)
    now = ctx.now.model_copy(
        update={"workers": [analyzing(300, 1), analyzing(301, 2), analyzing(None, 3)]}
    )
    later = Context(ctx.snapshot, now)
    found = workers.findings(later)[-1]
    assert found.title == (
        "3 of 3 autovacuum workers busy; relations past their threshold without one: 3"
    )
    assert found.severity == "warning"
    assert later.balanced_autovacuums == 3
    # A snapshot saved before the workers were collected counts the vacuums in progress.
    assert workers.findings(ctx)[-1].title.startswith("0 of 3 autovacuum workers busy")


def test_workers_without_rates() -> None:
    ctx = workers_context((200,), 0)
    budget, found = workers.findings(context(ctx.snapshot))
    assert budget.title == "run with --interval 60s to compare the work with the cost budget"
    assert found.title == (
        "0 of 3 autovacuum workers busy; relations past their threshold without one: 0"
    )
    # Past their threshold with workers free: they wait for the launcher, not for workers.
    past = workers_context((200, 200), 6000).now
    waiting = workers.findings(context(past))
    assert waiting[1].severity == "info"
    assert waiting[1].evidence["waiting"] == 2
    assert waiting[1].recommendations == []
    assert "launcher" in waiting[1].detail


# -- HOT ------------------------------------------------------------------------------------------


def hot_table(oid: int, name: str, upd: int, hot_upd: int, newpage: int | None, **kw: object):
    return Table(
        heap=relation(
            oid, name, n_tup_upd=upd, n_tup_hot_upd=hot_upd, n_tup_newpage_upd=newpage, **kw
        ),
        toast=None,
    )


def hot_context(later: Snapshot | None = None) -> Context:
    """The counts over an interval: the first snapshot saw none of these updates."""
    later = later or hot_snapshot()
    quiet = [
        Table(heap=changed(t.heap, n_tup_upd=0, n_tup_hot_upd=0, n_tup_newpage_upd=0), toast=None)
        for t in later.tables
    ]
    return context(
        snapshot(*quiet), later.model_copy(update={"taken_at": T0 + timedelta(seconds=60)})
    )


def hot_snapshot() -> Snapshot:
    return snapshot(
        hot_table(400, "docs", 10_000, 1_000, 6_000),  # HOT 10 %, new page 60 %
        hot_table(401, "mixed", 5_000, 3_000, 1_500),  # HOT 60 %, new page 30 %
        hot_table(402, "keyed", 4_000, 40, 20),  # HOT 1 %, new page 0.5 %
        hot_table(403, "quiet", 999, 0, 999),  # too few updates
        # 500 of the 1,000 updates that stayed on their page were HOT: room is what they lack.
        hot_table(404, "tight", 10_000, 500, 9_000, reloptions={"fillfactor": "50"}),
        hot_table(405, "healthy", 10_000, 9_500, 100),
    )


def test_hot_no_fillfactor_rewrite_on_thin_evidence() -> None:
    """Counts since an unknown stats reset, or one pass over the rows (a bulk UPDATE): the
    finding says what is missing instead of recommending a rewrite."""
    [cumulative] = [f for f in hot.findings(context(hot_snapshot())) if f.relation == "public.docs"]
    assert (cumulative.severity, cumulative.recommendations) == ("info", [])
    assert "since the statistics were last reset" in cumulative.detail
    loaded = hot_table(430, "bulk", 0, 0, 0, n_live_tup=10_000)
    updated = changed(loaded.heap, n_tup_upd=10_000, n_tup_newpage_upd=10_000)
    [once] = hot.findings(context(snapshot(loaded), snapshot(Table(heap=updated, toast=None))))
    assert (once.severity, once.recommendations) == ("info", [])
    assert "cover 1.0× its 10,000 rows" in once.detail


def test_hot_updates_that_leave_their_page_get_a_fillfactor_with_its_price() -> None:
    found = hot.findings(hot_context())
    assert "public.quiet" not in {f.relation for f in found}
    docs = only(found, "public.docs")
    assert docs.severity == "warning"
    assert docs.title == "60% of updates leave their page; HOT share 10%"
    assert docs.evidence["hot_share"] == 0.1
    assert docs.evidence["newpage_share"] == 0.6
    assert sqls(docs) == ['ALTER TABLE "public"."docs" SET ("fillfactor" = \'80\');']
    assert "grows by about 25%" in docs.detail  # 100/80 - 1
    assert "rewritten" in docs.detail
    assert docs.recommendations[0].impact == 0.5  # 0.2 + 0.5 × 0.6
    mixed = only(found, "public.mixed")
    assert mixed.severity == "info"  # HOT share 60 %: not low
    assert sqls(mixed) == ['ALTER TABLE "public"."mixed" SET ("fillfactor" = \'90\');']
    assert "grows by about 11%" in mixed.detail  # 100/90 - 1


def test_hot_when_fillfactor_will_not_help() -> None:
    found = hot.findings(hot_context())
    keyed = only(found, "public.keyed")
    assert keyed.title == "HOT share 1%: updates change an indexed column"
    assert "fillfactor will not help" in keyed.detail
    assert keyed.recommendations == []
    tight = only(found, "public.tight")  # fillfactor 50 already: 40 would be below the floor
    assert tight.recommendations == []
    assert "already 50" in tight.detail
    healthy = only(found, "public.healthy")
    assert healthy.title == "HOT share 95%: updates mostly stay on their page"


def test_hot_no_fillfactor_when_updates_with_room_were_not_hot() -> None:
    """Updates of an indexed column on a table whose pages fill up (autovacuum off, or
    behind): 24 % leave their page, but none of the 76 % that stayed on it was HOT, so an
    indexed column changes in them (heap_update() in heapam.c: same page and no indexed
    column changed is HOT). Free space would not make them HOT: no fillfactor."""
    full = hot_table(406, "indexed_full", 10_000, 0, 2_400, n_live_tup=2_000)
    [found] = hot.findings(hot_context(snapshot(full)))
    assert found.title == "HOT share 0%: updates change an indexed column"
    assert found.recommendations == []
    assert "24% of them went to another page" in found.detail


def test_hot_before_postgresql_16_and_over_an_interval() -> None:
    old = hot.findings(context(snapshot(hot_table(410, "legacy", 5000, 0, None), version=150004)))
    assert old[0].title == "HOT share 0%: updates change an indexed column"
    assert "before PostgreSQL 16" in old[0].detail
    # Over the interval: 2,000 updates, 200 HOT (10 %), 1,500 to a new page (75 %), although
    # since the stats reset 88 % were HOT.
    first = hot_table(420, "drifted", 100_000, 90_000, 5_000)
    later = Table(
        heap=changed(first.heap, n_tup_upd=102_000, n_tup_hot_upd=90_200, n_tup_newpage_upd=6_500),
        toast=None,
    )
    [f] = hot.findings(context(snapshot(first), snapshot(later, seconds=60)))
    assert f.evidence["window"] == "interval"
    assert (f.evidence["n_tup_upd"], f.evidence["hot_share"]) == (2000, 0.1)
    assert sqls(f) == ['ALTER TABLE "public"."drifted" SET ("fillfactor" = \'80\');']


# -- TOAST ----------------------------------------------------------------------------------------


def toast_context() -> Context:
    # Heavy: 1 MB heap + 0.5 MB index + 6 MB TOAST = 7.5 MB, 80 % TOAST.
    heavy = relation(500, "heavy", relpages=128, index_bytes=MB // 2, toast_bytes=6 * MB)
    heavy_toast = toast_of(heavy, 501, relpages=700)
    # Own TOAST options hide the table's scale factor and freeze_min_age.
    split = relation(
        510,
        "split",
        reloptions={
            "autovacuum_vacuum_scale_factor": "0.05",
            "autovacuum_analyze_scale_factor": "0.02",
            "autovacuum_freeze_min_age": "1000000",
        },
    )
    split_toast = toast_of(split, 511, reloptions={"autovacuum_vacuum_threshold": "500"})
    # TOAST options only, table none: just different.
    own = relation(520, "own")
    own_toast = toast_of(own, 521, reloptions={"autovacuum_vacuum_scale_factor": "0.05"})
    # TOAST past its threshold (50 + 0.2 × 10,000 = 2,050) and far older than its table.
    lagging = relation(530, "lagging", frozenxid_age=10_000_000)
    lagging_toast = toast_of(
        lagging, 531, reltuples=10_000.0, n_dead_tup=3000, frozenxid_age=160_000_000
    )
    return context(
        snapshot(
            Table(heap=heavy, toast=heavy_toast),
            Table(heap=split, toast=split_toast),
            Table(heap=own, toast=own_toast),
            Table(heap=lagging, toast=lagging_toast),
        )
    )


def test_toast_share_and_settings() -> None:
    found = toast.findings(toast_context())
    heavy = only(found, "public.heavy")
    assert heavy.title == "TOAST holds 80% of the table's 7.5 MB"
    assert heavy.evidence["toast_share"] == 0.8
    split = only(found, "public.split (TOAST)")
    assert split.severity == "warning"
    assert split.title == (
        "the table's autovacuum settings do not reach its TOAST relation: "
        "autovacuum_freeze_min_age, autovacuum_vacuum_scale_factor"
    )
    # Both are carried over: a TOAST relation with options of its own reads none of its table's,
    # freeze_min_age included (table_recheck_autovac() in autovacuum.c).
    assert sqls(split) == [
        'ALTER TABLE "public"."split" SET (toast."autovacuum_freeze_min_age" = \'1000000\');',
        'ALTER TABLE "public"."split" SET (toast."autovacuum_vacuum_scale_factor" = \'0.05\');',
    ]
    assert "set by hand" not in split.detail
    own = only(found, "public.own (TOAST)")
    assert own.severity == "info"
    assert own.title == "TOAST has settings of its own: autovacuum_vacuum_scale_factor = 0.05"


def test_toast_dead_chunks_and_freeze_age() -> None:
    found = [f for f in toast.findings(toast_context()) if f.relation == "public.lagging (TOAST)"]
    past, old = found
    assert past.title == "TOAST past its vacuum threshold: 3,000 dead chunks, threshold 2,050"
    assert "which is not past its own" in past.detail
    # 160 M - 10 M = 150 M >= 25 % of 200 M, and 160 M >= 75 % of 200 M: a warning.
    assert old.severity == "warning"
    assert old.title == "TOAST freeze age 160,000,000 is 150,000,000 older than the table's"


# -- bloat ----------------------------------------------------------------------------------------


def bloat_context() -> Context:
    big = relation(
        600,
        "big",
        reltuples=60_000.0,
        relpages=12_800,  # 100 MB
        relallvisible=2_800,
        n_live_tup=60_000,
        n_dead_tup=40_000,
    )
    small = relation(610, "small", relpages=12_800, n_live_tup=95_000, n_dead_tup=5_000)
    measured = relation(
        620,
        "measured",
        relpages=6_400,  # 50 MB
        n_live_tup=9_500,
        n_dead_tup=500,
        reloptions={"fillfactor": "90"},
    )
    blob = relation(630, "blob", reloptions={"autovacuum_vacuum_cost_limit": "1000"})
    blob_toast = toast_of(
        blob, 631, reltuples=1000.0, relpages=8_192, n_live_tup=1000, n_dead_tup=1000
    )
    exact = ExactBloat(
        oid=620,
        table_len=50 * MB,
        scanned_percent=10.0,
        approx_tuple_count=9_500,
        approx_tuple_len=25 * MB,
        approx_tuple_percent=50.0,
        dead_tuple_count=500,
        dead_tuple_len=int(2.5 * MB),
        dead_tuple_percent=5.0,
        approx_free_space=int(22.5 * MB),
        approx_free_percent=45.0,
    )
    return context(
        snapshot(
            Table(heap=big, toast=None),
            Table(heap=small, toast=None),
            Table(heap=measured, toast=None),
            Table(heap=blob, toast=blob_toast),
            exact=(exact,),
        ),
    )


def test_bloat_estimate_is_labelled_and_recommends_more_frequent_vacuum() -> None:
    found = bloat.findings(bloat_context())
    assert "public.small" not in {f.relation for f in found}  # 5 %: not reported
    big = only(found, "public.big")
    # 40,000 / (60,000 + 40,000) = 40 % of 100 MB.
    assert big.severity == "warning"
    assert big.title == "estimated bloat: 40% of 100.0 MB (40.0 MB) dead rows, from statistics"
    assert big.evidence["estimated_dead_share"] == 0.4
    assert big.evidence["pages_not_all_visible"] == 10_000
    assert "Estimated from statistics" in big.detail
    assert "VACUUM FULL" in big.detail
    assert "pg_repack" in big.detail
    assert "Index bloat is not estimated" in big.detail
    assert "past its threshold of 12,050" in big.detail  # 50 + 0.2 × 60,000
    assert sqls(big) == [
        'ALTER TABLE "public"."big" SET ("autovacuum_vacuum_scale_factor" = \'0.05\');'
    ]


def test_bloat_measured_beside_the_estimate() -> None:
    found = bloat.findings(bloat_context())
    m = only(found, "public.measured")
    # 5 % dead + (45 % free - the 10 % fillfactor 90 keeps) = 40 % of 50 MB; estimate 5 %.
    assert m.title == (
        "bloat measured: 40% of 50.0 MB (20.0 MB) dead or free; the statistics estimate 5%"
    )
    assert m.evidence["wasted_share"] == 0.4
    assert m.evidence["measured_approx_free_percent"] == 45.0
    assert m.severity == "warning"


def test_bloat_in_toast_keeps_the_tables_settings() -> None:
    found = bloat.findings(bloat_context())
    blob = only(found, "public.blob (TOAST)")
    # 50 % of 64 MB; the TOAST relation has no options of its own, so it reads the table's
    # cost limit: giving it a scale factor must carry the cost limit over too.
    assert sqls(blob) == [
        'ALTER TABLE "public"."blob" SET (toast."autovacuum_vacuum_scale_factor" = \'0.05\');',
        'ALTER TABLE "public"."blob" SET (toast."autovacuum_vacuum_cost_limit" = \'1000\');',
    ]


def test_no_module_raises_on_missing_data() -> None:
    bare = relation(
        700,
        "bare",
        n_live_tup=None,
        n_dead_tup=None,
        n_tup_upd=None,
        n_tup_hot_upd=None,
        n_tup_newpage_upd=None,
        n_tup_ins=None,
        n_tup_del=None,
        heap_bytes=None,
        index_bytes=None,
        frozenxid_age=None,
    )
    bare_toast = toast_of(bare, 701, n_dead_tup=None, frozenxid_age=None)
    empty = snapshot(Table(heap=bare, toast=bare_toast), values={})
    no_settings = empty.model_copy(update={"settings": []})
    zero = timing_queue(autovacuum_vacuum_threshold="0", autovacuum_vacuum_scale_factor="0")
    contexts = (
        context(empty, empty),
        context(no_settings, no_settings),
        context(no_settings),
        zero,
    )
    for ctx in contexts:
        for module in MODULES:
            module.findings(ctx)
        estimate.table_rates(ctx)


# -- every recommendation is valid SQL ---------------------------------------------------------


SCENARIOS: tuple[Callable[[], Context], ...] = (
    timing_steady,
    timing_queue,
    lambda: workers_context((50_000, 200), 6000),
    lambda: workers_context((20_000, 20_000, 20_000), 6000, running=3),
    lambda: workers_context(
        (20_000, 20_000, 20_000), 60_000, values={"autovacuum_vacuum_cost_delay": "20"}
    ),
    hot_context,
    toast_context,
    bloat_context,
)


def recommendations(ctx: Context) -> list[Recommendation]:
    return [r for m in MODULES for f in m.findings(ctx) for r in f.recommendations]


def test_every_synthetic_recommendation_runs(embedded_database: str, sandbox: Sandbox) -> None:
    recs = [r for scenario in SCENARIOS for r in recommendations(scenario())]
    assert {r.scope for r in recs} == {"server", "table", "toast"}
    names = {r.sql.split('"public"."')[1].split('"')[0] for r in recs if r.scope != "server"}
    execute(
        embedded_database,
        *[
            sql.SQL("CREATE TABLE {} (id int, body text)").format(sql.Identifier(n))
            for n in sorted(names)
        ],
    )
    run_recommendations(recs, embedded_database, sandbox.dsn)


# -- on the embedded PostgreSQL 18 ---------------------------------------------------------------


SETUP = (
    # Updates of an indexed column with room on the page: never HOT, never a new page.
    """CREATE TABLE lowhot (id int PRIMARY KEY, k int, pad text)
        WITH (fillfactor = 40, autovacuum_enabled = false)""",
    "CREATE INDEX ON lowhot (k)",
    "INSERT INTO lowhot SELECT i, i, repeat('x', 50) FROM generate_series(1, 2000) i",
    # Full pages whose rows grow: every new version moves to another page.
    """CREATE TABLE grow (id int PRIMARY KEY, body text)
        WITH (fillfactor = 100, autovacuum_enabled = false)""",
    "INSERT INTO grow SELECT i, repeat('a', 100) FROM generate_series(1, 2000) i",
    # 8 kB of md5 text per row does not compress: all of it goes to TOAST. The TOAST relation
    # has an option of its own, so the table's scale factor does not reach it.
    """CREATE TABLE docs (id int, body text) WITH (autovacuum_vacuum_scale_factor = 0.05,
        toast.autovacuum_vacuum_threshold = 500)""",
    """INSERT INTO docs SELECT i, (SELECT string_agg(md5(i::text || j::text), '')
        FROM generate_series(1, 256) j) FROM generate_series(1, 300) i""",
)
UPDATES = (
    "UPDATE lowhot SET k = k + 1",
    "UPDATE grow SET body = body || repeat('b', 200)",
)


def snapshot_when(dsn: str, ready: Callable[[Snapshot], bool]) -> Snapshot:
    """Cumulative statistics reach the shared stats asynchronously: wait until they have."""
    deadline = time.monotonic() + 15
    while True:
        with connect(dsn) as session:
            snap = collect(session)
        if ready(snap) or time.monotonic() > deadline:
            return snap
        time.sleep(0.2)


def heap(snap: Snapshot, name: str) -> Table:
    return next(t for t in snap.tables if t.heap.name == name)


def test_questions_on_a_real_server(embedded_database: str, sandbox: Sandbox) -> None:
    execute(embedded_database, *SETUP)
    first = snapshot_when(embedded_database, lambda s: heap(s, "docs").heap.n_tup_ins == 300)
    execute(embedded_database, *UPDATES)
    later = snapshot_when(
        embedded_database,
        lambda s: (
            (heap(s, "lowhot").heap.n_tup_upd, heap(s, "grow").heap.n_tup_upd) == (2000, 2000)
        ),
    )
    ctx = Context(first, later)
    found = {m.__name__: m.findings(ctx) for m in MODULES}

    lowhot = only(found["vacuumlab.advise.hot"], "public.lowhot")
    assert lowhot.title == "HOT share 0%: updates change an indexed column"
    assert lowhot.evidence["window"] == "interval"
    assert lowhot.recommendations == []
    grow = only(found["vacuumlab.advise.hot"], "public.grow")
    assert grow.title == "100% of updates leave their page; HOT share 0%"
    # One UPDATE of every row is one pass: no rewrite on it, and the finding says why.
    assert sqls(grow) == []
    assert "cover 1.0× its 2,000 rows" in grow.detail

    toast_found = found["vacuumlab.advise.toast"]
    heavy = only(toast_found, "public.docs")
    assert float(heavy.evidence["toast_share"] or 0) > 0.9
    lost = only(toast_found, "public.docs (TOAST)")
    assert sqls(lost) == [
        'ALTER TABLE "public"."docs" SET (toast."autovacuum_vacuum_scale_factor" = \'0.05\');'
    ]
    # The timing of the table whose 2,000 updates left 2,000 dead versions.
    grow_timing = only(found["vacuumlab.advise.timing"], "public.grow")
    assert grow_timing.title.startswith("autovacuum is off for it")

    recs = [r for fs in found.values() for f in fs for r in f.recommendations]
    run_recommendations(recs, embedded_database, sandbox.dsn)
    with psycopg.connect(embedded_database) as conn:
        row = conn.execute(
            "SELECT g.reloptions, t.reloptions FROM pg_class g, pg_class d "
            "JOIN pg_class t ON t.oid = d.reltoastrelid "
            "WHERE g.relname = 'grow' AND d.relname = 'docs'"
        ).fetchone()
    assert row is not None
    assert "fillfactor=100" in row[0]  # held back: no rewrite was recommended
    assert "autovacuum_vacuum_scale_factor=0.05" in row[1]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_findings_answer_their_own_question(module: object) -> None:
    question = module.__name__.rsplit(".", 1)[1]  # type: ignore[attr-defined]
    for scenario in SCENARIOS:
        for f in module.findings(scenario()):  # type: ignore[attr-defined]
            assert f.question == question
            assert all(0 <= r.impact <= 1 for r in f.recommendations)


def test_every_simulated_recommendation_says_what_it_changes() -> None:
    """The queue of timing_queue(): 100 dead tuples/s against a threshold of 250, a worker
    once a minute. Simulated over six hours, naptime 10 s has it vacuumed every 10 s instead
    of every minute and cuts its peak; its own cost limit leaves the rhythm alone (the
    launcher, not the vacuum, sets it) and says so."""
    ctx = timing_queue()
    advice = advise(ctx.snapshot, ctx.later)
    by_setting = {r.setting: r for _, r in advice.recommendations()}
    naptime = by_setting["autovacuum_naptime"].simulated or ""
    assert naptime.startswith("simulated over 6 h, public.jobs: vacuumed every 10 s instead ")
    assert "of every 60 s" in naptime
    limit = by_setting["autovacuum_vacuum_cost_limit"].simulated or ""
    assert "still vacuumed every 60 s" in limit
    # The timing and workers findings carry the simulation's answer too: a worker a minute,
    # so about 360 vacuums in six hours and most of a minute past the threshold each time.
    [jobs] = [f for f in advice.findings if f.question == "timing"]
    assert 355 <= int(jobs.evidence["simulated_vacuums"] or 0) <= 360
    assert 50 < float(jobs.evidence["simulated_wait_s"] or 0) < 60
    assert "Simulated over 6 h: vacuumed every 60 s" in jobs.detail
    [slots] = [f for f in advice.findings if "autovacuum workers busy" in f.title]
    assert slots.evidence["simulated_waiting"] == 0  # waits are the launcher's, not a slot's
    # One snapshot: no rates, nothing to simulate.
    assert all(r.simulated is None for _, r in advise(ctx.later).recommendations())


def test_with_autovacuum_off_a_forced_table_waits_for_the_databases_emergency() -> None:
    """Autovacuum off server-wide: no launcher. A table past its own lower freeze limit (100
    million, age 150 million) is not "taken anyway": the postmaster starts an emergency worker
    only once the database's age passes the server's 200 million. Past that, it is."""
    rel = relation(
        100, "old", reltuples=1000.0, n_dead_tup=5000, frozenxid_age=150_000_000,
        reloptions={"autovacuum_freeze_max_age": "100000000"},
    )  # fmt: skip
    off = {"autovacuum": "off"}

    def waiting(database_age: int) -> Finding:
        base = snapshot(Table(heap=rel, toast=None), values=off)
        here = Database(
            name="app", frozenxid_age=database_age, minmxid_age=0, allow_connections=True
        )
        ctx = context(base.model_copy(update={"databases": [here]}))
        return next(f for f in thresholds.findings(ctx) if f.relation == "public.old")

    young = waiting(150_000_000)
    assert "anyway" not in young.title
    assert "no launcher runs" in young.title
    assert young.severity == "critical"
    old = waiting(250_000_000)
    assert "emergency workers, which take it" in old.title
    assert old.severity == "warning"
    [server] = [f for f in thresholds.findings(context(snapshot(values=off))) if not f.relation]
    assert "still vacuumed for wraparound" not in server.detail
