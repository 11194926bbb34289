"""Several databases in one simulation (simulate_cluster()): the launcher's round of the
databases, do_start_worker()'s choice, and worker slots shared across databases, on small
cases whose launch times follow from autovacuum.c by hand."""

from __future__ import annotations

import pytest

from helpers.subjects import launcher, subject
from vacuumlab.model.simulator import (
    Cluster,
    ClusterDatabase,
    Launcher,
    Subject,
    simulate,
    simulate_cluster,
)
from vacuumlab.model.simulator.cluster import spacing

#: The cost of a vacuum of subject()'s 10 pages holding 300 dead tuples and no rate, as
#: tests/test_simulator.py works it out: an own cost limit of 1 per (1000 × D / COST_10) ms
#: makes it sleep D seconds, plus a few milliseconds of work.
COST_10 = 20 + 10 * 20 * 2 / 31


def slow(order: int, seconds: float, name: str = "t") -> Subject:
    """Due now (300 dead tuples), its vacuum sleeping ``seconds`` on a cost limit of its own."""
    return subject(order, name, dead=300.0, own_limit=1.0, own_delay_ms=1000 * seconds / COST_10)


def queue(order: int, name: str = "q") -> Subject:
    """Due now and again within a second of each vacuum: every visit finds it."""
    return subject(order, name, dead=300.0, dead_per_second=1000.0)


def visits(out: Cluster, count: int) -> list[tuple[float, str]]:
    return [(round(v.at, 3), v.database) for v in out.visits[:count]]


def test_a_busy_databases_relations_wait_on_slots_the_other_databases_hold() -> None:
    """Two slots, naptime 60 s, three databases 20 s apart in pg_database's order b, c, a.
    b's worker at 0 s takes two 300-s vacuums in turn, c's at 20 s two 400-s ones: both slots
    are busy when a's turn comes at 40 s, with five relations due since 0 s. The launcher
    waits for a worker to exit: b's, once its list is done at about 600 s (ending one vacuum
    does not free the slot, the worker goes on to the next). a is then the database visited
    least recently and gets that slot; its relations go one after the other."""
    b = ClusterDatabase("b", [slow(1, 300), slow(2, 300)])
    c = ClusterDatabase("c", [slow(1, 400), slow(2, 400)])
    a = ClusterDatabase("a", [slow(order, 10, "a") for order in range(1, 6)])
    out = simulate_cluster([b, c, a], launcher(workers=2), 1200)

    b_spans = [s for s in out.outcome.spans if out.database(s.subject) == "b"]
    assert [s.start for s in b_spans] == [0.0, pytest.approx(300.0, abs=0.1)]
    freed = b_spans[-1].end  # b's worker exits
    assert freed == pytest.approx(600.0, abs=0.1)
    assert visits(out, 3) == [(0.0, "b"), (20.0, "c"), (round(freed, 3), "a")]
    assert [(v.wraparound, v.worked) for v in out.visits[:3]] == [(False, True)] * 3

    first = out.find("a", "public.a1")
    assert first is not None
    wait = out.waited(first)
    assert out.outcome.tally(first).starts == [freed]
    assert wait.waited == pytest.approx(freed)  # due from the start of the window
    # Every slot busy from c's start at 20 s, one held by b's worker, one by c's.
    assert wait.waited_full == pytest.approx(freed - 20.0)
    assert wait.held_by == {"b": pytest.approx(freed - 20.0), "c": pytest.approx(freed - 20.0)}

    a_waits = [w for w in out.waits() if w.database == "a"]
    assert [w.label for w in a_waits] == [f"public.a{n}" for n in (5, 4, 3, 2, 1)]
    for w in a_waits:
        assert w.vacuums == 1
        assert w.waited >= freed
        assert w.held_by["b"] == pytest.approx(freed - 20.0)  # b's worker until it exited
        assert w.held_by["c"] == pytest.approx(w.waited_full)  # c's all along
        # Behind a1 in their own worker's list the rest waited on a's slot too.
        assert sum(w.held_by.values()) == pytest.approx(2 * w.waited_full)

    # Alone, a's first relation gets the launcher's first worker at once.
    alone = simulate_cluster([a], launcher(workers=2), 1200)
    assert alone.outcome.tally(0).starts == [0.0]
    assert alone.waits()[-1].waited == 0.0

    # a's worker exits at about 650 s. a, visited at 600 s, is skipped (within the naptime);
    # b, visited least recently, gets a worker that finds nothing. The tail's time (c's, 80 s)
    # long past, the list is rebuilt 20 s apart from its head, b first: b at 670 s, a, c.
    done = freed + 5 * 10.0 + 0.01
    assert visits(out, 7)[3:] == [
        (pytest.approx(done, abs=0.01), "b"),
        (pytest.approx(done + 20, abs=0.01), "b"),
        (pytest.approx(done + 40, abs=0.01), "a"),
        (pytest.approx(done + 60, abs=0.01), "c"),
    ]
    assert out.slot_seconds()["a"] == pytest.approx(50.0, abs=0.1)


def test_the_launcher_visits_the_databases_in_turn_a_naptime_over_their_number_apart() -> None:
    """Three databases with free slots, naptime 60 s: a worker every 20 s, in pg_database's
    order, each database once a naptime (rebuild_database_list(), launch_worker())."""
    dbs = [ClusterDatabase(name, [queue(1, name)]) for name in ("b", "c", "a")]
    out = simulate_cluster(dbs, launcher(), 200)
    assert visits(out, 10) == [
        (20.0 * i, name) for i, name in zip(range(10), ["b", "c", "a"] * 4, strict=False)
    ]
    # Each database's queue is vacuumed at its visits (the one at 200 s ends past the window).
    starts = {out.database(d): out.outcome.tally(d).starts for d in range(3)}
    assert starts == {"b": [0, 60, 120, 180], "c": [20, 80, 140], "a": [40, 100, 160]}
    # The first wake-up half a spacing in, unless given.
    unset = simulate_cluster(dbs, launcher(first_launch_s=None), 100)
    assert [v.at for v in unset.visits] == [10.0, 30.0, 50.0, 70.0, 90.0]
    # A database with nothing to vacuum takes its turn; its worker holds no slot.
    idle = simulate_cluster([*dbs, ClusterDatabase("postgres", [])], launcher(), 59)
    assert visits(idle, 4) == [(0.0, "b"), (15.0, "c"), (30.0, "a"), (45.0, "postgres")]
    assert [v.worked for v in idle.visits] == [True, True, True, False]


def test_with_many_databases_the_launcher_wakes_no_more_often_than_every_110_ms() -> None:
    """naptime / databases in whole milliseconds, 110 ms when that is 100 ms or less
    (MIN_AUTOVAC_SLEEPTIME × 1.1 in rebuild_database_list()). Twenty databases and a naptime
    of 1 s: a worker every 110 ms, so each database gets one every 2.2 s, not every naptime.
    From 1.1 s db0, visited at 0 s and due again at 1 s, is the one visited least recently
    of those not visited within the naptime (do_start_worker()), ahead of db10 due then."""
    assert spacing(60.0, 3) == 20.0
    assert spacing(60.0, 7) == 8.571
    assert spacing(1.0, 10) == pytest.approx(0.11)
    assert spacing(1.0, 9) == 0.111
    names = [f"db{i}" for i in range(20)]
    out = simulate_cluster(
        [ClusterDatabase(n, [queue(1, n)]) for n in names], launcher(naptime_s=1.0), 6.0
    )
    assert [v.at for v in out.visits] == pytest.approx([0.11 * i for i in range(55)])
    seen = [v.database for v in out.visits]
    assert seen[:12] == [*names[:10], "db0", "db10"]
    for start in range(10, len(seen) - 20):  # the round, once db0 came back into it
        assert sorted(seen[start : start + 20]) == sorted(names)


def test_the_launcher_sleeps_at_least_100_ms() -> None:
    """launcher_determine_sleep() never sleeps under MIN_AUTOVAC_SLEEPTIME. One slot, two
    databases 30 s apart: b's worker holds the slot past a's turn at 30 s, until about
    59.95 s. Its exit wakes the launcher, which sends a worker to a (nothing to do there);
    b's time, 60 s, is then 50 ms away: the launcher sleeps 100 ms, and b's worker comes at
    about 60.05 s."""
    dbs = [ClusterDatabase("b", [slow(1, 59.9)]), ClusterDatabase("a", [])]
    out = simulate_cluster(dbs, launcher(workers=1), 90)
    exited = out.outcome.spans[0].end
    assert 59.9 < exited < 60.0 - 0.01
    assert visits(out, 3) == [(0.0, "b"), (round(exited, 3), "a"), (round(exited + 0.1, 3), "b")]


def test_a_database_past_autovacuum_freeze_max_age_is_visited_first() -> None:
    """do_start_worker(): a database past autovacuum_freeze_max_age gets the worker at every
    wake-up of the launcher, ahead of the round, and the others none while it stays so."""
    b = ClusterDatabase("b", [queue(1, "b")])
    c = ClusterDatabase("c", [queue(1, "c")])
    old = ClusterDatabase("a", [queue(1, "a")], frozenxid_age=250_000_000)
    out = simulate_cluster([b, c, old], launcher(), 200)
    assert visits(out, 10) == [(20.0 * i, "a") for i in range(10)]
    assert all(v.wraparound for v in out.visits)
    assert [out.outcome.tally(d).vacuums for d in range(3)] == [0, 0, 10]

    # Of two past it, the older datfrozenxid; xid wraparound before multixact.
    older = ClusterDatabase("c", [], frozenxid_age=300_000_000)
    assert {v.database for v in simulate_cluster([b, old, older], launcher(), 100).visits} == {"c"}
    mxid = ClusterDatabase("b", [], minmxid_age=500_000_000)
    assert {v.database for v in simulate_cluster([mxid, c, old], launcher(), 100).visits} == {"a"}
    assert {v.database for v in simulate_cluster([mxid, c], launcher(), 100).visits} == {"b"}
    lowered = launcher(multixact_freeze_max_age=100_000_000)  # member space pressure
    mild = ClusterDatabase("c", [], minmxid_age=200_000_000)
    assert {v.database for v in simulate_cluster([b, mild], lowered, 100).visits} == {"c"}


def test_a_database_that_passes_the_limit_in_the_window_is_visited_first_from_then() -> None:
    """datfrozenxid's age 199 million at 1,000 xids/s: past 200 million after 1,000 s. The
    wake-up at 1,000 s finds it at the limit, not past it (TransactionIdPrecedes()); from
    1,020 s it gets every worker."""
    dbs = [
        ClusterDatabase("b", [queue(1, "b")]),
        ClusterDatabase("c", [queue(1, "c")]),
        ClusterDatabase("a", [queue(1, "a")], frozenxid_age=199_000_000),
    ]
    out = simulate_cluster(dbs, launcher(xids_per_second=1000.0), 1200)
    before = [v for v in out.visits if v.at <= 1000.0]
    after = [v for v in out.visits if v.at > 1000.0]
    assert [v.database for v in before] == ["b", "c", "a"] * 17
    assert not any(v.wraparound for v in before)
    assert [(v.at, v.database, v.wraparound) for v in after] == [
        (1000.0 + 20.0 * k, "a", True) for k in range(1, 11)
    ]


def test_workers_in_every_database_share_the_cost_limit() -> None:
    """autovac_recalculate_workers_for_balance() counts the workers of every database: two
    large balanced vacuums in two databases, started 110 ms apart, each sleep about twice as
    long as one alone; their unthrottled work is not shared."""
    big = {"dead": 100_000.0, "pages": 100_000.0}
    fast = launcher(naptime_s=0.2)  # two databases 110 ms apart

    def alone(given: Launcher) -> float:
        out = simulate_cluster([ClusterDatabase("b", [subject(1, **big)])], given, 200)
        return out.outcome.tally(0).durations[0]

    work = alone(launcher(naptime_s=0.2, cost_delay_ms=0.0))  # no cost-based sleep
    sleep = alone(fast) - work
    assert sleep > 5 * work
    both = simulate_cluster(
        [ClusterDatabase("b", [subject(1, **big)]), ClusterDatabase("c", [subject(1, **big)])],
        fast,
        200,
    )
    assert [v.at for v in both.visits[:2]] == [0.0, pytest.approx(0.11)]
    for d in (0, 1):
        assert both.outcome.tally(d).durations[0] == pytest.approx(2 * sleep + work, rel=0.01)


@pytest.mark.parametrize(
    "case",
    ["queue", "slots busy", "pg_class order", "long vacuums", "forced", "unset first launch"],
)
def test_one_database_alone_gives_the_single_database_run(case: str) -> None:
    """The launcher's round of one database is today's schedule: a worker every naptime, and
    with every slot busy at the first worker to exit."""
    subjects, given, seconds = {
        "queue": ([subject(1, dead_per_second=100.0)], launcher(), 3600),
        "slots busy": ([slow(1, 90), subject(2, dead=300.0)], launcher(workers=1), 400),
        "pg_class order": (
            [
                subject(1, label="public.t5 (TOAST)", is_toast=True, dead=300.0),
                *(subject(order, dead=300.0, dead_per_second=5.0) for order in (7, 3, 5)),
            ],
            launcher(workers=1, naptime_s=10.0),
            600,
        ),
        "long vacuums": (
            [subject(order, dead=100_000.0, pages=100_000.0) for order in range(6)],
            launcher(workers=3, naptime_s=1.0),
            900,
        ),
        "forced": (
            [subject(1, enabled=False, dead_per_second=100.0, xid_age=199_000_000.0)],
            launcher(xids_per_second=1000.0),
            3600,
        ),
        "unset first launch": (
            [slow(1, 30), subject(2, dead=200.0, dead_per_second=10.0)],
            launcher(first_launch_s=None, workers=2),
            600,
        ),
    }[case]
    single = simulate(subjects, given, seconds)
    cluster = simulate_cluster([ClusterDatabase("app", subjects)], given, seconds)
    assert cluster.outcome.launches == single.launches > 0
    assert cluster.outcome.spans == single.spans
    assert cluster.outcome.tallies == single.tallies
    assert len(cluster.visits) == single.launches
    assert {v.database for v in cluster.visits} == {"app"}
