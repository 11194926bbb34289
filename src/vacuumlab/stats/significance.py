"""Is a difference between two groups of repetitions more than noise?

Welch's t-test (``scipy.stats.ttest_ind`` with ``equal_var=False``): it does not assume the two
groups share a variance, which two fillfactors need not. With fewer than two values in a group
there is no variance to estimate, and the comparison says so instead of guessing.

Missing values (None, NaN, infinities) are dropped, as everywhere in the reports.

Many tests made together (one comparison's metrics) are adjusted with Benjamini–Hochberg
(:func:`bh_adjusted`): among the differences called significant at α, at most about a share α
is then expected to be chance, however many metrics were tested.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats  # type: ignore[import-untyped]

ALPHA = 0.05
Verdict = Literal["significant", "within noise", "not testable"]

SIGNIFICANT = "significant at 5 %"
WITHIN_NOISE = "within noise"
NEEDS_REPEATS = "not testable (needs --repeat ≥ 2)"
NO_SPREAD = "not testable (no variation within either group)"
NEEDS_PAIRS = "not testable (needs two points measured in both)"
IDENTICAL = "identical at every point"
SAME_SHIFT = "the same difference at every point"


@dataclass(frozen=True, slots=True)
class MeanInterval:
    """A 95 % confidence interval of a mean, from the t distribution."""

    mean: float
    low: float
    high: float
    n: int


@dataclass(frozen=True, slots=True)
class Comparison:
    """Group ``a`` against group ``b``: their means, Welch's t and p, and the verdict."""

    n_a: int
    n_b: int
    mean_a: float | None
    mean_b: float | None
    t: float | None
    df: float | None
    p_value: float | None
    verdict: Verdict
    text: str

    @property
    def relative(self) -> float | None:
        """(mean a − mean b) / mean b; None when either is missing or b is 0."""
        if self.mean_a is None or self.mean_b is None or self.mean_b == 0:
            return None
        return (self.mean_a - self.mean_b) / self.mean_b


def clean(values: Sequence[float | None]) -> list[float]:
    """The finite values, in order."""
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _no_spread(values: Sequence[float]) -> bool:
    """No variance to speak of: identical values, up to rounding in the last digits (scipy
    warns of catastrophic cancellation there, and the t statistic means nothing)."""
    scale = max(abs(v) for v in values) or 1.0
    return float(np.std(values)) <= 1e-12 * scale


def welch(a: Sequence[float | None], b: Sequence[float | None], alpha: float = ALPHA) -> Comparison:
    """Welch's two-sided t-test of ``a`` against ``b``."""
    xs, ys = clean(a), clean(b)
    base = (len(xs), len(ys), _mean(xs), _mean(ys))
    if len(xs) < 2 or len(ys) < 2:
        return Comparison(*base, None, None, None, "not testable", NEEDS_REPEATS)
    if _no_spread(xs) and _no_spread(ys):
        return Comparison(*base, None, None, None, "not testable", NO_SPREAD)
    t, p, df = _ttest(xs, ys)
    if p < alpha:
        return Comparison(*base, t, df, p, "significant", SIGNIFICANT)
    return Comparison(*base, t, df, p, "within noise", WITHIN_NOISE)


def _ttest(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """scipy's Welch test. One group of identical values (a HOT share of 1.0 in every
    repetition) is a valid case, variance 0, but scipy warns of precision loss on it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        result = stats.ttest_ind(xs, ys, equal_var=False)
    return float(result.statistic), float(result.pvalue), float(result.df)


def mean_interval(values: Sequence[float | None], level: float = 0.95) -> MeanInterval | None:
    """The mean with its t-based confidence interval; None without two finite values."""
    data = clean(values)
    if len(data) < 2:
        return None
    mean = float(np.mean(data))
    half = float(stats.t.ppf(0.5 + level / 2, len(data) - 1)) * float(
        np.std(data, ddof=1) / math.sqrt(len(data))
    )
    return MeanInterval(mean, mean - half, mean + half, len(data))


def p_text(p: float | None) -> str:
    """A p-value as a report prints it."""
    if p is None:
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def bh_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """The Benjamini–Hochberg adjusted p-values of tests made together
    (``scipy.stats.false_discovery_control``): a test is significant at a false discovery rate
    of α when its adjusted p is below α. A missing p-value (no test) stays None and does not
    count among the tests."""
    tested = [i for i, p in enumerate(p_values) if p is not None and math.isfinite(p)]
    adjusted: list[float | None] = [None] * len(p_values)
    if tested:
        found = stats.false_discovery_control([p_values[i] for i in tested], method="bh")
        for i, q in zip(tested, found, strict=True):
            adjusted[i] = float(q)
    return adjusted


def paired(
    a: Sequence[float | None], b: Sequence[float | None], alpha: float = ALPHA
) -> Comparison:
    """The paired two-sided t-test of ``a`` against ``b``, matched by position (the same
    point measured twice): does ``a`` differ from ``b`` more than the points scatter? A pair
    with a missing value is left out. Where every value is positive the test is on the
    logarithms, so a change by the same factor at every point (a vacuum 20 % slower, whether
    it takes 1 s or 16 s) counts as one consistent change rather than as scatter."""
    pairs = [
        (float(x), float(y))
        for x, y in zip(a, b, strict=True)
        if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
    ]
    xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
    base = (len(xs), len(ys), _mean(xs), _mean(ys))
    if len(pairs) < 2:
        return Comparison(*base, None, None, None, "not testable", NEEDS_PAIRS)
    if all(x > 0 and y > 0 for x, y in pairs):
        xs, ys = [math.log(x) for x in xs], [math.log(y) for y in ys]
    diffs = [x - y for x, y in zip(xs, ys, strict=True)]
    if _no_spread(diffs) or max(abs(d) for d in diffs) == 0:
        if max(abs(d) for d in diffs) <= 1e-12 * (max(abs(v) for v in xs + ys) or 1.0):
            return Comparison(*base, None, None, None, "within noise", IDENTICAL)
        return Comparison(*base, None, None, None, "significant", SAME_SHIFT)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        result = stats.ttest_rel(xs, ys)
    t, p, df = float(result.statistic), float(result.pvalue), float(len(pairs) - 1)
    if p < alpha:
        return Comparison(*base, t, df, p, "significant", SIGNIFICANT)
    return Comparison(*base, t, df, p, "within noise", WITHIN_NOISE)


def beyond_drift(other: Sequence[float], base: Sequence[float]) -> bool | None:
    """Whether two runs' repetition means differ by more than each run's repetitions differ
    among themselves (Welch's t-test at ALPHA): None when a run has one repetition, and so no
    measure of its drift."""
    if len(other) < 2 or len(base) < 2:
        return None
    test = welch(other, base)
    if test.p_value is None:  # no spread in either run: any difference is the targets'
        return test.mean_a != test.mean_b
    return test.p_value < ALPHA
