"""Numbers from pgbench runs: per-second series, step summaries with
block-bootstrap confidence intervals, and the autovacuum latency sawtooth.

Pure numpy, no I/O (the logs are read in `pgbench_log`). Times are Unix epoch seconds unless
a docstring says otherwise, latencies are milliseconds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, TypeAlias

import numpy as np
from numpy.typing import NDArray

from vacuumlab.errors import VacuumlabError

# The logs are read in `pgbench_log`; its table is what every function here takes, and the
# names stay importable from here.
from vacuumlab.stats.pgbench_log import NOT_COMPLETED as NOT_COMPLETED
from vacuumlab.stats.pgbench_log import Transactions as Transactions
from vacuumlab.stats.pgbench_log import parse_pgbench_log_lines as parse_pgbench_log_lines
from vacuumlab.stats.pgbench_log import read_pgbench_logs as read_pgbench_logs

FloatArray: TypeAlias = NDArray[np.float64]
IndexArray: TypeAlias = NDArray[np.intp]

# --- per-second series -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PerSecond:
    """One value per second ``i`` of a window: the transactions completed in
    ``[start + i, start + i + 1)``. Latency statistics are NaN for a second without any.

    Percentiles use numpy's default ("linear") method: linear interpolation between the two
    nearest ranks, virtual index ``q / 100 * (n - 1)``.
    """

    t: FloatArray
    tps: FloatArray
    latency_mean_ms: FloatArray
    latency_p50_ms: FloatArray
    latency_p95_ms: FloatArray
    latency_p99_ms: FloatArray
    latency_max_ms: FloatArray


def per_second(tx: Transactions, start: float, seconds: int) -> PerSecond:
    """Per-second throughput and latency of the ``seconds`` seconds from ``start``."""
    if seconds < 0:
        raise ValueError(f"seconds must not be negative, got {seconds}")
    g = _by_second(tx, start, start + seconds, seconds)
    return PerSecond(
        t=np.arange(seconds, dtype=np.float64),
        tps=g.counts.astype(np.float64),
        latency_mean_ms=_divide(g.sums, g.counts),
        latency_p50_ms=_group_percentile(g, 50),
        latency_p95_ms=_group_percentile(g, 95),
        latency_p99_ms=_group_percentile(g, 99),
        latency_max_ms=_group_percentile(g, 100),
    )


@dataclass(frozen=True, slots=True)
class _Seconds:
    """The transactions of a window grouped by second; ``latency[bounds[i]:bounds[i + 1]]``
    are second ``i``'s latencies, ascending."""

    counts: IndexArray
    sums: FloatArray
    latency: FloatArray
    bounds: IndexArray


def _by_second(tx: Transactions, start: float, stop: float, seconds: int) -> _Seconds:
    lo, hi = (int(i) for i in np.searchsorted(tx.end, [start, stop]))
    # min(): end < stop, yet end - start can round up to ``seconds``.
    second = np.minimum(np.floor(tx.end[lo:hi] - start).astype(np.intp), seconds - 1)
    latency = tx.latency_ms[lo:hi]
    order = np.lexsort((latency, second))
    counts = np.bincount(second, minlength=seconds)
    return _Seconds(
        counts=counts,
        sums=np.bincount(second, weights=latency, minlength=seconds).astype(np.float64),
        latency=latency[order],
        bounds=np.concatenate([[0], np.cumsum(counts)]).astype(np.intp),
    )


def _divide(a: FloatArray, b: NDArray[np.number]) -> FloatArray:
    """a / b, NaN where b is 0 (without numpy's warning)."""
    out = np.full(a.shape, np.nan)
    np.divide(a, b, out=out, where=b != 0)
    return out


def _group_percentile(g: _Seconds, q: float) -> FloatArray:
    """numpy's "linear" percentile of every second, vectorised; NaN for an empty second."""
    out = np.full(g.counts.size, np.nan)
    full = g.counts > 0
    first, last = g.bounds[:-1][full], g.bounds[1:][full] - 1
    rank = (g.counts[full] - 1) * (q / 100)
    below = np.floor(rank)
    lower = first + below.astype(np.intp)
    out[full] = _lerp(g.latency[lower], g.latency[np.minimum(lower + 1, last)], rank - below)
    return out


def _lerp(a: FloatArray, b: FloatArray, t: FloatArray) -> FloatArray:
    # numpy's own formula (numpy.lib._function_base_impl._lerp), so that results match
    # np.percentile to the last bit: it interpolates from the nearer end.
    diff = b - a
    return np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


# --- step summary ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BootstrapInterval:
    """A 95 % percentile interval of block-bootstrap resamples."""

    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Summary:
    """One load step: the transactions completed in ``[start, end)``.

    ``latency_stddev_ms`` is the population standard deviation (ddof=0), as pgbench prints it
    (``sqrt(sum2 / n - mean ** 2)``). Percentiles use numpy's default ("linear") method.
    Intervals come from a block bootstrap over whole seconds: see :func:`summarize`.
    """

    transactions: int
    failed: int
    duration_s: float
    tps: float
    tps_ci: BootstrapInterval
    latency_mean_ms: float
    latency_mean_ci: BootstrapInterval
    latency_stddev_ms: float
    latency_p50_ms: float
    latency_p95_ms: float
    latency_p99_ms: float
    latency_p99_ci: BootstrapInterval


def summarize(
    tx: Transactions, start: float, end: float, *, n_boot: int = 1000, seed: int = 0
) -> Summary:
    """Throughput and latency of the transactions completed in ``[start, end)``.

    Latencies within a second are strongly autocorrelated (the autovacuum sawtooth), so an
    i.i.d. bootstrap over transactions would give absurdly narrow intervals. The window is cut
    into 1-second blocks (the last one possibly shorter), ``n_boot`` resamples of as many
    blocks are drawn with replacement, and each interval is the 2.5th-97.5th percentile of the
    statistic over the resamples: tps = transactions / seconds of the drawn blocks, mean over
    all their transactions, p99 over all their transactions, the latter approximated to within
    0.1 % (see :func:`_resampled_p99`).
    """
    if not end > start:
        raise VacuumlabError(f"empty window: end {end} is not after start {start}")
    blocks = max(1, math.ceil(end - start))
    g = _by_second(tx, start, end, blocks)
    if g.latency.size == 0:
        raise VacuumlabError(f"no transactions between {_when(start)} and {_when(end)}")
    lengths = np.ones(blocks)
    lengths[-1] = (end - start) - (blocks - 1)
    weights = _resample(blocks, n_boot, seed)
    counts = weights @ g.counts.astype(np.float64)
    p50, p95, p99 = (float(p) for p in np.percentile(g.latency, [50, 95, 99]))
    return Summary(
        transactions=int(g.latency.size),
        failed=_count_between(tx.failed_end, start, end),
        duration_s=end - start,
        tps=g.latency.size / (end - start),
        tps_ci=_interval(counts / (weights @ lengths)),
        latency_mean_ms=float(np.mean(g.latency)),
        latency_mean_ci=_interval(_divide(weights @ g.sums, counts)),
        latency_stddev_ms=float(np.std(g.latency)),
        latency_p50_ms=p50,
        latency_p95_ms=p95,
        latency_p99_ms=p99,
        latency_p99_ci=_interval(_resampled_p99(weights, g)),
    )


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def _count_between(sorted_times: FloatArray, start: float, end: float) -> int:
    lo, hi = np.searchsorted(sorted_times, [start, end])
    return int(hi - lo)


def _resample(blocks: int, n_boot: int, seed: int) -> FloatArray:
    """How often each block is drawn, for each resample: shape (n_boot, blocks)."""
    rng = np.random.default_rng(seed)
    drawn = rng.multinomial(blocks, np.full(blocks, 1 / blocks), size=n_boot)
    return drawn.astype(np.float64)


def _interval(samples: FloatArray) -> BootstrapInterval:
    """Percentile interval; NaN when no resample had a value (e.g. all drawn seconds empty)."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return BootstrapInterval(math.nan, math.nan)
    low, high = np.percentile(finite, [2.5, 97.5])
    return BootstrapInterval(float(low), float(high))


#: Relative width of the p99 histogram bins, hence the bootstrap p99's relative error bound.
_P99_BIN: Final = 0.001
_P99_MAX_BINS: Final = 8192
#: Latencies are logged in whole µs; the log-scale bins need a positive lower edge.
_RESOLUTION_MS: Final = 0.001


def _resampled_p99(weights: FloatArray, g: _Seconds) -> FloatArray:
    """The p99 (numpy "linear") of every resample, approximated from per-second histograms.

    Sorting every resample (n_boot x all transactions) would take minutes. A resample's
    distribution is a mixture of its seconds', and a mixture's quantile lies between its
    components' quantiles, so bins are only needed between the lowest and the highest
    per-second p99 (widened by 10 %). There, log-spaced bins 0.1 % wide locate the two ranks
    around the 99th percentile to within 0.1 %; values outside count as below or above. Bins
    are capped at 8192, so they widen past 0.1 % only when the per-second p99s span more than
    a factor of 3600 (0.5 % at a factor of 6e17).
    """
    if g.latency.min() == g.latency.max():
        # Every resample of a constant sample is that constant: spare it the binning error.
        constant: FloatArray = np.where(weights @ g.counts > 0, g.latency[0], np.nan)
        return constant
    p99 = _group_percentile(g, 99)
    p99 = p99[np.isfinite(p99)]
    lo = max(float(p99.min()) / 1.1, _RESOLUTION_MS)
    hi = max(float(p99.max()) * 1.1, lo)
    nbins = min(_P99_MAX_BINS, max(1, math.ceil(math.log(hi / lo) / math.log1p(_P99_BIN))))
    edges = np.geomspace(lo, hi, nbins + 1)
    # Bin 0 holds values below lo, bin nbins + 1 values from hi on.
    bins = np.searchsorted(edges, g.latency, side="right")
    second = np.repeat(np.arange(g.counts.size), g.counts)
    per_second = np.bincount(second * (nbins + 2) + bins, minlength=g.counts.size * (nbins + 2))
    hist = weights @ per_second.reshape(g.counts.size, nbins + 2).astype(np.float64)
    return _histogram_percentile(hist, np.concatenate([[lo], edges, [hi]]), 99)


def _histogram_percentile(hist: FloatArray, edges: FloatArray, q: float) -> FloatArray:
    """numpy's "linear" percentile of each row of counts; bin j spans edges[j]..edges[j + 1]."""
    cum = np.cumsum(hist, axis=1)
    total = cum[:, -1]
    rank = np.maximum(total - 1, 0) * (q / 100)
    below = np.floor(rank)
    a = _value_at_rank(hist, cum, edges, below)
    b = _value_at_rank(hist, cum, edges, np.minimum(below + 1, np.maximum(total - 1, 0)))
    out = _lerp(a, b, rank - below)
    out[total == 0] = np.nan
    return out


def _value_at_rank(
    hist: FloatArray, cum: FloatArray, edges: FloatArray, rank: FloatArray
) -> FloatArray:
    """The value of 0-based rank ``rank`` in each row, spreading a bin's values evenly over
    its span on the log scale."""
    rows = np.arange(hist.shape[0])
    j = (cum > rank[:, None]).argmax(axis=1)
    inside = hist[rows, j]
    position = (rank - (cum[rows, j] - inside) + 0.5) / np.where(inside > 0, inside, 1)
    value: FloatArray = edges[j] * (edges[j + 1] / edges[j]) ** position
    return value


# --- sawtooth and correlation ------------------------------------------------------------------


def sawtooth_amplitude(
    t: FloatArray, latency: FloatArray, vacuum_ends: Sequence[float]
) -> float | None:
    """Median over vacuum cycles of max / min latency within the cycle.

    ``t`` and ``vacuum_ends`` are on the same clock (seconds since start); a cycle is
    ``[end_k, end_k+1)`` between consecutive autovacuum ends and counts when it has at least
    3 non-NaN seconds and a positive minimum. None when no cycle counts.
    """
    ends = sorted(vacuum_ends)
    amplitudes = [
        amplitude
        for first, last in itertools.pairwise(ends)
        if (amplitude := _cycle_amplitude(latency[(t >= first) & (t < last)])) is not None
    ]
    return float(np.median(amplitudes)) if amplitudes else None


def _cycle_amplitude(latency: FloatArray) -> float | None:
    values = latency[~np.isnan(latency)]
    if values.size < 3 or values.min() <= 0:
        return None
    return float(values.max() / values.min())


def correlation(t_a: FloatArray, a: FloatArray, t_b: FloatArray, b: FloatArray) -> float | None:
    """Pearson correlation of two series sampled at different times.

    Each sample of ``a`` is paired with the nearest non-NaN sample of ``b`` within 0.5 s
    (the earlier one on a tie); unmatched and NaN samples are dropped. None with fewer than
    3 pairs or when either side is constant.
    """
    x, y = _pairs(t_a, a, t_b, b)
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    dx, dy = x - x.mean(), y - y.mean()
    r = float(np.sum(dx * dy) / math.sqrt(float(np.sum(dx * dx)) * float(np.sum(dy * dy))))
    return min(1.0, max(-1.0, r))  # rounding can step just past ±1


def _pairs(
    t_a: FloatArray, a: FloatArray, t_b: FloatArray, b: FloatArray
) -> tuple[FloatArray, FloatArray]:
    keep_b = ~(np.isnan(t_b) | np.isnan(b))
    order = np.argsort(t_b[keep_b], kind="stable")
    tb, vb = t_b[keep_b][order], b[keep_b][order]
    keep_a = ~(np.isnan(t_a) | np.isnan(a))
    ta, va = t_a[keep_a], a[keep_a]
    if tb.size == 0:
        return va[:0], va[:0]
    following = np.searchsorted(tb, ta)
    after, before = np.minimum(following, tb.size - 1), np.maximum(following - 1, 0)
    nearest = np.where(np.abs(tb[after] - ta) < np.abs(ta - tb[before]), after, before)
    matched = np.abs(tb[nearest] - ta) <= 0.5
    return va[matched], vb[nearest][matched]
