"""The tune's verdict: a winner only beyond the noise, never at latency's expense, never a
trial whose replay missed its rates, and judged on the trial measured again."""

from __future__ import annotations

from typing import Any

from vacuumlab.records.tune import Origin, TrialPoint, TrialSettings
from vacuumlab.stats.tune import decide, group, leader


def point(number: int, origin: Origin, naptime: str | None = None) -> TrialPoint:
    server = {} if naptime is None else {"autovacuum_naptime": naptime}
    return TrialPoint(number, origin, TrialSettings(server))


def measured(dead: float, p99: float, **extra: Any) -> dict[str, Any]:
    return {"dead_tuples_peak": dead, "latency_p99_ms": p99} | extra


CURRENT = point(1, "current")
FAST = point(2, "search", "10")
LUCKY = point(3, "search", "20")


def test_a_clear_win_beyond_the_noise_is_a_winner() -> None:
    results = group([
        (CURRENT, measured(49_000, 5.0)), (CURRENT, measured(48_800, 5.2)),
        (CURRENT, measured(49_100, 4.9)),
        (FAST, measured(12_300, 5.1)), (FAST, measured(11_900, 5.0)), (FAST, measured(12_100, 5.3)),
    ])  # fmt: skip
    verdict = decide(results, "dead")
    assert verdict.improved
    assert verdict.best is not None
    assert verdict.best.point == FAST
    assert verdict.comparison is not None
    assert verdict.comparison.p_value is not None
    assert verdict.comparison.p_value < 0.05


def test_a_difference_inside_the_noise_keeps_the_settings() -> None:
    results = group([
        (CURRENT, measured(12_000, 5.0)), (CURRENT, measured(13_500, 5.0)),
        (CURRENT, measured(11_000, 5.0)),
        (FAST, measured(11_800, 5.0)), (FAST, measured(13_000, 5.0)), (FAST, measured(11_500, 5.0)),
    ])  # fmt: skip
    verdict = decide(results, "dead")
    assert not verdict.improved
    assert verdict.text.startswith("no significant improvement: keep your settings")


def test_a_win_that_costs_latency_beyond_the_noise_is_refused() -> None:
    results = group([
        (CURRENT, measured(49_000, 5.0)), (CURRENT, measured(48_800, 5.1)),
        (CURRENT, measured(49_100, 4.9)),
        (FAST, measured(12_300, 9.0)), (FAST, measured(11_900, 9.2)), (FAST, measured(12_100, 9.1)),
    ])  # fmt: skip
    verdict = decide(results, "dead")
    assert not verdict.improved
    assert "p99 latency is significantly worse" in verdict.text
    # Judged on latency itself, the same trial loses.
    assert not decide(results, "latency").improved


def test_single_measurements_are_not_testable() -> None:
    results = group([(CURRENT, measured(49_000, 5.0)), (FAST, measured(12_000, 5.0))])
    verdict = decide(results, "dead")
    assert not verdict.improved
    assert "measured once" in verdict.text


def test_the_verdict_judges_the_trial_measured_again_not_the_luckiest() -> None:
    results = group([
        (CURRENT, measured(49_000, 5.0)), (CURRENT, measured(48_800, 5.0)),
        (FAST, measured(12_300, 5.0)), (FAST, measured(11_900, 5.0)),
        (LUCKY, measured(9_000, 5.0)),  # once, lower: not confirmed
    ])  # fmt: skip
    assert leader(results, "dead") is not None
    assert leader(results, "dead").point == LUCKY  # type: ignore[union-attr]
    verdict = decide(results, "dead")
    assert verdict.best is not None
    assert verdict.best.point == FAST


def test_a_trial_whose_replay_missed_its_rates_cannot_win() -> None:
    off = {"rate:replayed:inserts:jobs": 100.0, "rate:captured:inserts:jobs": 100.0,
           "rate:replayed:updates:jobs": 50.0, "rate:captured:updates:jobs": 100.0,
           "rate_seconds": 60}  # fmt: skip
    results = group([
        (CURRENT, measured(49_000, 5.0)), (CURRENT, measured(48_800, 5.0)),
        (FAST, measured(1_000, 5.0, **off)), (FAST, measured(1_100, 5.0, **off)),
    ])  # fmt: skip
    assert results[1].flagged is not None
    assert "replay off" in results[1].flagged
    verdict = decide(results, "dead")
    assert verdict.best is None
    assert not verdict.improved
    assert verdict.text.startswith("every other trial missed the captured rates")
    assert "updates 50.0 against 100.0" in verdict.text


def test_a_hot_share_the_settings_moved_is_no_flag() -> None:
    """Vacuuming every second gave a queue's replay a HOT share of 0.5 where 0.98 was
    captured: an outcome of the settings, not a replay that missed its workload."""
    rates = {"rate:replayed:inserts:jobs": 150.0, "rate:captured:inserts:jobs": 150.0,
             "rate:replayed:updates:jobs": 150.0, "rate:captured:updates:jobs": 150.0,
             "rate:replayed:hot_updates:jobs": 75.0, "rate:captured:hot_updates:jobs": 147.0,
             "rate_seconds": 35}  # fmt: skip
    [result] = group([(FAST, measured(300, 5.0, **rates))])
    assert result.flagged is None
