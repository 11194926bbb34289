"""Welch's t-test and the t-based confidence interval, against published and hand-computed
values."""

from __future__ import annotations

import math

import pytest

from vacuumlab.stats.significance import (
    NEEDS_REPEATS,
    NO_SPREAD,
    SIGNIFICANT,
    WITHIN_NOISE,
    mean_interval,
    p_text,
    welch,
)

# The two worked examples of Welch's test on Wikipedia ("Welch's t-test", Examples).
A1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
A2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
B1 = [17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8]
B2 = [21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8,
      20.7, 21.7, 21.5, 22.5, 23.6, 21.5, 22.5, 23.5, 21.5, 21.8]  # fmt: skip


@pytest.mark.parametrize(
    ("a", "b", "t", "df", "p"),
    [(A1, A2, -2.46, 25.0, 0.021), (B1, B2, -1.57, 9.9, 0.149)],
)
def test_published_examples(a: list[float], b: list[float], t: float, df: float, p: float) -> None:
    result = welch(a, b)
    assert result.t == pytest.approx(t, abs=0.005)
    assert result.df == pytest.approx(df, abs=0.05)
    assert result.p_value == pytest.approx(p, abs=0.0005)
    assert result.verdict == ("significant" if p < 0.05 else "within noise")
    assert result.text == (SIGNIFICANT if p < 0.05 else WITHIN_NOISE)


def test_statistic_and_degrees_of_freedom_by_hand() -> None:
    """a: mean 2.5, squared deviations 5; b: mean 5.25, squared deviations 26.75."""
    a, b = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 9.0]
    va, vb = 5 / 3 / 4, 26.75 / 3 / 4  # sample variance (n − 1) of each mean
    t = (2.5 - 5.25) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 3)
    result = welch(a, b)
    assert result.t == pytest.approx(t, rel=1e-12)
    assert result.df == pytest.approx(df, rel=1e-12)
    assert (result.mean_a, result.mean_b) == (2.5, 5.25)
    assert result.relative == pytest.approx(2.5 / 5.25 - 1)
    assert result.n_a == result.n_b == 4


def test_two_repetitions_each_are_enough() -> None:
    """The quick preset's case, two values per group: t = −10/√2 on 2 degrees of freedom,
    where the two-sided p of the t distribution is 1 − |t| / √(t² + 2)."""
    result = welch([100.0, 102.0], [110.0, 112.0])
    t = -10 / math.sqrt(2)
    assert result.t == pytest.approx(t)
    assert result.df == pytest.approx(2.0)
    assert result.p_value == pytest.approx(1 - abs(t) / math.sqrt(t**2 + 2), rel=1e-9)
    assert result.verdict == "significant"


def test_fewer_than_two_values_is_not_testable() -> None:
    for a, b in (([1.0], [1.0, 2.0]), ([1.0, 2.0], []), ([1.0, None, math.nan], [2.0, 3.0])):
        result = welch(a, b)
        assert result.verdict == "not testable"
        assert result.text == NEEDS_REPEATS == "not testable (needs --repeat ≥ 2)"
        assert result.p_value is None
    assert welch([1.0], [2.0, 3.0]).mean_a == 1.0


def test_missing_values_are_dropped() -> None:
    assert welch([*A1, None, math.nan, math.inf], A2).p_value == welch(A1, A2).p_value


def test_identical_values_in_both_groups_are_not_testable() -> None:
    result = welch([1.0, 1.0, 1.0], [0.9, 0.9])
    assert result.verdict == "not testable"
    assert result.text == NO_SPREAD


def test_one_constant_group_is_tested_without_a_warning() -> None:
    """A HOT share of 1.0 in every repetition is a real outcome; pytest turns warnings into
    errors, so this also checks scipy's precision warning does not escape."""
    result = welch([1.0, 1.0, 1.0], [0.80, 0.82, 0.81])
    assert result.verdict == "significant"
    assert result.df == pytest.approx(2.0)


def test_alpha_is_the_threshold() -> None:
    result = welch(A1, A2, alpha=0.01)
    assert result.p_value is not None
    assert 0.01 < result.p_value < 0.05
    assert result.verdict == "within noise"


def test_mean_interval_by_hand() -> None:
    """n = 3, mean 2, sample sd 1: 2 ± t(0.975, 2) / √3, with t(0.975, 2) = 4.302652..."""
    interval = mean_interval([1.0, 2.0, 3.0])
    assert interval is not None
    half = 4.302652729749462 / math.sqrt(3)
    assert (interval.mean, interval.n) == (2.0, 3)
    assert interval.low == pytest.approx(2 - half, rel=1e-9)
    assert interval.high == pytest.approx(2 + half, rel=1e-9)
    assert mean_interval([1.0, None]) is None


def test_p_text() -> None:
    assert p_text(None) == "—"
    assert p_text(0.0004) == "< 0.001"
    assert p_text(0.0213) == "0.021"
