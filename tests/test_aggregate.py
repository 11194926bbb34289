"""Tests of the report's aggregates against hand computations and ``statistics``."""

import math
import statistics

import pytest

from vacuumlab.stats.aggregate import Fit, Spread, linear_fit, ratio, spread


def test_spread_of_four_values() -> None:
    # Linear interpolation: positions 0.75, 1.5 and 2.25 in [1, 2, 3, 4].
    assert spread([4.0, 1.0, 3.0, 2.0]) == Spread(median=2.5, q1=1.75, q3=3.25, n=4)


def test_spread_ignores_none_and_nan() -> None:
    # [1, 2, 3, 7, 10]: positions 1, 2 and 3 hit values exactly.
    assert spread([3.0, None, 1.0, math.nan, 2.0, 10.0, 7.0]) == Spread(
        median=3.0, q1=2.0, q3=7.0, n=5
    )


def test_spread_ignores_infinities() -> None:
    assert spread([1.0, math.inf, 3.0, -math.inf]) == Spread(median=2.0, q1=1.5, q3=2.5, n=2)


@pytest.mark.parametrize(
    "values",
    [
        [5.0, 1.0, 4.0],
        [21.8, 28.1, 32.6, 37.6, 42.3, 47.4],
        [5.0, 43.6, 11.5, 43.6, 21.8, 43.4, 0.2],
    ],
)
def test_spread_matches_statistics_inclusive(values: list[float]) -> None:
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    result = spread(values)
    assert result is not None
    assert (result.q1, result.median, result.q3) == pytest.approx((q1, median, q3))
    assert result.median == pytest.approx(statistics.median(values))
    assert result.n == len(values)


def test_spread_of_one_value() -> None:
    assert spread([7.5]) == Spread(median=7.5, q1=7.5, q3=7.5, n=1)


@pytest.mark.parametrize("values", [[], [None, None], [math.nan]])
def test_spread_of_nothing(values: list[float | None]) -> None:
    assert spread(values) is None


def test_perfect_line() -> None:
    fit = linear_fit([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 3.0, 5.0, 7.0, 9.0, 11.0])
    assert fit is not None
    assert (fit.slope, fit.intercept) == pytest.approx((2.0, 1.0))
    assert fit.r2 == pytest.approx(1.0)
    assert fit.n == 6


def test_noisy_fit_by_hand() -> None:
    # x mean 1.5, y mean 2.75; Sxx = 5, Sxy = 5.5 -> slope 1.1, intercept 2.75 - 1.65 = 1.1.
    # Residuals -0.1, 0.8, -1.3, 0.6: SSres = 2.7; SStot = 8.75; r2 = 1 - 2.7 / 8.75.
    fit = linear_fit([0.0, 1.0, 2.0, 3.0], [1.0, 3.0, 2.0, 5.0])
    assert fit is not None
    assert fit.slope == pytest.approx(1.1)
    assert fit.intercept == pytest.approx(1.1)
    assert fit.r2 == pytest.approx(1 - 2.7 / 8.75)
    assert fit.n == 4


def test_fit_drops_pairs_with_nan() -> None:
    fit = linear_fit([0.0, 1.0, math.nan, 2.0, 3.0], [1.0, 3.0, 9.0, math.nan, 7.0])
    assert fit is not None
    assert fit.n == 3
    assert (fit.slope, fit.intercept) == pytest.approx((2.0, 1.0))


def test_constant_y_has_no_r2() -> None:
    fit = linear_fit([1.0, 2.0, 3.0], [4.0, 4.0, 4.0])
    assert fit is not None
    assert fit.slope == pytest.approx(0.0, abs=1e-12)
    assert fit.intercept == pytest.approx(4.0)
    assert fit.r2 is None


def test_two_points_make_a_line() -> None:
    fit = linear_fit([1.0, 3.0], [2.0, 6.0])
    assert isinstance(fit, Fit)
    assert (fit.slope, fit.intercept, fit.n) == (
        pytest.approx(2.0),
        pytest.approx(0.0, abs=1e-12),
        2,
    )
    assert fit.r2 == pytest.approx(1.0)


@pytest.mark.parametrize(("x", "y"), [([], []), ([1.0], [2.0]), ([2.0, 2.0, 2.0], [1.0, 2.0, 3.0])])
def test_no_fit_without_two_distinct_x(x: list[float], y: list[float]) -> None:
    assert linear_fit(x, y) is None


def test_fit_needs_matching_lengths() -> None:
    with pytest.raises(ValueError, match="length"):
        linear_fit([1.0, 2.0], [1.0])


def test_ratio_of_medians() -> None:
    spread_out = Spread(median=43.6, q1=43.0, q3=44.0, n=10)
    compact = Spread(median=5.0, q1=4.8, q3=5.3, n=10)
    assert ratio(spread_out, compact) == pytest.approx(8.72)


def test_ratio_is_none_when_undefined() -> None:
    some = Spread(median=2.0, q1=1.0, q3=3.0, n=3)
    zero = Spread(median=0.0, q1=0.0, q3=0.0, n=3)
    assert ratio(None, some) is None
    assert ratio(some, None) is None
    assert ratio(some, zero) is None
    assert ratio(zero, some) == 0.0
