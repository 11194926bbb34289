"""The model of autovacuum, on synthetic snapshots with every number worked out by hand: the
multixact member threshold, the failsafe floor, forcing, 18's max-threshold cap in advice,
cost balancing and worker slots, and the TOAST options a fix must carry over."""

from __future__ import annotations

import pytest
from psycopg import sql

from helpers.advise import (
    PG17,
    PG18,
    autovacuum,
    changed,
    context,
    relation,
    run_recommendations,
    snapshot,
    toast_of,
)
from helpers.db import execute
from vacuumlab.advise import bloat, estimate, thresholds, workers
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Finding
from vacuumlab.records.snapshot import Table


def sqls(f: Finding) -> list[str]:
    return [r.sql for r in f.recommendations]


# -- the pure model -------------------------------------------------------------------------


def test_member_space_pressure_lowers_the_multixact_limit() -> None:
    from vacuumlab.model import forcing

    # Up to half the 2^32 member slots: the GUC. Halfway to three quarters: half the multixacts
    # count as victims, so the limit is multixacts / 2. Past three quarters: 0.
    assert forcing.member_freeze_threshold(400e6, 1_000_000, 2**31) == 400e6
    assert forcing.member_freeze_threshold(400e6, 1_000_000, 2**31 + 2**29) == 500_000
    assert forcing.member_freeze_threshold(400e6, 1_000_000, 2**32) == 0
    assert forcing.member_freeze_threshold(400e6) == 400e6  # not exposed: no pressure assumed


def test_failsafe_floor_and_forcing() -> None:
    from vacuumlab.model import forcing

    server = PG18 | {"vacuum_failsafe_age": "100000", "vacuum_multixact_failsafe_age": "0"}
    assert forcing.failsafe_age(server) == 210_000_000  # 1.05 × 200 million
    assert forcing.failsafe_age(server, multixact=True) == 420_000_000
    limits = forcing.freeze_limits(server, {"autovacuum_freeze_max_age": "-1"})
    assert (limits.xid, limits.xid_own) == (200_000_000, False)
    assert forcing.forced(limits, 200_000_000, 0) is None  # strictly past the limit
    assert forcing.forced(limits, 200_000_001, 0) == "xid"


def test_track_counts_off_and_recovery_leave_only_forced_vacuums() -> None:
    from vacuumlab.model import thresholds as th

    rel = relation(1, "t", reltuples=1000.0, n_dead_tup=5000, frozenxid_age=300_000_000)
    table = Table(heap=rel, toast=None)
    [off] = th.of_table(table, PG18 | {"track_counts": "off"}, 180001)
    assert (off.effective.enabled, off.forced, off.needs_vacuum) == (False, "xid", True)
    assert not off.needs_analyze
    [standby] = th.of_table(table, PG18, 180001, in_recovery=True)
    assert not standby.needs_vacuum


def test_standings_rank_as_the_thresholds_do() -> None:
    """th.standings() writes out the arithmetic of th.thresholds() for the live view's ranking:
    the same needs_vacuum and nearer-threshold share, relation by relation, across reloptions
    (a TOAST relation's own or its table's), the 18 cap and unfrozen share, versions without
    them, autovacuum off, freeze limits and recovery."""
    from vacuumlab.model import thresholds as th

    heaps = [
        relation(1, "plain", reltuples=1000.0, n_dead_tup=100, n_ins_since_vacuum=10),
        relation(2, "past", reltuples=1000.0, n_dead_tup=251),
        relation(3, "at", reltuples=1000.0, n_dead_tup=250),
        relation(4, "never", reltuples=-1.0, n_dead_tup=51),
        relation(5, "empty", reltuples=0.0, n_dead_tup=0, n_ins_since_vacuum=0),
        relation(6, "cap", reltuples=1e9, n_dead_tup=100_000_001),
        relation(7, "inserts", reltuples=1000.0, n_ins_since_vacuum=1500),
        relation(
            8, "frozen", reltuples=1000.0, relpages=10, relallfrozen=8, n_ins_since_vacuum=1200
        ),
        relation(
            9, "off", reltuples=10.0, n_dead_tup=5000, reloptions={"autovacuum_enabled": "off"}
        ),
        relation(10, "old", frozenxid_age=200_000_001),
        relation(11, "old_mxid", minmxid_age=400_000_001),
        relation(
            12,
            "own_limit",
            frozenxid_age=150_000,
            reloptions={"autovacuum_freeze_max_age": "100000"},
        ),
        relation(
            13,
            "tuned",
            reltuples=10_000.0,
            n_dead_tup=150,
            n_ins_since_vacuum=80,
            reloptions={
                "autovacuum_vacuum_scale_factor": "0.01",
                "autovacuum_vacuum_threshold": "0",
                "autovacuum_vacuum_insert_threshold": "-1",
            },
        ),
        relation(14, "none_counted", n_dead_tup=None, n_ins_since_vacuum=None, frozenxid_age=None),
        relation(
            15, "zero_threshold", n_dead_tup=1, reloptions={"autovacuum_vacuum_threshold": "0"}
        ),
    ]
    tables = [Table(heap=h, toast=None) for h in heaps]
    owner = relation(20, "owner", reltuples=10.0, reloptions={"autovacuum_vacuum_threshold": "5"})
    tables.append(Table(heap=owner, toast=toast_of(owner, 21, reltuples=10.0, n_dead_tup=10)))
    own = relation(22, "own", reloptions={"autovacuum_enabled": "off"})
    tables.append(
        Table(
            heap=own,
            toast=toast_of(own, 23, n_dead_tup=80, reloptions={"autovacuum_enabled": "on"}),
        )
    )
    cases = [
        (PG18, 180001, False),
        (PG17, 170004, False),
        (PG17, 120000, False),
        (PG18 | {"autovacuum": "off"}, 180001, False),
        (PG18 | {"autovacuum_vacuum_insert_scale_factor": "0"}, 180001, False),
        (PG18, 180001, True),
    ]
    for server, version, recovery in cases:
        full = th.of_tables(tables, server, version, in_recovery=recovery)
        ranked = th.standings(tables, server, version, in_recovery=recovery)
        assert [(s[1], s[2], s[3], s[4]) for s in ranked] == [
            (
                t.relation,
                t.effective,
                t.needs_vacuum,
                max(t.vacuum_progress, t.insert_progress or 0.0),
            )
            for t in full
        ]
        assert [s[0].heap for s in ranked] == [
            table.heap for table in tables for rel in (table.heap, table.toast) if rel is not None
        ]
    due = [s[1].name for s in th.standings(tables, PG18, 180001) if s[3]]
    assert due == [
        "past", "never", "cap", "inserts", "frozen", "old", "old_mxid", "own_limit", "tuned",
        "zero_threshold", "pg_toast_20", "pg_toast_22",
    ]  # fmt: skip


# -- the bugs, in the advice ----------------------------------------------------------------


def huge(oid: int, name: str, reltuples: float) -> Table:
    """A table 40 % dead by its statistics: bloat recommends a lower scale factor."""
    rel = relation(
        oid, name, reltuples=reltuples, relpages=12_800, n_live_tup=60_000, n_dead_tup=40_000
    )
    return Table(heap=rel, toast=None)


def test_scale_factor_advice_honours_the_max_threshold_cap() -> None:
    """Bug 3: at 2 billion rows the 18 cap of 100 million binds at 0.2 and at 0.05 alike;
    at 1 billion 0.05 halves the threshold (50 million), not a quarter of it."""
    ctx = context(
        snapshot(huge(1, "capped", 2e9), huge(2, "halved", 1e9), huge(3, "unknown", -1.0))
    )
    found = {f.relation: f for f in bloat.findings(ctx)}
    assert found["public.capped"].recommendations == []
    assert found["public.unknown"].recommendations == []  # reltuples -1: no evidence yet
    [rec] = found["public.halved"].recommendations
    assert "about 2 times as often" in rec.reason
    # Before 18 there is no cap: a quarter.
    old = context(snapshot(huge(2, "halved", 1e9), version=170005))
    [old_rec] = bloat.findings(old)[0].recommendations
    assert "about 4 times as often" in old_rec.reason


def test_balance_leaves_out_workers_with_their_own_cost_settings() -> None:
    """Bug 7: the worker on a table with its own cost limit does not share the balance."""
    own = relation(10, "own", reloptions={"autovacuum_vacuum_cost_limit": "1000"})
    shared = relation(11, "shared", reltuples=1000.0, relpages=1000, n_live_tup=1000, n_dead_tup=10)
    tables = (Table(heap=own, toast=None), Table(heap=shared, toast=None))
    later = (Table(heap=own, toast=None), Table(heap=changed(shared, n_dead_tup=70), toast=None))
    ctx = context(
        snapshot(*tables),
        snapshot(*later, seconds=60, vacuums=(autovacuum(10), autovacuum(99))),
    )
    by_name = {e.name: e for e in estimate.estimates(ctx)}
    duration = by_name["public.shared"].duration
    assert duration is not None
    assert duration.workers == 1  # relid 99 shares the limit; the one on public.own does not


def test_workers_on_18_are_capped_by_worker_slots() -> None:
    """Bug 7: with autovacuum_max_workers 5 and 3 worker slots, 3 running is all of them."""
    rels = [relation(20 + i, f"w{i}", reltuples=100.0, n_dead_tup=5000) for i in range(4)]
    values = {"autovacuum_max_workers": "5", "autovacuum_worker_slots": "3"}
    busy = tuple(autovacuum(20 + i) for i in range(3))
    ctx = context(snapshot(*(Table(heap=r, toast=None) for r in rels), values=values, vacuums=busy))
    found = workers.findings(ctx)[-1]
    assert found.title.startswith("3 of 3 autovacuum workers busy")
    assert found.severity == "warning"


def blob_context() -> Table:
    heap = relation(
        40,
        "blob",
        reloptions={"autovacuum_enabled": "off", "autovacuum_vacuum_scale_factor": "0.01"},
    )
    return Table(heap=heap, toast=toast_of(heap, 41, reltuples=1000.0, n_dead_tup=5000))


def test_enabling_toast_autovacuum_carries_the_tables_settings(
    embedded_database: str, sandbox: Sandbox
) -> None:
    """Bug 8: toast.autovacuum_enabled = on gives the TOAST relation options of its own, so
    it stops reading its table's: the scale factor must go with it. The statements run."""
    ctx = context(snapshot(blob_context()))
    [f] = [f for f in thresholds.findings(ctx) if f.relation == "public.blob (TOAST)"]
    assert sqls(f) == [
        'ALTER TABLE "public"."blob" SET (toast."autovacuum_enabled" = \'on\');',
        'ALTER TABLE "public"."blob" SET (toast."autovacuum_vacuum_scale_factor" = \'0.01\');',
    ]
    execute(
        embedded_database,
        sql.SQL(
            "CREATE TABLE blob (id int, body text) WITH (autovacuum_enabled = off, "
            "autovacuum_vacuum_scale_factor = 0.01)"
        ),
    )
    run_recommendations(f.recommendations, embedded_database, sandbox.dsn)


# -- what one vacuum does -------------------------------------------------------------------


def test_aggressive_scan_skips_only_all_frozen_pages() -> None:
    from vacuumlab.model import duration

    rel = relation(50, "old", relpages=1000, relallvisible=900, relallfrozen=600)
    young = duration.work(
        rel, dead=0, pages=1000, index_pages=0, server=PG18, options={}, version_num=180001
    )
    assert (young.aggressive, young.heap_pages) == (False, 100)
    # 0.95 × 200 million caps vacuum_freeze_table_age's 150 million: past 150 million.
    aged = changed(rel, frozenxid_age=150_000_000)
    old = duration.work(
        aged, dead=0, pages=1000, index_pages=0, server=PG18, options={}, version_num=180001
    )
    assert (old.aggressive, old.heap_pages) == (True, 400)


def test_index_passes_follow_work_mem_and_the_1gb_cap_before_17() -> None:
    from vacuumlab.model import duration

    small = PG18 | {"autovacuum_work_mem": "-1", "maintenance_work_mem": "65536"}  # 64 MB
    # Before 17: 64 MB / 6 bytes = 11,184,810 TIDs a pass: 30 million dead take 3 passes.
    assert duration.index_passes(30e6, 10**8, small, 160000) == 3
    # A 4 GB setting is capped at 1 GB before 17: 178,956,970 TIDs a pass.
    big = small | {"maintenance_work_mem": str(4 * 1024 * 1024)}
    assert duration.index_passes(400e6, 10**9, big, 160000) == 3
    # 17+: about 64 bytes per page with dead items: 64 MB hold 1,048,576 pages.
    assert duration.index_passes(30e6, 2_000_000, small, 170000) == 2


def test_failsafe_turns_throttling_and_index_vacuuming_off() -> None:
    rel = relation(
        60,
        "ancient",
        reltuples=1000.0,
        relpages=1000,
        n_indexes=1,
        index_bytes=100 * 8192,
        n_dead_tup=5000,
        frozenxid_age=1_700_000_000,
    )
    first = snapshot(Table(heap=rel, toast=None))
    later = snapshot(Table(heap=rel, toast=None), seconds=60)
    [e] = estimate.estimates(context(first, later))
    assert e.duration is not None
    assert e.duration.work.failsafe
    assert not e.duration.throttled
    assert not e.duration.index_scan


def test_database_multixact_age_is_watched() -> None:
    """Bug 2: a database's datminmxid age past autovacuum_multixact_freeze_max_age."""
    from vacuumlab.advise import wraparound
    from vacuumlab.records.snapshot import Database

    old = Database(name="app", frozenxid_age=1000, minmxid_age=450_000_000, allow_connections=True)
    ctx = context(snapshot().model_copy(update={"databases": [old]}))
    [f] = wraparound.findings(ctx)
    assert (f.relation, f.evidence["freeze_max_age"]) == (None, 400_000_000)
    assert f.title.startswith("multixact age 450,000,000: past")
    assert f.title.endswith("(database app)")


def test_databases_of_one_age_get_one_finding_naming_them() -> None:
    """A cluster's databases age together: five at the same age are one finding for the
    cluster, titled by the oldest, naming each with its age; one below the share is left out."""
    from vacuumlab.advise import wraparound
    from vacuumlab.records.snapshot import Database

    names = ["app", "postgres", "template0", "template1", "reports"]
    aged = [
        Database(name=n, frozenxid_age=180_000_000 + i, minmxid_age=1, allow_connections=True)
        for i, n in enumerate(names)
    ]
    young = Database(name="fresh", frozenxid_age=1000, minmxid_age=1, allow_connections=True)
    ctx = context(snapshot().model_copy(update={"databases": [*aged, young]}))
    [f] = wraparound.findings(ctx)
    assert f.relation is None
    assert f.title == "transaction id age 180,000,004: at 90% of its freeze_max_age (5 databases)"
    assert all(f"{n} ({180_000_000 + i:,})" in f.detail for i, n in enumerate(names))
    assert "fresh" not in f.detail
    assert (f.severity, f.evidence["age"], f.evidence["databases"]) == ("warning", 180_000_004, 5)


def test_track_counts_off_is_reported_with_its_fix() -> None:
    ctx = context(snapshot(values={"track_counts": "off"}))
    [f] = [f for f in thresholds.findings(ctx) if f.relation is None]
    assert f.title.startswith("track_counts is off")
    assert sqls(f) == ["ALTER SYSTEM SET \"track_counts\" = 'on'; SELECT pg_reload_conf();"]


def test_no_failsafe_before_14() -> None:
    from vacuumlab.advise import wraparound

    rel = relation(70, "old13", frozenxid_age=1_700_000_000)
    ctx = context(snapshot(Table(heap=rel, toast=None), version=130010))
    [f] = [f for f in wraparound.findings(ctx) if f.relation == "public.old13"]
    assert f.evidence["failsafe_age"] is None


def test_toast_and_wraparound_agree_on_the_freeze_limit() -> None:
    """One function for effective freeze ages: a table's 1.5 billion does not raise the
    server's 200 million, for its heap or for its TOAST relation."""
    from vacuumlab.advise import toast, wraparound

    heap = relation(
        80, "doc", frozenxid_age=1000, reloptions={"autovacuum_freeze_max_age": "1500000000"}
    )
    old_toast = toast_of(heap, 81, frozenxid_age=180_000_000)
    ctx = context(snapshot(Table(heap=heap, toast=old_toast)))
    [w] = [f for f in wraparound.findings(ctx) if f.relation == "public.doc (TOAST)"]
    [t] = [f for f in toast.findings(ctx) if "freeze age" in f.title]
    assert w.evidence["freeze_max_age"] == t.evidence["autovacuum_freeze_max_age"] == 200_000_000


def test_insert_threshold_scales_by_the_unfrozen_share_on_18() -> None:
    from vacuumlab.model import thresholds as th

    rel = relation(90, "log", reltuples=100_000.0, relpages=1000, relallfrozen=750)
    [on18] = th.of_table(Table(heap=rel, toast=None), PG18, 180001)
    assert on18.insert == 1000 + 0.2 * 100_000 * 0.25  # a quarter of the pages unfrozen
    [on17] = th.of_table(Table(heap=rel, toast=None), PG18, 170005)
    assert on17.insert == 1000 + 0.2 * 100_000
    assert on17.vacuum == 50 + 0.2 * 100_000  # no cap before 18


def test_a_standby_expects_no_autovacuum() -> None:
    """Bug 4: in recovery autovacuum never runs; nothing is due, nothing is "off"."""
    from vacuumlab.advise import advise

    rel = relation(95, "replica", reltuples=1000.0, n_dead_tup=5000, frozenxid_age=300_000_000)
    first = snapshot(Table(heap=rel, toast=None))
    standby = first.model_copy(
        update={"server": first.server.model_copy(update={"in_recovery": True})}
    )
    advice = advise(standby)
    [status] = advice.tables
    assert (status.seconds_to_vacuum, status.forced) == (None, "xid")
    [f] = [
        f for f in advice.findings if f.question == "thresholds" and f.relation == "public.replica"
    ]
    assert f.title.endswith("a standby runs no autovacuum: the primary's vacuums reach it by WAL")
    assert f.recommendations == []


def test_dead_rate_just_after_a_vacuum_counts_what_pruning_cannot_take_back() -> None:
    """A vacuum that ended a second before the later snapshot leaves n_dead_tup near 0 (the
    backends flush at most once a second): the rate then comes from the non-HOT updates and
    deletes over the interval, whose old versions stay counted when pruned
    (heap_page_prune_and_freeze() subtracts ndeleted - nnewlpdead)."""
    from datetime import UTC, datetime, timedelta

    from helpers.advise import relation
    from vacuumlab.model import rates

    taken = datetime(2025, 1, 1, tzinfo=UTC)
    before = relation(1, "q", n_tup_upd=0, n_tup_hot_upd=0, n_tup_del=0, autovacuum_count=1)
    after = relation(
        1, "q", n_tup_upd=6_000, n_tup_hot_upd=1_000, n_tup_del=1_000, n_dead_tup=0,
        autovacuum_count=2, last_autovacuum=taken - timedelta(seconds=1),
    )  # fmt: skip
    found = rates.between(before, after, 20.0, taken)
    assert found is not None
    assert found.dead_per_second == (5_000 + 1_000) / 20.0
    # Nine seconds after the vacuum: 900 counted since (100/s) is less than the 6,000 the
    # non-HOT updates and deletes left over the 20 s (300/s), so the interval's figure stands.
    later = after.model_copy(
        update={"n_dead_tup": 900, "last_autovacuum": taken - timedelta(seconds=9)}
    )
    found = rates.between(before, later, 20.0, taken)
    assert found is not None
    assert found.dead_per_second == 300.0
    assert found.dead_source == (
        "non-HOT updates and deletes over the interval (a vacuum in between)"
    )
    # 4,500 counted since is more, but only 6,000 of the 7,000 updates and deletes were not
    # HOT: the HOT versions in the count are pruning's backlog, not a rate. 6/7 of 500/s.
    crowded = later.model_copy(update={"n_dead_tup": 4_500})
    found = rates.between(before, crowded, 20.0, taken)
    assert found is not None
    assert found.dead_per_second == pytest.approx(500.0 * 6 / 7)
    assert found.dead_source == "n_dead_tup since the vacuum in between, its non-HOT share"


def test_a_forced_table_with_autovacuum_off_is_analysed_past_its_analyze_threshold() -> None:
    """relation_needs_vacanalyze() returns early only for !av_enabled && !force_vacuum: a table
    with autovacuum_enabled = off that is past its freeze limit is vacuumed and, past its
    analyze threshold (50 + 0.1 × 1,000), analysed too. Not forced, it is neither; with the
    server's autovacuum off (AutoVacuumingActive() false) it is vacuumed only."""
    from vacuumlab.model import thresholds as th

    off = {"autovacuum_enabled": "off"}
    rel = relation(
        1, "t", reltuples=1000.0, n_mod_since_analyze=500, frozenxid_age=300_000_000,
        reloptions=off,
    )  # fmt: skip
    [forced] = th.of_table(Table(heap=rel, toast=None), PG18, 180001)
    assert (forced.forced, forced.needs_vacuum, forced.needs_analyze) == ("xid", True, True)
    young = relation(1, "t", reltuples=1000.0, n_mod_since_analyze=500, reloptions=off)
    [quiet] = th.of_table(Table(heap=young, toast=None), PG18, 180001)
    assert (quiet.needs_vacuum, quiet.needs_analyze) == (False, False)
    server_off = PG18 | {"autovacuum": "off"}
    [emergency] = th.of_table(Table(heap=rel, toast=None), server_off, 180001)
    assert (emergency.needs_vacuum, emergency.needs_analyze) == (True, False)
