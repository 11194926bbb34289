"""The fillfactor verdicts: effects against the reference, the cheapest HOT gain, the pick."""

from __future__ import annotations

import pytest

from vacuumlab.stats.fillfactor import (
    Samples,
    cheapest_hot,
    effect,
    effects,
    median,
    relative,
    verdict,
)

REFERENCE: Samples = {
    "hot_share": [0.50, 0.52, 0.51],
    "table_bytes_end": [100.0, 100.0, 100.0],
    "tps": [1000.0, 1010.0, 990.0],
    "update_mean_ms": [1.0, 1.01, 0.99],
}


def group(hot: float, table: float, tps: float, update: float) -> Samples:
    """Three repetitions a little apart, around the given medians."""
    return {
        "hot_share": [hot - 0.01, hot, hot + 0.01],
        "table_bytes_end": [table] * 3,
        "tps": [tps - 10, tps, tps + 10],
        "update_mean_ms": [update - 0.01, update, update + 0.01],
    }


def test_median_and_relative_of_missing_values_are_none() -> None:
    assert median({}, "tps") is None
    assert median({"tps": [3.0, 1.0, 2.0]}, "tps") == 2.0
    assert relative(None, 1.0) is None
    assert relative(1.0, 0.0) is None
    assert relative(1.1, 1.0) == pytest.approx(0.1)


def test_effect_is_medians_against_the_reference_with_tests() -> None:
    e = effect(90, group(0.9, 120.0, 1500.0, 0.5), REFERENCE)
    assert e.fillfactor == 90
    assert e.hot == pytest.approx(0.39)
    assert e.table == pytest.approx(0.2)
    assert e.tps == pytest.approx(0.5)
    assert e.update == pytest.approx(-0.5)
    assert e.tps_test.verdict == "significant"
    assert e.better()
    assert not e.worse()


def test_effects_leave_out_the_reference_and_need_it() -> None:
    groups = {
        100: REFERENCE,
        90: group(0.9, 110.0, 1000.0, 1.0),
        80: group(0.9, 120.0, 1000.0, 1.0),
    }
    assert [e.fillfactor for e in effects(groups, 100)] == [90, 80]
    assert effects({90: REFERENCE}, 100) == []


def test_cheapest_hot_is_the_highest_fillfactor_with_nearly_all_of_the_gain() -> None:
    groups = {
        100: REFERENCE,
        90: group(0.88, 110.0, 1000.0, 1.0),  # 0.37 of a 0.40 gain: over 90 %
        80: group(0.91, 120.0, 1000.0, 1.0),
        70: group(0.70, 130.0, 1000.0, 1.0),
    }
    found = effects(groups, 100)
    best = cheapest_hot(found)
    assert best is not None
    assert best.fillfactor == 90
    assert cheapest_hot(effects({100: REFERENCE, 90: REFERENCE}, 100)) is None


def test_verdict_prefers_a_significantly_faster_fillfactor() -> None:
    groups = {
        100: REFERENCE,
        90: group(0.9, 110.0, 1300.0, 0.8),
        80: group(0.9, 120.0, 1500.0, 0.6),
        70: group(0.9, 130.0, 700.0, 1.4),
    }
    v = verdict(effects(groups, 100))
    assert v is not None
    assert (v.kind, v.shown.fillfactor, v.slower) == ("faster", 80, (70,))


def test_verdict_falls_back_to_the_hot_gain_then_to_the_highest_fillfactor() -> None:
    hot = verdict(effects({100: REFERENCE, 90: group(0.9, 110.0, 1000.0, 1.0)}, 100))
    assert hot is not None
    assert (hot.kind, hot.shown.fillfactor) == ("hot", 90)
    flat = {100: REFERENCE, 90: group(0.4, 110.0, 1000.0, 1.0), 80: group(0.3, 120.0, 1000.0, 1.0)}
    none = verdict(effects(flat, 100))
    assert none is not None
    assert (none.kind, none.shown.fillfactor) == ("no_hot", 90)
    assert verdict([]) is None
