"""Aggregates for the cost-driver report: medians with quartiles, straight-line fits, ratios.

Pure numpy. Missing values (None, NaN) are common: a metric is None where its source was not
available on the server (see records/cost_driver_spec.py), so every function drops them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
from numpy.typing import NDArray

FloatArray: TypeAlias = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Spread:
    """Median and quartiles of ``n`` values."""

    median: float
    q1: float
    q3: float
    n: int


@dataclass(frozen=True, slots=True)
class Fit:
    """``y ≈ slope * x + intercept`` over ``n`` points; ``r2`` None when y does not vary."""

    slope: float
    intercept: float
    r2: float | None
    n: int


def spread(values: Sequence[float | None]) -> Spread | None:
    """Median and quartiles (numpy's default linear interpolation) of the finite values; None
    when there are none. Infinities are dropped too: quartiles that interpolate between them
    are undefined."""
    data = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if data.size == 0:
        return None
    q1, median, q3 = (float(q) for q in np.percentile(data, [25.0, 50.0, 75.0]))
    return Spread(median=median, q1=q1, q3=q3, n=int(data.size))


def linear_fit(x: Sequence[float], y: Sequence[float]) -> Fit | None:
    """Least-squares line through the points whose x and y are both finite; None with fewer
    than two distinct x (no slope is defined)."""
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} and {len(y)})")
    xs, ys = _finite_pairs(x, y)
    if np.unique(xs).size < 2:
        return None
    slope, intercept = (float(c) for c in np.polyfit(xs, ys, 1))
    return Fit(slope=slope, intercept=intercept, r2=_r2(xs, ys, slope, intercept), n=int(xs.size))


def ratio(numerator: Spread | None, denominator: Spread | None) -> float | None:
    """Ratio of the medians; None when either is missing or the denominator's median is 0."""
    if numerator is None or denominator is None or denominator.median == 0:
        return None
    return numerator.median / denominator.median


def _finite_pairs(x: Sequence[float], y: Sequence[float]) -> tuple[FloatArray, FloatArray]:
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y, dtype=np.float64)
    keep = np.isfinite(xs) & np.isfinite(ys)
    return xs[keep], ys[keep]


def _r2(xs: FloatArray, ys: FloatArray, slope: float, intercept: float) -> float | None:
    total = float(np.sum((ys - ys.mean()) ** 2))
    if total == 0:
        return None
    residual = float(np.sum((ys - (slope * xs + intercept)) ** 2))
    return 1.0 - residual / total
