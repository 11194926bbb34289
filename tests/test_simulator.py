"""The launcher and worker simulation: each rule of autovacuum.c it follows, on small cases
whose answer can be worked out by hand."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from helpers.advise import changed, relation, snapshot
from helpers.subjects import launcher, subject
from vacuumlab.errors import VacuumlabError
from vacuumlab.model import whatif
from vacuumlab.model.cost import clean_after
from vacuumlab.model.forecast import forecast, inputs
from vacuumlab.model.pages import pages_read
from vacuumlab.model.simulator import (
    FIXED_S,
    FLUSHED_AFTER_S,
    Launcher,
    Span,
    dead_after_vacuum,
    first_starts,
    simulate,
)
from vacuumlab.records.simulation import Simulation
from vacuumlab.records.snapshot import Database, Snapshot, Table, XidState

#: The cost of a vacuum of subject()'s 10 pages holding 300 dead tuples, with no rate (its
#: changes taken as old): each page a hit and a hit on the free space map, 20; every page
#: changed, 30 times, and clean only when its last change is older than the last checkpoint,
#: 2 / 31 of them (cost.clean_after()): 200 × 2 / 31 more.
COST_10 = 20 + 10 * 20 * 2 / 31


def heap_cost(read: float, pages: float, touched: float, clean: float) -> float:
    """What a vacuum reading ``read`` of ``pages`` pages pays when ``touched`` rows changed at
    random: each page read a hit and a hit on the free space map; each changed page 20 in the
    share that is clean (cost.clean_after() of ``clean``, the share for pages changed once)."""
    changed = pages * (1 - math.exp(-touched / pages))
    return read * 2 + changed * 20 * clean_after(clean, touched, changed)


def work(read: float, pages: float, touched: float, clean: float, index: float = 0.0) -> float:
    """The unthrottled seconds (model/cost.py, measured by bench/vacuum_work_time.py): 2 ms,
    3 µs a heap page read, 4 µs more a page changed, 15 µs more for those clean (a full-page
    image), 20 µs an index page or a heap page visited again. Changed at random as in
    heap_cost(), never more than the pages read."""
    changed = min(pages * (1 - math.exp(-touched / pages)), read)
    image = changed * clean_after(clean, touched, changed)
    return 0.002 + read * 3e-6 + changed * 4e-6 + image * 1.5e-5 + index * 2e-5


def test_a_queue_is_vacuumed_once_per_naptime_when_it_passes_its_threshold_faster() -> None:
    """100 dead tuples/s pass the 250 threshold in 2.5 s, but a worker comes once a minute:
    60 vacuums in an hour, each finding about a minute of dead tuples."""
    out = simulate([subject(1, dead_per_second=100.0)], launcher(), 3600)
    tally = out.tallies[0]
    assert out.launches == 61  # at 0, 60, …, 3,600 s
    # The launch at 0 finds it below its threshold; the one at 3,600 s ends past the window.
    assert tally.vacuums == 59
    assert tally.starts[:3] == [60.0, 120.0, 180.0]
    assert tally.peak_dead == pytest.approx(6000, rel=0.01)
    # Each waited from crossing its threshold (2.5 s after the last vacuum) to the next worker.
    assert tally.max_wait == pytest.approx(60 - 2.5, abs=0.5)


def test_a_shorter_naptime_cuts_the_peak() -> None:
    slow = simulate([subject(1, dead_per_second=100.0)], launcher(), 3600).tallies[0]
    fast = simulate([subject(1, dead_per_second=100.0)], launcher(naptime_s=10.0), 3600)
    assert fast.tallies[0].vacuums > 5 * slow.vacuums
    assert fast.tallies[0].peak_dead < slow.peak_dead / 5


def test_the_counter_after_a_vacuum_holds_what_died_while_it_ran() -> None:
    """A slow vacuum (own cost limit 1, every page dirtied): from 14 the counter restarts from
    what the backends flush after its report (FLUSHED_AFTER_S of its rate); before 14 from
    the share of the tuples that died during it it found recently dead (COUNTED_DURING)."""
    s = subject(1, dead=300.0, dead_per_second=1.0, own_limit=1.0, own_delay_ms=10.0)
    for prunes, left in ((True, lambda d: min(FLUSHED_AFTER_S, d)), (False, lambda d: 0.5 * d)):
        out = simulate([s], launcher(prunes_during=prunes), 100)
        duration = out.tallies[0].durations[0]
        # Throttled: its changes are 300 s old, half as clean as COST_10 takes them: 26.5 / 1
        # per 10 ms, about 0.27 s.
        assert duration > 0.25
        assert out.tallies[0].peak_dead == pytest.approx(300 + duration, rel=0.01)
        end = out.spans[0].end
        # After it: what it left, then 1/s until the window closes.
        assert out.tallies[0].peak_dead >= left(duration) + (100 - end)
        assert dead_after_vacuum(1.0, duration, prunes=prunes) == pytest.approx(left(duration))


def test_a_long_vacuum_leaves_the_flush_lag_not_half_of_what_died() -> None:
    """The mixed scheduling workload's busy table: 4,112 dead tuples a second, a 23-s vacuum.
    PostgreSQL 18 showed 1,604 dead tuples a second after it ended; half of what died
    meanwhile, 48,000, was over its threshold of 20,050, so the simulator vacuumed it again at
    the next launch, 12 times in 345 s where PostgreSQL did 9, and the churners it shares the
    one worker with 43 times where PostgreSQL did 50."""
    assert dead_after_vacuum(4112.0, 23.4) == pytest.approx(4112 * FLUSHED_AFTER_S)
    assert dead_after_vacuum(4112.0, 23.4) < 20_050 / 5
    assert dead_after_vacuum(4112.0, 23.4, prunes=False) > 20_050  # before 14


def test_a_worker_builds_its_list_once_and_a_later_crossing_waits_for_the_next_worker() -> None:
    """t1 is due at the first launch and takes 30 s; t2 passes its threshold at 5 s, while
    the only worker is busy with the list it built at 0: t2 waits for the launch at 60 s."""
    slow = subject(1, dead=300.0, own_limit=1.0, own_delay_ms=1000 * 30 / COST_10)
    late = subject(2, dead=200.0, dead_per_second=10.0)  # passes 250 at 5 s
    out = simulate([slow, late], launcher(workers=3), 120)
    assert out.tallies[0].starts == [0.0]
    assert out.tallies[0].durations[0] == pytest.approx(30.0 + FIXED_S, rel=0.01)
    assert out.tallies[1].starts[0] == 60.0
    assert out.tallies[1].max_wait == pytest.approx(55.0, abs=0.1)


def test_one_worker_goes_through_its_list_in_pg_class_order_heaps_before_toast() -> None:
    toast = subject(1, label="public.t5 (TOAST)", is_toast=True, dead=300.0)
    heaps = [subject(order, dead=300.0) for order in (7, 3, 5)]
    out = simulate([toast, *heaps], launcher(workers=1), 30)
    order = [out.subjects[span.subject].label for span in out.spans]
    assert order == ["public.t3", "public.t5", "public.t7", "public.t5 (TOAST)"]


def test_the_list_follows_pg_class_physical_order_not_the_oids() -> None:
    """do_autovacuum() lists relations as its scan of pg_class meets their rows: a table whose
    row was rewritten (ALTER TABLE ... SET) comes after younger ones, whatever its oid."""
    heaps = [
        subject(3, dead=300.0, position=9 * 65536 + 1),  # its row moved to block 9
        subject(5, dead=300.0, position=2),
        subject(7, dead=300.0, position=3),
    ]
    out = simulate(heaps, launcher(workers=1), 30)
    order = [out.subjects[span.subject].label for span in out.spans]
    assert order == ["public.t5", "public.t7", "public.t3"]


def most_at_once(spans: list[Span]) -> int:
    edges = sorted([(s.start, 1) for s in spans] + [(s.end, -1) for s in spans])
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def test_worker_slots_bound_how_many_vacuums_run_at_once() -> None:
    """Six long vacuums due at once, a launch every second: the first worker's list holds all
    six, later workers skip the one in progress and take the next."""
    tables = [subject(order, dead=100_000.0, pages=100_000.0) for order in range(6)]
    one = simulate(tables, launcher(workers=1, naptime_s=1.0), 3600)
    three = simulate(tables, launcher(workers=3, naptime_s=1.0), 3600)
    assert most_at_once(one.spans) == 1
    assert most_at_once(three.spans) == 3
    assert [s.start for s in three.spans[:3]] == [0.0, 1.0, 2.0]
    assert max(s.end for s in three.spans) < max(s.end for s in one.spans)


def test_balanced_workers_share_the_cost_limit_and_own_settings_do_not() -> None:
    """Alone, a first vacuum of 100,000 pages, none all-visible, reads them all and sleeps
    for their cost (heap_cost()) at 200 per 2 ms; with two more workers sharing the limit
    three times as long. One with its own limit keeps its pace and leaves the others a
    larger share."""
    big = {"dead": 100_000.0, "pages": 100_000.0}
    fast = launcher(naptime_s=0.01)
    alone = simulate([subject(1, **big)], fast, 100).tallies[0]
    shared = simulate([subject(order, **big) for order in (1, 2, 3)], fast, 100).tallies
    own = simulate(
        [
            subject(1, **big, own_limit=200.0, own_delay_ms=2.0),
            subject(2, **big),
            subject(3, **big),
        ],
        fast,
        100,
    ).tallies
    visited = 100_000
    sleep = heap_cost(visited, visited, 100_000, 1.0) / 200 * 0.002
    unthrottled = work(visited, visited, 100_000, 1.0)  # not shared
    assert alone.durations[0] == pytest.approx(sleep + unthrottled, rel=0.001)
    assert shared[1].durations[0] == pytest.approx(3 * sleep + unthrottled, rel=0.01)
    assert own[0].durations[0] == pytest.approx(alone.durations[0], rel=0.01)
    assert own[1].durations[0] < shared[1].durations[0]


def test_the_launcher_splits_naptime_among_databases_but_not_below_100_ms() -> None:
    assert Launcher(naptime_s=60, workers=3, databases=4).launch_every_s == 60
    assert Launcher(naptime_s=1, workers=3, databases=20).launch_every_s == pytest.approx(2.0)
    danger = Launcher(naptime_s=60, workers=3, databases=4, in_danger=True)
    assert danger.launch_every_s == 15


def test_with_every_slot_busy_the_launch_waits_for_a_worker_to_exit() -> None:
    long = subject(1, dead=300.0, own_limit=1.0, own_delay_ms=1000 * 90 / COST_10)
    other = subject(2, dead=300.0)
    out = simulate([long, other], launcher(workers=1), 200)
    # The launch due at 60 s finds no slot; the worker exits at about 90 s and a new one
    # starts at once, then the schedule goes on from there.
    assert out.tallies[1].starts[0] == pytest.approx(90.0 + FIXED_S, abs=0.1)


def test_autovacuum_off_still_vacuums_past_the_freeze_limit() -> None:
    off = subject(1, enabled=False, dead_per_second=100.0, xid_age=199_000_000.0)
    out = simulate([off], launcher(xids_per_second=1000.0), 3600)
    tally = out.tallies[0]
    # The age passes 200 million at 1,000 s; the next worker (at 1,020 s) is forced to it.
    assert tally.vacuums == 1
    assert tally.forced == 1
    assert tally.starts[0] == pytest.approx(1020.0)
    # Aggressive too: its age comes back to vacuum_freeze_min_age, so once is enough.
    quiet = simulate([replace(off, dead_per_second=0.0)], launcher(), 3600).tallies[0]
    assert quiet.vacuums == 0


def test_the_insert_threshold_triggers_and_reltuples_grow_with_the_table() -> None:
    log = subject(
        1, insert_base=1000.0, inserts_per_second=50.0, live_per_second=50.0, reltuples=0.0
    )
    out = simulate([log], launcher(naptime_s=10.0), 3600).tallies[0]
    gaps = [b - a for a, b in zip(out.starts, out.starts[1:], strict=False)]
    assert out.vacuums >= 5
    assert gaps[-1] > gaps[0]  # 0.2 × a growing reltuples: further apart as the log grows


# -- from snapshots --------------------------------------------------------------------------


def queue_snapshots(**later: object) -> tuple:
    jobs = relation(100, "jobs", reltuples=1000.0, relpages=20, n_live_tup=1000)
    quiet = relation(101, "config", reltuples=10.0, relpages=1, n_live_tup=10)
    after = changed(jobs, n_dead_tup=6000, n_tup_ins=6000, n_tup_del=6000, **later)
    return (
        snapshot(Table(heap=jobs, toast=None), Table(heap=quiet, toast=None)),
        snapshot(Table(heap=after, toast=None), Table(heap=quiet, toast=None), seconds=60),
    )


def test_forecast_takes_rates_from_n_dead_tup_and_leaves_quiet_tables_out() -> None:
    before, after = queue_snapshots(n_tup_upd=50_000)
    sim = forecast(before, after, hours=1)
    jobs = sim.relation("public.jobs")
    assert jobs is not None
    assert jobs.dead_per_second == 100.0  # 6,000 in 60 s; n_tup_upd does not count
    assert sim.relation("public.config") is None
    assert sim.quiet == 1
    assert jobs.vacuums == 60
    assert jobs.mean_interval_s == pytest.approx(60.0)
    assert Simulation.model_validate_json(sim.dump_json()) == sim


def test_a_what_if_changes_the_forecast() -> None:
    before, after = queue_snapshots()
    base = forecast(before, after, hours=1).relation("public.jobs")
    table = forecast(
        before,
        after,
        hours=1,
        changes=[whatif.parse("public.jobs.autovacuum_enabled=off")],
    ).relation("public.jobs")
    nap = forecast(before, after, hours=1, changes=[whatif.parse("autovacuum_naptime=10")])
    assert base is not None
    assert table is not None
    assert table.vacuums == 0
    assert base.vacuums == 60
    assert nap.changes == ["autovacuum_naptime=10"]
    assert nap.launch_every_s == 10
    assert nap.relations[0].peak_dead < base.peak_dead


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("autovacuum_naptime", "setting=value"),
        ("a.b=1", "schema.table.setting"),
        ("public.nope.autovacuum_enabled=off", "no table public.nope"),
    ],
)
def test_what_ifs_that_cannot_apply_say_why(text: str, message: str) -> None:
    before, after = queue_snapshots()
    with pytest.raises(VacuumlabError, match=message):
        forecast(before, after, hours=1, changes=[whatif.parse(text)])


def test_a_vacuum_reads_the_pages_changed_since_the_last_one_and_the_short_runs() -> None:
    """The first vacuum of 10,000 pages with none all-visible reads them all; a minute later
    about 600 rows have changed at random, on about 580 pages. PostgreSQL skips only runs of at
    least 32 all-visible pages (vacuumlazy.c), and with a changed page every 17 pages or so
    most runs are shorter: the next vacuum reads about 5,900 pages, not 580, as the advisor's
    model says (pages_read()). (Each pays for the changed pages it dirties in the
    share clean_share() gives for changes that old.)"""
    from vacuumlab.model.simulator import clean_share

    s = subject(1, dead=300.0, dead_per_second=10.0, pages=10_000.0)
    first, second = simulate([s], launcher(), 130).tallies[0].durations[:2]

    def expected(read: float, touched: float, age: float) -> float:
        cost = heap_cost(read, 10_000, touched, clean_share(age))
        return cost / 200 * 0.002 + work(read, 10_000, touched, clean_share(age))

    assert first == pytest.approx(expected(10_000, 300, 300 / 10), rel=0.01)
    visited = pages_read(
        10_000,
        counted=10_000,
        skippable=10_000,
        touched=10 * 60,
        inserted=0,
        tuples_per_page=1,
        spread="random",
    )
    assert visited == pytest.approx(5900, rel=0.01)
    assert second == pytest.approx(expected(visited, 600, 60 - first), rel=0.05)


def test_changes_before_the_window_reach_the_first_vacuum() -> None:
    """relallvisible counted at the last vacuum; the rows updated since, before the first
    snapshot, cleared bits too: the first simulated vacuum reads what they left unskippable,
    not just the pages that were not all-visible (none here)."""
    kept = subject(1, dead=300.0, pages=10_000.0, all_visible=10_000.0)
    touched = subject(1, dead=300.0, pages=10_000.0, all_visible=10_000.0, touched=300.0)
    [none] = simulate([kept], launcher(), 10).tallies[0].durations
    [some] = simulate([touched], launcher(), 10).tallies[0].durations
    # The last page only, a hit, one on the free space map and dirtied: 22 cost units.
    assert none == pytest.approx(work(1, 10_000, 300, 1.0) + 22 / 200 * 0.002, rel=0.02)
    read = pages_read(
        10_000,
        counted=10_000,
        skippable=10_000,
        touched=300,
        inserted=0,
        tuples_per_page=1,
        spread="random",
    )
    assert read > 2500
    cost = heap_cost(read, 10_000, 300, 1.0)
    assert some == pytest.approx(cost / 200 * 0.002 + work(read, 10_000, 300, 1.0), rel=0.01)


def test_vacuum_pays_no_dirty_cost_for_pages_the_workload_left_dirty() -> None:
    """MarkBufferDirty() (bufmgr.c) charges vacuum_cost_page_dirty only when the buffer was
    clean: a hot table's pages, changed seconds ago, are still dirty, so its vacuum pays the
    page hits alone. Measured on PostgreSQL 18 (scheduling study, 5,000-row tables every few
    seconds): "buffer usage: 340 hits, 0 reads, 0 dirtied", 0.33 s at limit 10 / 10 ms,
    where paying every dirtied page predicted 2.6 s."""
    from vacuumlab.model.simulator import CHECKPOINT_S, clean_share

    assert clean_share(0.0) == 0.0
    assert clean_share(CHECKPOINT_S) == pytest.approx(0.5)
    assert clean_share(math.inf) == 1.0
    hot = subject(1, pages=100.0, dead_per_second=100.0, dead=0.0)
    fast = launcher(naptime_s=5.0, workers=1, cost_limit=10.0, cost_delay_ms=10.0)
    outcome = simulate([hot], fast, 60.0)
    second = outcome.tallies[0].durations[1]  # changes at most a few seconds old
    heap = 100 * (1 - math.exp(-250 / 100))  # the pages its ~250 dead tuples touch
    assert second < heap * (1 + 20 * 0.05) * 10 / 10 / 1000 + 0.05
    cold = subject(1, pages=100.0, dead_per_second=0.25, dead=0.0)  # 1,000 s to its threshold
    (first,) = simulate([cold], fast, 1_200.0).tallies[0].durations
    # Its changes are old: it pays for dirtying the pages whose last change a checkpoint
    # has written since.
    assert first > heap * 20 * clean_after(1.0, 250, heap) * 10 / 10 / 1000


def test_a_table_what_if_rebuilds_only_that_table_and_gives_the_same_forecast() -> None:
    before, after = queue_snapshots()
    change = whatif.parse("public.jobs.autovacuum_vacuum_scale_factor=0.01")
    full = inputs(before, after, [change])
    quick = inputs(before, after).with_tables_changed([change])
    assert quick is not None
    assert quick.subjects == full.subjects
    assert inputs(before, after).with_tables_changed([whatif.parse("autovacuum_naptime=5")]) is None


def test_after_its_indexes_vacuum_revisits_the_heap_pages_that_held_dead_tuples() -> None:
    """lazy_vacuum_heap_rel(): once the index entries are gone, the heap pages with dead items
    are visited again (each a buffer hit, already dirty). 1,000 dead tuples on 1,000 pages
    with an index of 100: heap_cost() for the scan, 100 for the index and its 100 pages
    dirtied (10 dead entries each, clean 2 / 11 of the time), 632 for the pages the dead
    tuples sit on; at a limit of 1 per ms every cost unit is a millisecond."""
    s = subject(
        1, dead=1000.0, pages=1000.0, n_indexes=1, index_pages=100.0, own_limit=1.0,
        own_delay_ms=1.0,
    )  # fmt: skip
    (duration,) = simulate([s], launcher(), 60).tallies[0].durations
    second = 1000 * (1 - math.exp(-1))
    index_pages = 100 * (1 - math.exp(-10))
    index_dirtied = index_pages * 20 * clean_after(1.0, 1000, index_pages)
    cost = heap_cost(1000, 1000, 1000, 1.0) + 100 + index_dirtied + second
    unthrottled = work(1000, 1000, 1000, 1.0, index=100 + second)
    assert duration == pytest.approx(cost / 1000 + unthrottled, rel=0.001)


@pytest.mark.parametrize(("rate", "again"), [(1000.0, True), (90.0, False)])
def test_a_worker_rechecks_a_relation_that_another_worker_vacuumed_meanwhile(
    rate: float, again: bool
) -> None:
    """table_recheck_autovac() reads the counters again before each relation of the list.
    The worker started at 0 lists t1 and t2 and spends 9.5 s on t1, while the workers launched
    every second take t2. At 1,000 dead tuples/s t2 has passed its threshold again when the
    first worker reaches it, which takes it at once; at 90/s (2.8 s to its threshold, last
    vacuumed at 7 s) it has not, and the first worker skips it and exits."""
    long = subject(1, dead=300.0, own_limit=1.0, own_delay_ms=1000 * 9.5 / COST_10)
    hot = subject(2, dead=300.0, dead_per_second=rate)
    out = simulate([long, hot], launcher(naptime_s=1.0, workers=2), 12)
    (first,) = [s for s in out.spans if s.subject == 0]
    assert first.end == pytest.approx(9.5 + FIXED_S, abs=0.01)
    taken = [s for s in out.spans if s.subject == 1 and s.start == first.end]
    assert bool(taken) is again
    assert all(s.worker == first.worker for s in taken)


def test_first_starts_stop_early_and_give_the_tallies_first_starts() -> None:
    """first_starts() stops once every relation in the loop has finished a vacuum; what it
    gives is simulate()'s first starts all the same: relations due at once, crossing later at
    several rates, a TOAST relation, one with its own (slow) cost settings that holds a worker,
    one that never gets a worker within the window and one whose only vacuum ends past it."""
    subjects = [
        subject(1, dead=300.0, dead_per_second=5.0),
        subject(2, dead=100.0, dead_per_second=20.0),
        subject(3, dead_per_second=0.5),
        subject(4, label="public.t4 (TOAST)", is_toast=True, dead=400.0),
        subject(5, dead=300.0, own_limit=1.0, own_delay_ms=1000 * 30 / COST_10),
        subject(6, inserted=900.0, insert_base=1000.0, inserts_per_second=3.0),
        subject(7, dead_per_second=0.25),  # crosses 1,000 s in
        subject(8),  # quiet: never in the loop
        subject(9, dead=260.0, own_limit=1.0, own_delay_ms=1000 * 900 / COST_10, pages=10.0),
    ]
    for workers, seconds in ((1, 1000.0), (2, 1000.0), (3, 3600.0), (1, 700.0)):
        given = launcher(workers=workers)
        whole = simulate(subjects, given, seconds)
        expected = {
            s.order: tally.starts[0]
            for s, tally in zip(whole.subjects, whole.tallies, strict=True)
            if tally.starts
        }
        assert first_starts(subjects, given, seconds) == expected
    # The last case: t9's vacuum (15 minutes) ends past the window, and those due after the
    # worker's list was built wait behind it.
    assert set(expected) == {1, 5}


def test_an_end_moved_earlier_leaves_no_stale_end_for_the_next_vacuum_of_the_relation() -> None:
    """Two balanced vacuums share the limit: t1 (2,000 pages) starts at 0, t2 (10,000 pages)
    at 0.01 s, and t2's end is set for its pace at half the limit. t1 finishes first and t2's
    end moves earlier, to its pace at the whole limit; at 1,000 dead tuples/s t2 is due again
    at once and a worker starts it again at the next launch, long before the end first set.
    That second vacuum runs alone from start to end: it lasts what its cost gives at the whole
    limit, not until the end set for the first one. Every vacuum is aggressive (it reads every
    page) and pays no dirty cost, so each page costs 2 (a hit and a hit on the free space map)
    and the lengths are plain arithmetic."""
    plain = {"page_dirty": 0.0, "aggressive_age": 0.0, "freeze_min_age": 0.0}
    small = subject(1, dead=300.0, pages=2_000.0, **plain)
    hot = subject(2, dead=300.0, pages=10_000.0, dead_per_second=1000.0, **plain)
    fast = launcher(naptime_s=0.01, cost_limit=200.0, cost_delay_ms=20.0)
    out = simulate([small, hot], fast, 6.0)
    per_page_alone = 2 / 200 * 0.02  # the sleep for two cost units
    per_page_shared = 2 / 100 * 0.02
    # The work, 2 % of the length: its changed pages (300 rows, more by the second vacuum,
    # clean or not) move it by a few ms.
    unthrottled = work(10_000, 10_000, 300, 0.0)
    (first_small,) = [s for s in out.spans if s.subject == 0]
    first, second = [s for s in out.spans if s.subject == 1][:2]
    assert first_small.end < first.end  # the smaller finishes first ...
    stale = first.start + unthrottled + 10_000 * per_page_shared
    assert first.end < stale  # ... and the other's end moved earlier
    assert second.start < stale  # started again before the end first set for the first one
    assert second.end - second.start == pytest.approx(
        unthrottled + 10_000 * per_page_alone, rel=0.005
    )


def test_since_15_a_normal_vacuum_that_reads_every_unfrozen_page_advances_relfrozenxid() -> None:
    """heap_vacuum_rel() (vacuumlazy.c, 15+) sets a new relfrozenxid after a normal vacuum
    unless it skipped an all-visible page that was not all-frozen. A 10-page table never has a
    run of 32 all-visible pages to skip. Vacuumed at 300 s (age 133 million, below the
    aggressive 150 million) and every 2 hours after, at 10,000 xids/s: on 15 each vacuum
    brings its age back to vacuum_freeze_min_age and it never reaches its freeze limit; before
    15 its age passes 200 million at 7,000 s and it is forced."""
    slow = subject(1, dead=240.0, dead_per_second=250.0 / 7200.0, xid_age=130_000_000.0)
    on_15 = simulate([slow], launcher(xids_per_second=10_000.0), 4 * 3600).tallies[0]
    assert on_15.vacuums == 2
    assert on_15.forced == 0
    on_14 = launcher(xids_per_second=10_000.0, normal_advances=False)
    assert simulate([slow], on_14, 4 * 3600).tallies[0].forced == 1


def test_a_normal_vacuum_that_skips_unfrozen_all_visible_pages_leaves_relfrozenxid() -> None:
    """The same table with 100,000 pages, all all-visible: its vacuum skips long runs of them.
    Not all-frozen, they keep relfrozenxid where it was and the table is forced at its limit;
    all-frozen, the normal vacuum advances it and nothing is forced."""
    big = subject(
        1,
        dead=240.0,
        dead_per_second=250.0 / 7200.0,
        xid_age=130_000_000.0,
        pages=100_000.0,
        all_visible=100_000.0,
    )
    fast = launcher(xids_per_second=10_000.0)
    assert simulate([big], fast, 4 * 3600).tallies[0].forced == 1
    frozen = replace(big, all_frozen=100_000.0)
    assert simulate([frozen], fast, 4 * 3600).tallies[0].forced == 0


def test_autovacuum_off_still_vacuums_past_the_multixact_freeze_limit() -> None:
    """relation_needs_vacanalyze() forces a vacuum once mxid_age(relminmxid) passes
    Min(reloption, MultiXactMemberFreezeThreshold()): at 100 multixacts/s a table 10,000
    short of its 400 million limit passes it at 100 s and the next worker (at 120 s) takes it,
    aggressive too (past 0.95 × the limit), so its age comes back to the 5 million of
    vacuum_multixact_freeze_min_age and once is enough."""
    off = subject(
        1,
        enabled=False,
        mxid_age=399_990_000.0,
        mxid_limit=400_000_000.0,
        mxid_aggressive_age=380_000_000.0,
    )
    tally = simulate([off], launcher(mxids_per_second=100.0), 3600).tallies[0]
    assert (tally.vacuums, tally.forced) == (1, 1)
    assert tally.starts[0] == pytest.approx(120.0)


def test_past_the_multixact_failsafe_age_a_vacuum_runs_unthrottled() -> None:
    """lazy_check_wraparound_failsafe() drops the cost-based sleeps when relminmxid is past
    Max(vacuum_multixact_failsafe_age, 1.05 × autovacuum_multixact_freeze_max_age), as for
    xids: 10,000 pages read at 200 per 2 ms would take 0.2 s and more; unthrottled, the
    unthrottled work alone."""
    big = subject(1, dead=300.0, pages=10_000.0)
    throttled = simulate([big], launcher(), 30).tallies[0].durations[0]
    past = replace(big, mxid_age=1_700_000_000.0, mxid_failsafe_age=1_680_000_000.0)
    unthrottled = simulate([past], launcher(), 30).tallies[0].durations[0]
    assert throttled > 0.2
    assert unthrottled == pytest.approx(work(10_000, 10_000, 300, 1.0), rel=0.01)


def test_forecast_takes_the_multixact_rate_from_relminmxid_ages() -> None:
    """The snapshots carry no next multixact id: the ages of relminmxid that no vacuum moved
    grow by the multixacts used, here 6,000 in 60 s. A table with autovacuum off, 180,000
    short of the 400 million default limit, passes it after 1,800 s and is forced."""

    def table(age: int) -> Table:
        rel = relation(
            100, "locked", reltuples=1000.0, relpages=10, minmxid_age=age,
            reloptions={"autovacuum_enabled": "off"},
        )  # fmt: skip
        return Table(heap=rel, toast=None)

    before = snapshot(table(399_814_000))
    after = snapshot(table(399_820_000), seconds=60)
    sim = forecast(before, after, hours=1)
    locked = sim.relation("public.locked")
    assert locked is not None
    assert (locked.vacuums, locked.forced) == (1, 1)
    assert locked.first_start_s is not None
    assert 1800 <= locked.first_start_s <= 1860


def test_a_wait_behind_long_vacuums_with_slots_free_is_told_from_a_wait_for_a_slot() -> None:
    """Two long vacuums (10,000 pages at a cost limit of their own of 1 per 16 ms: about 410 s
    each) ahead of
    a small table in pg_class order, all due at once. With three slots the launcher's worker
    at 0 s takes the first, the one at 60 s the second, the one at 120 s the small table: it
    waited 120 s with a slot free all along, which more workers would not shorten. With one
    slot it waits for that slot: every second of its wait counts as waiting with all busy."""
    slow = {"dead": 300.0, "pages": 10_000.0, "own_limit": 1.0, "own_delay_ms": 16.0}
    tables = [subject(1, **slow), subject(2, **slow), subject(3, dead=300.0)]
    paced = simulate(tables, launcher(workers=3), 600).tallies[2]
    assert paced.starts == [pytest.approx(120.0)]
    assert paced.waited == pytest.approx(120.0)
    assert paced.waited_full == 0.0
    full = simulate(tables, launcher(workers=1), 1200).tallies[2]
    assert full.waited > 800
    assert full.waited_full == pytest.approx(full.waited, rel=0.01)


def test_with_autovacuum_off_a_table_is_forced_only_once_its_database_is() -> None:
    """No launcher with autovacuum off: the postmaster's emergency workers come once the
    database's datfrozenxid age passes the server's 200 million. A table past its own lower
    limit (100 million, age 150 million) in a database at 190 million, at 10,000 xids/s, is
    forced about 1,000 s in, not at the first launch."""

    def at(seconds: float, table_age: int, database_age: int) -> Snapshot:
        rel = relation(
            100, "old", reltuples=1000.0, relpages=10, frozenxid_age=table_age,
            reloptions={"autovacuum_freeze_max_age": "100000000"},
        )  # fmt: skip
        here = Database(
            name="app", frozenxid_age=database_age, minmxid_age=0, allow_connections=True
        )
        base = snapshot(Table(heap=rel, toast=None), seconds=seconds, values={"autovacuum": "off"})
        xids = XidState(next_xid=1_000_000_000 + round(seconds * 10_000))
        return base.model_copy(update={"databases": [here], "xids": xids})

    before = at(0, 149_400_000, 189_400_000)
    after = at(60, 150_000_000, 190_000_000)
    old = forecast(before, after, hours=1).relation("public.old")
    assert old is not None
    assert old.forced == 1
    assert old.first_start_s is not None
    assert 1000 <= old.first_start_s <= 1060


def test_the_failsafe_triggers_strictly_past_its_age() -> None:
    """vacuum_xid_failsafe_check() (vacuum.c) asks TransactionIdPrecedes(relfrozenxid,
    next - failsafe age): at exactly the failsafe age a vacuum is still throttled."""
    from vacuumlab.model import duration

    big = subject(1, dead=300.0, pages=10_000.0)
    at_age = replace(big, xid_age=1_600_000_000.0)
    past = replace(big, xid_age=1_600_000_001.0)
    assert simulate([at_age], launcher(), 30).tallies[0].durations[0] > 0.25
    assert simulate([past], launcher(), 30).tallies[0].durations[0] < 0.25
    server = {"vacuum_failsafe_age": "1600000000"}
    at_limit = relation(1, "t", frozenxid_age=1_600_000_000)
    assert not duration.in_failsafe(at_limit, server, 180000)
    assert duration.in_failsafe(changed(at_limit, frozenxid_age=1_600_000_001), server, 180000)


def test_the_aggressive_multixact_age_follows_member_space_pressure() -> None:
    """vacuum_get_cutoffs() caps multixact_freeze_table_age at 0.95 ×
    MultiXactMemberFreezeThreshold(): with member space five eighths used, a million
    multixacts give a threshold of 500,000, so an aggressive vacuum from 475,000."""
    from vacuumlab.model import duration

    pressure = {"multixacts": 1_000_000, "members": 2**31 + 2**29}
    assert duration.aggressive_ages({}, {}, **pressure)[1] == pytest.approx(475_000)
    assert duration.aggressive_ages({}, {})[1] == 150_000_000  # the table age, under the cap


def test_a_database_that_comes_in_danger_gets_a_worker_at_every_wake_up() -> None:
    """Four databases, naptime 60 s: a worker comes here every 60 s until the database passes
    its freeze limit at 600 s, then at every wake-up of the launcher, every 15 s
    (do_start_worker() picks the database in danger)."""
    out = simulate([subject(1)], launcher(databases=4, danger_in_s=600.0), 1200)
    # 0, 60, …, 600 (11 launches), then 615, …, 1200 (40).
    assert out.launches == 11 + 40
    assert launcher(databases=4).danger_at_s == math.inf


def test_a_database_past_its_multixact_limit_is_in_danger() -> None:
    """do_start_worker() favours a database past the multixact limit too, not only xid."""
    rel = relation(100, "t", reltuples=1000.0, relpages=10)

    def at(seconds: float, mxid_age: int) -> Snapshot:
        here = Database(
            name="app", frozenxid_age=1000, minmxid_age=mxid_age, allow_connections=True
        )
        base = snapshot(Table(heap=rel, toast=None), seconds=seconds)
        return base.model_copy(update={"databases": [here]})

    past = inputs(at(0, 400_000_100), at(60, 400_000_200)).launcher
    assert past.in_danger
    soon = inputs(at(0, 399_000_000), at(60, 399_006_000)).launcher  # 100 multixacts/s
    assert not soon.in_danger
    assert soon.danger_in_s == pytest.approx(9_940.0)
