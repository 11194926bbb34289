"""Tests of the numeric analysis against values computed independently (``statistics``)."""

import math
import statistics
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from vacuumlab.errors import VacuumlabError
from vacuumlab.stats.analysis import (
    BootstrapInterval,
    Transactions,
    _by_second,
    _resample,
    _resampled_p99,
    correlation,
    parse_pgbench_log_lines,
    per_second,
    read_pgbench_logs,
    sawtooth_amplitude,
    summarize,
)

T0 = 1_700_000_000


def line(latency: int | str, epoch: int, usec: int, *extra: int, client: int = 0) -> str:
    return " ".join(str(f) for f in (client, 7, latency, 0, epoch, usec, *extra))


def quantile(data: list[float], q: int) -> float:
    """numpy's default ("linear") percentile, computed by the standard library."""
    if len(data) == 1:
        return data[0]
    return statistics.quantiles(data, n=100, method="inclusive")[q - 1]


def transactions(
    end: Sequence[float], latency: Sequence[float], failed: Sequence[float] = ()
) -> Transactions:
    return Transactions(
        end=np.array(end, dtype=np.float64),
        latency_ms=np.array(latency, dtype=np.float64),
        failed_end=np.array(failed, dtype=np.float64),
    )


def synthetic(
    seconds: int, tps: int, *, sawtooth: bool, seed: int = 1, start: float = T0
) -> Transactions:
    """Random completion times; latencies around a 20 s sawtooth (1 to 5 ms) or flat 3 ms."""
    rng = np.random.default_rng(seed)
    end = np.sort(start + rng.uniform(0, seconds, seconds * tps))
    level = 1 + 4 * ((end - start) % 20) / 20 if sawtooth else np.full(end.size, 3.0)
    latency = np.round(level * rng.lognormal(0, 0.3, end.size), 3)
    return Transactions(end=end, latency_ms=latency, failed_end=np.empty(0))


def width(ci: BootstrapInterval) -> float:
    return ci.high - ci.low


# --- parsing -----------------------------------------------------------------------------------


def test_parse_lines_keeps_latencies_and_counts_failed_and_skipped_apart() -> None:
    lines = [
        line(1500, T0, 250_000),
        line("failed", T0, 300_000),
        line(2250, T0 + 1, 5),
        line("skipped", T0 + 1, 999_999),
        line("serialization", T0 + 2, 0),
        line("deadlock", T0 + 2, 1),
        line(42, T0 + 2, 10),
    ]

    tx = parse_pgbench_log_lines(lines)

    assert tx.end.tolist() == pytest.approx([T0 + 0.25, T0 + 1.000005, T0 + 2.00001], abs=1e-6)
    assert tx.latency_ms.tolist() == [1.5, 2.25, 0.042]
    failed = [T0 + 0.3, T0 + 1.999999, T0 + 2.0, T0 + 2.000001]
    assert tx.failed_end.tolist() == pytest.approx(failed, abs=1e-6)


def test_parse_accepts_schedule_lag_and_retries_and_lines_with_newlines() -> None:
    with_lag = [line(1000, T0, 1, 17) + "\n", line(3000, T0, 2, 0) + "\n"]
    with_retries = [line(1000, T0, 1, 17, 2), line("failed", T0, 2, 0, 9)]
    mixed = [line(1000, T0, 1), line(3000, T0, 2, 5), line(5000, T0, 3, 5, 1)]

    assert parse_pgbench_log_lines(with_lag).latency_ms.tolist() == [1.0, 3.0]
    assert parse_pgbench_log_lines(with_retries).failed_end.tolist() == [
        pytest.approx(T0, abs=1e-5)
    ]
    assert parse_pgbench_log_lines(mixed).latency_ms.tolist() == [1.0, 3.0, 5.0]


def test_irregular_spacing_gives_the_same_result_as_regular_logs() -> None:
    regular = [line(lat, T0 + i // 3, 1000 * i) for i, lat in enumerate(range(100, 1000, 37))]
    regular[5] = line("failed", T0 + 1, 5)
    irregular = ["  " + regular[0].replace(" ", "\t") + " \r", "", *regular[1:], "   "]

    a, b = parse_pgbench_log_lines(regular), parse_pgbench_log_lines(irregular)

    assert a.end.tolist() == b.end.tolist()
    assert a.latency_ms.tolist() == b.latency_ms.tolist()
    assert a.failed_end.tolist() == b.failed_end.tolist()
    assert a.failed_end.tolist() == [pytest.approx(T0 + 1.000005, abs=1e-6)]


def test_read_merges_thread_files_and_sorts_by_completion(tmp_path: Path) -> None:
    thread0 = tmp_path / "pgbench_log.4242"
    thread1 = tmp_path / "pgbench_log.4242.1"
    thread0.write_text("\n".join([line(100, T0, 500_000), line(300, T0 + 2, 0)]) + "\n")
    thread1.write_text(
        "\n".join(
            [
                line(200, T0, 100_000, client=1),
                line("failed", T0 + 1, 0, client=1),
                line(400, T0 + 3, 0, client=1),
            ]
        )
        + "\n"
    )

    tx = read_pgbench_logs([thread0, thread1])

    assert tx.end.tolist() == [T0 + 0.1, T0 + 0.5, T0 + 2, T0 + 3]
    assert tx.latency_ms.tolist() == [0.2, 0.1, 0.3, 0.4]
    assert tx.failed_end.tolist() == [T0 + 1]
    assert not tx.end.flags.writeable


def test_empty_logs_give_no_transactions(tmp_path: Path) -> None:
    empty = tmp_path / "log.1"
    empty.write_text("\n\n")

    for tx in (read_pgbench_logs([empty]), read_pgbench_logs([]), parse_pgbench_log_lines([])):
        assert (tx.end.size, tx.latency_ms.size, tx.failed_end.size) == (0, 0, 0)


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("0 1 2 3", "expected 6 to 8 fields, got 4"),
        ("0 1 2 3 4 5 6 7 8", "expected 6 to 8 fields, got 9"),
        (line("abc", T0, 0), "time must be microseconds"),
        (line(-5, T0, 0), "time must be microseconds"),
        (line("1.5", T0, 0), "time must be microseconds"),
        (line(100, T0, 1_000_000), "time_us must be below 1000000"),
        ("0 1 5 failed 1700000000 0", "every field but time must be a non-negative integer"),
        ("0 1 5 0 1700000000 -3", "every field but time must be a non-negative integer"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, bad: str, reason: str) -> None:
    log = tmp_path / "pgbench_log.99.2"
    log.write_text("\n".join([line(100, T0, 0), line(200, T0, 1), bad, line(300, T0, 2)]))

    with pytest.raises(VacuumlabError, match=r"pgbench_log\.99\.2 line 3: ") as caught:
        read_pgbench_logs([log])

    message = str(caught.value)
    assert reason in message
    assert "\n" not in message


def test_malformed_given_lines_are_numbered_from_one() -> None:
    with pytest.raises(VacuumlabError, match=r"^run-7 line 2: expected 6 to 8 fields"):
        parse_pgbench_log_lines([line(1, T0, 0), "garbage"], source="run-7")


def test_unreadable_log_is_a_vacuumlab_error(tmp_path: Path) -> None:
    with pytest.raises(VacuumlabError, match=r"cannot read pgbench log .*missing\.log"):
        read_pgbench_logs([tmp_path / "missing.log"])


def test_transactions_must_be_sorted() -> None:
    with pytest.raises(ValueError, match="sorted"):
        transactions([2.0, 1.0], [1.0, 1.0])


# --- per-second series ---------------------------------------------------------------------


def test_per_second_buckets_and_percentiles() -> None:
    start = 1000.0
    second0 = [(1000.0, 4.0), (1000.2, 1.0), (1000.5, 3.0), (1000.999, 2.0), (1000.7, 9.5)]
    second2 = [(1002.0, 10.0)]
    outside = [(999.999, 50.0), (1003.0, 60.0)]
    rows = sorted(second0 + second2 + outside)
    tx = transactions([r[0] for r in rows], [r[1] for r in rows], failed=[1000.1, 1001.5])

    ps = per_second(tx, start, 3)

    data = [lat for _, lat in second0]
    assert ps.t.tolist() == [0.0, 1.0, 2.0]
    assert ps.tps.tolist() == [5.0, 0.0, 1.0]
    for values, q in [
        (ps.latency_p50_ms, 50),
        (ps.latency_p95_ms, 95),
        (ps.latency_p99_ms, 99),
    ]:
        assert values[0] == pytest.approx(quantile(data, q))
        assert math.isnan(values[1])
        assert values[2] == 10.0
    assert ps.latency_mean_ms[0] == pytest.approx(statistics.fmean(data))
    assert ps.latency_max_ms[0] == max(data)
    assert math.isnan(ps.latency_mean_ms[1])
    assert math.isnan(ps.latency_max_ms[1])
    assert (ps.latency_mean_ms[2], ps.latency_max_ms[2]) == (10.0, 10.0)


def test_per_second_percentiles_match_numpy_on_random_data() -> None:
    tx = synthetic(5, 997, sawtooth=True)
    ps = per_second(tx, T0, 5)
    second = np.floor(tx.end - T0)
    for i in range(5):
        expected = np.percentile(tx.latency_ms[second == i], [50, 95, 99, 100])
        got = [ps.latency_p50_ms[i], ps.latency_p95_ms[i], ps.latency_p99_ms[i]]
        assert [*got, ps.latency_max_ms[i]] == expected.tolist()


def test_per_second_of_no_seconds_is_empty() -> None:
    ps = per_second(transactions([1.0], [1.0]), 0.0, 0)
    assert ps.t.size == ps.tps.size == ps.latency_p99_ms.size == 0


# --- summary -------------------------------------------------------------------------------


def test_summary_matches_statistics_on_the_window() -> None:
    rng = np.random.default_rng(7)
    end = np.sort(T0 + rng.uniform(-2, 12, 400))
    latency = np.round(rng.gamma(2.0, 1.5, end.size), 3)
    failed = np.sort(T0 + rng.uniform(-2, 12, 30))
    tx = Transactions(end=end, latency_ms=latency, failed_end=failed)
    start, stop = T0 + 0.5, T0 + 10.5
    window = [float(v) for e, v in zip(end, latency, strict=True) if start <= e < stop]

    s = summarize(tx, start, stop)

    assert s.transactions == len(window)
    assert s.failed == sum(1 for f in failed if start <= f < stop)
    assert s.duration_s == pytest.approx(10.0)
    assert s.tps == pytest.approx(len(window) / 10.0)
    assert s.latency_mean_ms == pytest.approx(statistics.fmean(window))
    assert s.latency_stddev_ms == pytest.approx(statistics.pstdev(window))  # ddof=0
    assert s.latency_p50_ms == pytest.approx(quantile(window, 50))
    assert s.latency_p95_ms == pytest.approx(quantile(window, 95))
    assert s.latency_p99_ms == pytest.approx(quantile(window, 99))
    assert s.tps_ci.low <= s.tps <= s.tps_ci.high
    assert s.latency_mean_ci.low <= s.latency_mean_ms <= s.latency_mean_ci.high
    assert s.latency_p99_ci.low <= s.latency_p99_ms <= s.latency_p99_ci.high


def test_summary_is_reproducible_for_a_seed() -> None:
    tx = synthetic(20, 200, sawtooth=True)
    assert summarize(tx, T0, T0 + 20, seed=3) == summarize(tx, T0, T0 + 20, seed=3)
    assert summarize(tx, T0, T0 + 20, seed=3) != summarize(tx, T0, T0 + 20, seed=4)


def test_intervals_narrow_with_more_data() -> None:
    short = summarize(synthetic(30, 300, sawtooth=False), T0, T0 + 30)
    long = summarize(synthetic(300, 300, sawtooth=False, seed=2), T0, T0 + 300)

    assert width(long.tps_ci) < width(short.tps_ci)
    assert width(long.latency_mean_ci) < width(short.latency_mean_ci)
    assert width(long.latency_p99_ci) < width(short.latency_p99_ci)
    for s in (short, long):
        assert s.tps_ci.low <= s.tps <= s.tps_ci.high
        assert s.latency_mean_ci.low <= s.latency_mean_ms <= s.latency_mean_ci.high
        assert s.latency_p99_ci.low <= s.latency_p99_ms <= s.latency_p99_ci.high


def test_constant_log_gives_point_intervals() -> None:
    end = [T0 + second + k / 10 for second in range(30) for k in range(10)]
    s = summarize(transactions(end, [2.0] * len(end)), T0, T0 + 30)

    assert s.tps_ci == BootstrapInterval(10.0, 10.0)
    assert s.latency_mean_ci == BootstrapInterval(2.0, 2.0)
    assert s.latency_p99_ci == BootstrapInterval(2.0, 2.0)
    assert (s.tps, s.latency_mean_ms, s.latency_stddev_ms, s.latency_p99_ms) == (10, 2, 0, 2)


def test_block_bootstrap_is_wider_than_iid_for_a_sawtooth() -> None:
    tx = synthetic(120, 200, sawtooth=True)
    rng = np.random.default_rng(0)
    iid_means = [rng.choice(tx.latency_ms, tx.latency_ms.size).mean() for _ in range(400)]
    iid = BootstrapInterval(*(float(v) for v in np.percentile(iid_means, [2.5, 97.5])))

    block = summarize(tx, T0, T0 + 120).latency_mean_ci

    assert block.low < iid.low < iid.high < block.high
    assert width(block) > 4 * width(iid)


def test_partial_last_second_counts_for_its_length() -> None:
    # 10 transactions per second over 10.5 s: every block, even the half one, runs at 10 tps.
    end = [T0 + i / 10 for i in range(105)]
    s = summarize(transactions(end, [1.0] * len(end)), T0, T0 + 10.5)

    assert s.tps == pytest.approx(10.0)
    assert s.tps_ci.low == pytest.approx(10.0)
    assert s.tps_ci.high == pytest.approx(10.0)


def test_resampled_p99_is_within_a_tenth_of_a_percent_of_exact() -> None:
    tx = synthetic(40, 500, sawtooth=True)
    seconds = _by_second(tx, T0, T0 + 40, 40)
    weights = _resample(40, 100, seed=5)
    per_block = np.split(seconds.latency, seconds.bounds[1:-1])

    approx = _resampled_p99(weights, seconds)

    for row, got in zip(weights, approx, strict=True):
        drawn = np.concatenate([np.repeat(b, int(k)) for b, k in zip(per_block, row, strict=True)])
        assert got == pytest.approx(np.percentile(drawn, 99), rel=1e-3)


def test_empty_window_is_an_error() -> None:
    tx = transactions([T0 + 1.0], [1.0], failed=[T0 + 20.0])
    with pytest.raises(VacuumlabError, match=r"^no transactions between 2023-11-14T22:13:25"):
        summarize(tx, T0 + 5, T0 + 25)
    with pytest.raises(VacuumlabError, match="not after start"):
        summarize(tx, T0 + 5, T0 + 5)


# --- sawtooth and correlation ----------------------------------------------------------------


def test_sawtooth_amplitude_is_the_median_of_max_over_min_per_cycle() -> None:
    # Three 30 s cycles ramping from 1 ms to 2, 5 and 4 ms; a NaN second in the middle one.
    t = np.arange(90, dtype=np.float64)
    latency = np.concatenate([np.linspace(1.0, peak, 30) for peak in (2.0, 5.0, 4.0)])
    latency[40] = np.nan

    assert sawtooth_amplitude(t, latency, [60.0, 0.0, 30.0, 90.0]) == pytest.approx(4.0)
    assert sawtooth_amplitude(t, latency, [0.0, 30.0]) == pytest.approx(2.0)


def test_sawtooth_amplitude_needs_a_complete_cycle_of_three_seconds() -> None:
    t = np.arange(10, dtype=np.float64)
    latency = np.array([1, 2, 3, np.nan, np.nan, 4, 5, 6, 7, 8], dtype=np.float64)

    assert sawtooth_amplitude(t, latency, []) is None
    assert sawtooth_amplitude(t, latency, [5.0]) is None
    assert sawtooth_amplitude(t, latency, [2.0, 6.0]) is None  # seconds 2-5: only 3.0 and 4.0
    assert sawtooth_amplitude(t, latency, [2.0, 7.0]) == pytest.approx(5.0 / 3.0)


def test_correlation_of_a_series_with_itself_and_its_negative() -> None:
    t = np.arange(50, dtype=np.float64)
    a = np.sin(t / 5) + t / 40

    assert correlation(t, a, t, a) == pytest.approx(1.0)
    assert correlation(t, a, t + 0.3, -a) == pytest.approx(-1.0)
    assert correlation(t, np.full(50, 3.0), t, a) is None
    assert correlation(t, a, t, np.full(50, 3.0)) is None
    assert correlation(t, a, t + 100, a) is None  # nothing within 0.5 s
    assert correlation(t[:2], a[:2], t[:2], a[:2]) is None


def test_correlation_pairs_nearest_samples_and_drops_nan() -> None:
    t_a = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    a = np.array([1.0, 2.0, np.nan, 4.0, 3.0, 7.0, 1.0])
    t_b = np.array([4.4, 0.2, 0.9, 2.1, 3.5, 5.0, 9.0, 6.2])
    b = np.array([8.0, 5.0, 1.0, 6.0, 2.0, 9.0, 0.0, np.nan])
    # a(0)~b(0.2), a(1)~b(0.9), a(2) is NaN, a(3)~b(3.5) (exactly 0.5 s away), a(4)~b(4.4),
    # a(5)~b(5.0); a(6) has only a NaN b within 0.5 s (b(5.0) is 1 s away).
    expected = statistics.correlation([1.0, 2.0, 4.0, 3.0, 7.0], [5.0, 1.0, 2.0, 8.0, 9.0])

    assert correlation(t_a, a, t_b, b) == pytest.approx(expected)
