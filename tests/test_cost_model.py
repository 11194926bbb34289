"""Tests of the cost-based delay model against hand-computed values and real vacuums."""

import math

import pytest

from vacuumlab.errors import VacuumlabError
from vacuumlab.model.charges import cached_shares
from vacuumlab.model.cost import (
    CostSettings,
    clean_after,
    clean_share,
    heap_cost,
    missed_share,
    pages_per_second,
    predicted_duration,
    throttle_seconds,
    vacuum_cost,
    work_seconds,
)

#: Autovacuum settings of PostgreSQL 14+ with the stock values: limit 200, delay 2 ms.
STOCK = CostSettings(page_hit=1, page_miss=2, page_dirty=20, limit=200, delay_ms=2)
#: As read from a PostgreSQL 15 server's pg_settings (name -> setting).
PG15_SETTINGS = {
    "autovacuum_vacuum_cost_delay": "2",
    "autovacuum_vacuum_cost_limit": "-1",
    "vacuum_cost_delay": "0",
    "vacuum_cost_limit": "200",
    "vacuum_cost_page_dirty": "20",
    "vacuum_cost_page_hit": "1",
    "vacuum_cost_page_miss": "2",
}


@pytest.mark.parametrize(
    ("cost_per_page", "expected"),
    [
        (30, 200 / 30 / 0.002),  # miss 10 (before 14) + dirty 20: 6.67 pages per 2 ms
        (21, 200 / 21 / 0.002),  # hit 1 + dirty 20
        (1, 100_000.0),  # a page already in shared buffers, left clean
    ],
)
def test_pages_per_second_seed_examples(cost_per_page: float, expected: float) -> None:
    assert pages_per_second(cost_per_page, STOCK) == pytest.approx(expected)


def test_seed_examples_rounded() -> None:
    assert round(pages_per_second(30, STOCK)) == 3_333
    assert round(pages_per_second(21, STOCK)) == 4_762


def test_workers_share_the_limit() -> None:
    # Three balanced workers get 200 / 3 each: a third of the throughput, three times the sleep.
    assert pages_per_second(30, STOCK, workers=3) == pytest.approx(200 / 3 / 30 / 0.002)
    assert throttle_seconds(6_000, STOCK, workers=3) == pytest.approx(6_000 / (200 / 3) * 0.002)
    assert throttle_seconds(6_000, STOCK, workers=3) == pytest.approx(
        3 * throttle_seconds(6_000, STOCK)
    )


def test_real_pg18_sample_cost_and_sleep() -> None:
    # PostgreSQL 18.6 autovacuum log: "buffer usage: 5255 hits, 550 reads, 548 dirtied".
    cost = vacuum_cost(5255, 550, 548, STOCK)
    assert cost == 5255 + 550 * 2 + 548 * 20 == 17_315
    assert throttle_seconds(cost, STOCK) == pytest.approx(0.17315)
    # The same vacuum logged "delay time: 180.077 ms": 4 % more than predicted, because each of
    # its ~87 sleeps lasts a little longer than asked for (timer slack, wake-up latency).
    measured = 0.180077
    assert throttle_seconds(cost, STOCK) < measured < 1.1 * throttle_seconds(cost, STOCK)


def test_second_real_sample_overshoots_too() -> None:
    # A sandboxed PostgreSQL 18.6 autovacuum: "buffer usage: 2880 hits, 550 reads, 548
    # dirtied", "delay time: 163.162 ms" against 149.4 ms predicted.
    cost = vacuum_cost(2880, 550, 548, STOCK)
    assert cost == 14_940
    assert throttle_seconds(cost, STOCK) == pytest.approx(0.1494)
    assert throttle_seconds(cost, STOCK) < 0.163162 < 1.1 * throttle_seconds(cost, STOCK)


def test_miss_cost_before_14() -> None:
    old = CostSettings(page_hit=1, page_miss=10, page_dirty=20, limit=200, delay_ms=20)
    assert vacuum_cost(100, 10, 5, old) == 100 + 100 + 100
    assert throttle_seconds(300, old) == pytest.approx(300 / 200 * 0.020)


def test_zero_delay_means_no_throttling() -> None:
    manual = CostSettings.for_manual(PG15_SETTINGS)
    assert manual.delay_ms == 0
    assert throttle_seconds(17_315, manual) == 0.0
    assert math.isinf(pages_per_second(30, manual))
    assert predicted_duration(1.5, 17_315, manual) == 1.5


def test_predicted_duration_adds_the_sleep_to_the_work() -> None:
    assert predicted_duration(0.02, 17_315, STOCK) == pytest.approx(0.02 + 0.17315)
    assert predicted_duration(0.02, 17_315, STOCK, workers=2) == pytest.approx(0.02 + 0.3463)


def test_free_pages_are_not_throttled() -> None:
    assert math.isinf(pages_per_second(0, STOCK))
    assert throttle_seconds(0, STOCK) == 0.0


def test_for_autovacuum_resolves_minus_one() -> None:
    settings = CostSettings.for_autovacuum(
        PG15_SETTINGS | {"autovacuum_vacuum_cost_delay": "-1", "vacuum_cost_delay": "5"}
    )
    assert settings == CostSettings(page_hit=1, page_miss=2, page_dirty=20, limit=200, delay_ms=5)


def test_for_autovacuum_uses_its_own_values() -> None:
    settings = CostSettings.for_autovacuum(
        PG15_SETTINGS
        | {"autovacuum_vacuum_cost_limit": "1000", "autovacuum_vacuum_cost_delay": "0"}
    )
    assert (settings.limit, settings.delay_ms) == (1000, 0.0)


def test_pg15_server_settings() -> None:
    assert CostSettings.for_autovacuum(PG15_SETTINGS) == STOCK


def test_autovacuum_limit_zero_means_vacuum_cost_limit() -> None:
    # autovacuum.c: "in cost_limit, zero also means use value from elsewhere".
    settings = CostSettings.for_autovacuum(PG15_SETTINGS | {"autovacuum_vacuum_cost_limit": "0"})
    assert settings.limit == 200


def test_for_manual() -> None:
    settings = CostSettings.for_manual(
        PG15_SETTINGS | {"vacuum_cost_delay": "0.5", "vacuum_cost_limit": "2000"}
    )
    assert (settings.limit, settings.delay_ms) == (2000, 0.5)


def test_missing_settings_are_named() -> None:
    incomplete = {
        k: v
        for k, v in PG15_SETTINGS.items()
        if k not in {"vacuum_cost_limit", "vacuum_cost_page_hit"}
    }
    with pytest.raises(VacuumlabError, match="vacuum_cost_page_hit, vacuum_cost_limit") as info:
        CostSettings.for_autovacuum(incomplete)
    assert "\n" not in str(info.value)
    with pytest.raises(VacuumlabError, match="vacuum_cost_limit"):
        CostSettings.for_manual(incomplete)


def test_manual_does_not_need_autovacuum_settings() -> None:
    manual_only = {k: v for k, v in PG15_SETTINGS.items() if not k.startswith("autovacuum")}
    assert CostSettings.for_manual(manual_only).limit == 200


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("vacuum_cost_page_miss", "two", "not a number"),
        ("vacuum_cost_page_miss", "nan", "not a finite number"),
        ("vacuum_cost_limit", "200.5", "whole number"),
        ("vacuum_cost_page_dirty", "-1", "negative"),
    ],
)
def test_bad_setting_values(name: str, value: str, message: str) -> None:
    with pytest.raises(VacuumlabError, match=message):
        CostSettings.for_manual(PG15_SETTINGS | {name: value})


def test_settings_are_validated() -> None:
    with pytest.raises(VacuumlabError, match="at least 1"):
        CostSettings(page_hit=1, page_miss=2, page_dirty=20, limit=0, delay_ms=2)
    with pytest.raises(VacuumlabError, match="negative"):
        CostSettings(page_hit=1, page_miss=2, page_dirty=20, limit=200, delay_ms=-1)


def test_programming_errors() -> None:
    with pytest.raises(ValueError, match="workers"):
        throttle_seconds(100, STOCK, workers=0)
    with pytest.raises(ValueError, match="workers"):
        pages_per_second(30, STOCK, workers=0)
    with pytest.raises(ValueError, match="cost"):
        throttle_seconds(-1, STOCK)
    with pytest.raises(ValueError, match="cost"):
        pages_per_second(-1, STOCK)
    with pytest.raises(ValueError, match="negative"):
        vacuum_cost(-1, 0, 0, STOCK)


# -- what each page costs (bufmgr.c, freespace.c) ---------------------------------------------


def test_each_page_read_costs_a_hit_and_a_hit_on_the_free_space_map() -> None:
    """8,325 pages read, none changed, all in shared buffers: RecordPageWithFreeSpace() adds
    one access per page, 2 × 8,325 = 16,650 (0.17 s at 200 / 2 ms), not 8,325."""
    cost = heap_cost(8325, 0, page_hit=1, page_miss=2, page_dirty=20)
    assert cost == 16_650
    assert throttle_seconds(cost, STOCK) == pytest.approx(0.1665)


def test_only_changed_pages_that_were_clean_pay_the_dirty_charge() -> None:
    """MarkBufferDirty() charges vacuum_cost_page_dirty only for a buffer not already dirty:
    800 changed pages of 8,325 read, a quarter of them clean: 16,650 + 200 × 20."""
    cost = heap_cost(8325, 800, page_hit=1, page_miss=2, page_dirty=20, clean=0.25)
    assert cost == 16_650 + 200 * 20
    # Every changed page still dirty from the workload: no dirty charge at all.
    assert heap_cost(8325, 800, page_hit=1, page_miss=2, page_dirty=20, clean=0.0) == 16_650
    # Never more changed pages dirtied than pages read.
    assert heap_cost(10, 50, page_hit=1, page_miss=2, page_dirty=20) == 10 * 2 + 10 * 20


def test_unchanged_pages_read_in_cost_a_miss_and_changed_ones_are_found_cached() -> None:
    """A page not in shared buffers costs vacuum_cost_page_miss instead of the hit. The pages
    the workload just changed are in shared buffers; of the 7,212 others read, a quarter
    missed: 7,212 × 1.25 + 800 × 1 + 8,012 (free space map) = 17,827."""
    cost = heap_cost(8012, 800, page_hit=1, page_miss=2, page_dirty=20, missed=0.25, clean=0.0)
    assert cost == pytest.approx(7212 * 1.25 + 800 + 8012)
    # PostgreSQL 18's log, 21,800 pages of which 16,384 fit in shared_buffers: 8,325 read,
    # "14,460 hits, 2,226 reads, 82 dirtied", a cost of 20,552; predicted from the 737 pages
    # 750 updates reach and the 0.25 that does not fit, a tenth of them clean: 20,511.
    logged = vacuum_cost(14_460, 2226, 82, STOCK)
    predicted = heap_cost(8325, 737, page_hit=1, page_miss=2, page_dirty=20, missed=0.25, clean=0.1)
    assert predicted == pytest.approx(logged, rel=0.05)


def test_clean_share_grows_with_the_age_of_the_changes_over_two_checkpoint_timeouts() -> None:
    assert clean_share(60.0, 300.0) == pytest.approx(0.1)
    assert clean_share(600.0, 300.0) == 1.0
    assert clean_share(-5.0, 300.0) == 0.0
    assert clean_share(math.inf) == 1.0


def test_a_page_changed_many_times_is_clean_only_past_its_last_change() -> None:
    """1,050 changes on 100 pages, 10.5 each: the last is 11.5 times younger than the window
    on average, so 2 / 11.5 of the share for pages changed once."""
    assert clean_after(0.2, 1050, 100) == pytest.approx(0.2 * 2 / 11.5)
    assert clean_after(0.2, 50, 100) == 0.2  # at most one change a page


def test_what_does_not_fit_in_shared_buffers_is_read_in() -> None:
    assert missed_share(21_800, 16_384) == pytest.approx(1 - 16_384 / 21_800)
    assert missed_share(10_000, 16_384) == 0.0
    assert missed_share(21_800, None) == 0.0


def test_changed_pages_evicted_are_read_in_and_clean() -> None:
    """A changed page no longer in shared buffers was written before it left them: the
    vacuum reads it in (a miss) and dirties a clean buffer (the dirty charge), whatever the
    share of changed pages a checkpoint had written. The table evicted: 7,525 unchanged and
    800 changed pages read, all missed: 8,325 × 2 + 8,325 (free space map) + 800 × 20."""
    cost = heap_cost(
        8325, 800, page_hit=1, page_miss=2, page_dirty=20, missed=1.0, clean=0.1, changed_missed=1.0
    )
    assert cost == pytest.approx(8325 * 2 + 8325 + 800 * 20)
    half = heap_cost(
        8325, 800, page_hit=1, page_miss=2, page_dirty=20, missed=0.0, clean=0.0, changed_missed=0.5
    )
    assert half == pytest.approx(7525 + 400 * 1 + 400 * 2 + 8325 + 400 * 20)


def test_pages_counted_in_shared_buffers_go_to_the_changed_pages_first() -> None:
    """Of 20,000 pages, 800 changed and 4,800 cached: the changed ones are cached (the
    workload touched them last), the other 4,000 spread over the 19,200 unchanged pages."""
    assert cached_shares(20_000, 800, 4_800) == pytest.approx((1 - 4_000 / 19_200, 0.0))
    assert cached_shares(20_000, 800, 0) == (1.0, 1.0)  # evicted: every page a miss
    assert cached_shares(20_000, 800, 400) == pytest.approx((1.0, 0.5))
    assert cached_shares(20_000, 800, 30_000) == (0.0, 0.0)  # more than the relation: all


def test_pages_only_read_take_less_work_than_pages_changed() -> None:
    """Measured by bench/vacuum_work_time.py at cost_delay 0: a page read and left as it is
    takes 3 µs, one pruned or set all-visible 7 µs, 22 µs when a checkpoint wrote it since
    (a full-page image). The scattered case of tests/scenarios/test_pages_scanned.py: 8,325
    pages read, 740 of them changed, dirty: 2 + 25 + 3 ms; evicted (every page read in, the
    changed ones clean): 17 ms more for the reads and 11 for the images."""
    assert work_seconds(8325, 0) == pytest.approx(0.002 + 8325 * 3e-6)
    cached = work_seconds(8325, 740)
    assert cached == pytest.approx(0.002 + 8325 * 3e-6 + 740 * 4e-6)
    evicted = work_seconds(8325, 740, missed=1.0, changed_missed=1.0)
    assert evicted == pytest.approx(cached + 8325 * 2e-6 + 740 * 1.5e-5)
    # Index pages and heap pages visited again: 20 µs each.
    assert work_seconds(0, 0, index=1000) == pytest.approx(0.002 + 0.02)
    # A clean page changed takes its full-page image whether read in or not.
    assert work_seconds(10, 10, clean=1.0) == pytest.approx(0.002 + 10 * 2.2e-5)
