"""The heap pages a vacuum reads (model/pages.py, model/duration.py), held against a literal
transcription of PostgreSQL's skipping rules run on random visibility maps, and the way the
advice says how it found them."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from helpers.advise import PG18, T0, changed, context, relation, snapshot
from vacuumlab.advise import timing
from vacuumlab.model import charges, duration
from vacuumlab.model.pages import SKIP_PAGES_THRESHOLD, page_changes, pages_read, spread_of
from vacuumlab.records.snapshot import PagesScanned, Table


def scanned_by_postgres(skippable: list[bool]) -> int:
    """The pages vacuum reads of a map, as heap_vac_scan_next_block() and
    find_next_unskippable_block() (vacuumlazy.c, 18) choose them: from the next page, find the
    next one it cannot skip (the last page is never skippable); jump there only over at least
    SKIP_PAGES_THRESHOLD pages, else read every page up to it."""
    pages, read, block = len(skippable), 0, 0
    while block < pages:
        unskippable = block
        while unskippable < pages - 1 and skippable[unskippable]:
            unskippable += 1
        if unskippable - block >= SKIP_PAGES_THRESHOLD:
            block = unskippable
        read += unskippable - block + 1
        block = unskippable + 1
    return read


def test_the_transcription_follows_the_rules() -> None:
    run = [True] * 40
    assert scanned_by_postgres(run) == 1  # one run of 39, then the last page
    assert scanned_by_postgres([True] * 31 + [False] + [True] * 8) == 40  # 31 < 32: read
    assert scanned_by_postgres([True] * 32 + [False] + [True] * 8) == 9  # 32 skipped
    assert scanned_by_postgres([False] * 5) == 5


def random_map(pages: int, touched: int, rng: random.Random) -> list[bool]:
    """An all-visible table of ``pages`` after ``touched`` rows on random pages changed."""
    skippable = [True] * pages
    for _ in range(touched):
        skippable[rng.randrange(pages)] = False
    return skippable


@pytest.mark.parametrize("touched", [100, 300, 1000, 5000])
def test_random_changes_read_as_postgres_reads_them(touched: int) -> None:
    """The expected pages read under random changes, against PostgreSQL's rules run on 100
    random maps of 10,000 pages: within 4 %, the noise of 100 maps (1,500 maps agree within
    1 %). The old "pages − relallvisible" said at most ``touched`` pages: a ninth of what
    PostgreSQL reads at 300 changes."""
    rng = random.Random(touched)
    pages = 10_000
    measured = sum(scanned_by_postgres(random_map(pages, touched, rng)) for _ in range(100)) / 100
    predicted = pages_read(
        pages,
        counted=pages,
        skippable=pages,
        touched=touched,
        inserted=0,
        tuples_per_page=10,
        spread="random",
    )
    assert predicted == pytest.approx(measured, rel=0.04)


def test_small_tables_and_partly_visible_maps() -> None:
    """Small tables and maps partly visible already (within 5 %, the noise of 300 maps)."""
    rng = random.Random(7)
    for pages, share, touched in [(400, 0.95, 5), (3000, 0.97, 40)]:
        maps = []
        for _ in range(300):
            skippable = [rng.random() < share for _ in range(pages)]
            for _ in range(touched):
                skippable[rng.randrange(pages)] = False
            maps.append(scanned_by_postgres(skippable))
        predicted = pages_read(
            pages,
            counted=pages,
            skippable=share * pages,
            touched=touched,
            inserted=0,
            tuples_per_page=1,
            spread="random",
        )
        assert predicted == pytest.approx(sum(maps) / len(maps), rel=0.05), pages


def test_appended_pages_are_read_and_the_rest_skipped() -> None:
    """An append-only table: the new pages are read, the all-visible ones before them are
    one run; inserts the new pages cannot hold went into the older ones' free space."""
    assert spread_of(0, 23_000) == "at the end"
    appended = pages_read(
        21_000,
        counted=20_000,
        skippable=20_000,
        touched=0,
        inserted=23_000,
        tuples_per_page=23,
        spread="at the end",
    )
    assert appended == 1000
    # A table that did not grow: the 2,300 rows took free space on about 100 pages at its end.
    filled = pages_read(
        20_000,
        counted=20_000,
        skippable=20_000,
        touched=0,
        inserted=2300,
        tuples_per_page=23,
        spread="at the end",
    )
    assert filled == pytest.approx(100)
    # Updates now and then: still append-mostly. Updates as many as the inserts: at random.
    assert spread_of(100, 23_000) == "at the end"
    assert spread_of(23_000, 23_000) == "random"


def test_scattered_updates_after_a_vacuum_are_counted_from_the_statistics() -> None:
    """The issue's case: 21,700 pages all-visible after VACUUM FREEZE, then 800 rows updated
    at random. pg_class still says every page is all-visible; n_dead_tup says 800 rows
    changed since the vacuum: about a third of the table is read (measured on PostgreSQL 18:
    8,325 pages), where "pages − relallvisible" gave 0."""
    rel = relation(
        1,
        "pages",
        relpages=21_700,
        relallvisible=21_700,
        relallfrozen=21_700,
        reltuples=500_000.0,
        n_dead_tup=800,
        last_vacuum=T0,
        last_analyze=T0 - timedelta(seconds=1),
    )
    scan = duration.heap_scan(rel, 21_730, is_aggressive=False)
    assert not scan.exact
    assert 7000 < scan.pages < 9000
    assert scan.how == (
        "estimated: 800 rows updated or deleted and 0 inserted since the last vacuum, taken "
        "as spread at random"
    )
    assert duration.heap_pages(rel, 21_730, is_aggressive=False) == scan.pages
    # More dead tuples expected by the time the vacuum comes: more pages.
    later = duration.heap_scan(rel, 21_730, is_aggressive=False, dead=3000)
    assert later.pages > 15_000


def test_changes_since_an_analyze_come_from_n_mod_since_analyze() -> None:
    """An analyze after the last vacuum counted relallvisible again and overwrote n_dead_tup:
    the changes are n_mod_since_analyze's, split by the table's share of inserts."""
    rel = relation(
        1,
        "t",
        n_dead_tup=5,
        n_mod_since_analyze=1000,
        n_ins_since_vacuum=5000,
        n_tup_ins=3000,
        n_tup_upd=1000,
        last_autovacuum=T0,
        last_autoanalyze=T0 + timedelta(minutes=1),
    )
    changes = page_changes(rel)
    assert (changes.touched, changes.inserted, changes.since) == (250, 750, "the last analyze")


def test_counted_from_the_visibility_map_where_it_was_read() -> None:
    rel = relation(1, "t", relpages=20_000, relallvisible=20_000, n_dead_tup=700)
    counted = PagesScanned(
        oid=1, pages=20_000, all_visible=19_300, all_frozen=19_300, normal=6518, aggressive=6600
    )
    scan = duration.heap_scan(rel, 20_000, is_aggressive=False, scanned=counted)
    assert (scan.pages, scan.exact) == (6518, True)
    assert scan.how == "counted from the visibility map (pg_visibility_map)"
    assert duration.heap_scan(rel, 20_000, is_aggressive=True, scanned=counted).pages == 6600
    # 30 pages appended since the map was read; 1,000 more rows updated before the vacuum.
    grown = duration.heap_scan(rel, 20_030, is_aggressive=False, scanned=counted, dead=1700)
    assert grown.pages > 6518 + 30
    assert "1,000 rows more updated or deleted by then" in grown.how


def test_eager_scan_on_18_reads_some_all_visible_pages() -> None:
    """18 eagerly scans all-visible pages that are not all-frozen once relfrozenxid is older
    than the freeze limit, on tables of at least 8,192 pages, at most a fifth of them."""
    young = relation(
        1,
        "t",
        relpages=20_000,
        relallvisible=20_000,
        relallfrozen=10_000,
        frozenxid_age=1000,
        last_vacuum=T0,
    )
    old = changed(young, frozenxid_age=60_000_000)
    settings = PG18 | {"vacuum_freeze_min_age": "50000000"}
    limits = duration.limits(settings, {}, 180000)
    assert not limits.eager(young, 20_000)
    assert limits.eager(old, 20_000)
    assert not limits.eager(old, 8000)
    assert duration.limits(settings, {}, 170000).eager_age is None
    off = {"vacuum_max_eager_freeze_failure_rate": "0"}
    assert duration.limits(settings, off, 180000).eager_age is None
    work = duration.work(
        old, dead=0, pages=20_000, index_pages=0, server=settings, options={}, version_num=180000
    )
    assert work.heap_pages == 1 + 2000  # the last page, and a fifth of the 10,000 unfrozen
    assert "2,000 read by the eager scan" in work.heap_how


def test_timing_says_how_the_pages_were_found() -> None:
    """The timing finding names the way: counted from the visibility map, or estimated."""
    before = relation(
        1,
        "pages",
        relpages=20_000,
        relallvisible=20_000,
        reltuples=460_000.0,
        n_live_tup=460_000,
        last_vacuum=T0 - timedelta(minutes=5),
        reloptions={"autovacuum_vacuum_threshold": "500", "autovacuum_vacuum_scale_factor": "0"},
    )
    after = changed(before, n_dead_tup=700, n_tup_upd=700)
    estimated = context(
        snapshot(Table(heap=before, toast=None)),
        snapshot(Table(heap=after, toast=None), seconds=60),
    )
    [f] = timing.findings(estimated)
    assert f.evidence["heap_pages_from"] == "estimated"
    assert "spread at random" in str(f.evidence["heap_pages_how"])
    assert "heap pages (estimated from the changes since the last vacuum)" in f.detail
    assert 6000 < int(str(f.evidence["heap_pages_to_visit"])) < 8000
    probed = snapshot(Table(heap=after, toast=None), seconds=60).model_copy(
        update={
            "scanned": [
                PagesScanned(
                    oid=1,
                    pages=20_000,
                    all_visible=19_300,
                    all_frozen=19_300,
                    normal=6518,
                    aggressive=6518,
                )
            ]
        }
    )
    [g] = timing.findings(context(snapshot(Table(heap=before, toast=None)), probed))
    assert g.evidence["heap_pages_from"] == "pg_visibility_map"
    assert g.evidence["heap_pages_to_visit"] == 6518
    assert "6,518 heap pages (counted from the visibility map)" in g.detail


# -- what the pages read cost -------------------------------------------------------------------


def test_the_pages_changed_are_those_the_inserts_filled_and_the_updates_reached() -> None:
    """21,800 pages of 23 rows: 750 rows updated at random reach 21,800 × (1 − e^(−750 /
    21,800)) = 737 pages; 23,000 rows appended fill 1,000 pages of their own."""
    scattered = charges.pages_changed(
        21_800.0, touched=750.0, inserted=0.0, tuples_per_page=23.0, spread="random"
    )
    assert scattered == pytest.approx(737.3, abs=0.1)
    appended = charges.pages_changed(
        22_800.0, touched=0.0, inserted=23_000.0, tuples_per_page=23.0, spread="at the end"
    )
    assert appended == pytest.approx(1000.0)


def test_the_heap_cost_charges_the_dirty_cost_only_for_changed_pages() -> None:
    """8,325 pages read of 21,800 (the short runs among 737 changed pages): each a hit and a
    hit on the free space map, 16,650, and the 737 changed pages 20 each where clean. Before,
    every page read paid hit + dirty (174,825) or a hit alone (8,325)."""

    def cost(missed: float, clean: float) -> float:
        return charges.heap_cost(
            8325.0,
            21_800.0,
            touched=750.0,
            inserted=0.0,
            tuples_per_page=23.0,
            page_hit=1.0,
            page_miss=2.0,
            page_dirty=20.0,
            missed=missed,
            clean=clean,
        )

    assert cost(0.0, 0.0) == pytest.approx(16_650.0)
    # 750 changes on 737 pages: 1.017 a page, clean 2 / 2.017 of the share for one change.
    assert cost(0.0, 0.5) == pytest.approx(16_650.0 + 737.3 * 0.5 * 2 / 2.017 * 20, abs=2)
    # Read in, the unchanged pages cost a miss; the changed ones the workload has just read.
    assert cost(1.0, 0.0) == pytest.approx((8325 - 737.3) * 2 + 737.3 + 8325, abs=2)


def test_the_advisor_reads_a_table_larger_than_shared_buffers_as_misses() -> None:
    """The same table against 128 MB of shared_buffers (16,384 pages) and 1 GB: in 128 MB a
    quarter of it does not fit, and of the pages it reads that the workload did not just
    change, that share costs a miss (2) where it cost a hit (1)."""
    due = {"autovacuum_vacuum_threshold": "700", "autovacuum_vacuum_scale_factor": "0"}
    before = relation(
        100,
        "big",
        reltuples=500_000.0,
        relpages=21_800,
        relallvisible=21_800,
        n_live_tup=500_000,
        reloptions=due,
    )
    after = changed(before, n_dead_tup=750, n_tup_upd=750)

    def evidence(shared_buffers: str) -> dict[str, object]:
        values = {"shared_buffers": shared_buffers}
        ctx = context(
            snapshot(Table(heap=before, toast=None), values=values),
            snapshot(Table(heap=after, toast=None), seconds=60, values=values),
        )
        [f] = timing.findings(ctx)
        return dict(f.evidence)

    small, large = evidence("16384"), evidence("131072")
    share = round(1 - 16_384 / 21_800, 3)
    assert (small["pages_missed_share"], large["pages_missed_share"]) == (share, 0.0)
    pages = small["heap_pages_to_visit"]
    assert isinstance(pages, int)
    assert isinstance(large["cost"], int)
    assert small["cost"] == pytest.approx(large["cost"] + (pages - 737) * share, abs=5)
