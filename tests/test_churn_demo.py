"""The demo preset shows the churn study's finding: the defaults against the post's final
settings, long enough to tell apart, with one line that says what the numbers mean."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console

from vacuumlab.records.churn import POST_STEPS, ChurnConfig, ChurnPoint
from vacuumlab.report.churn.text import summary_table
from vacuumlab.store import Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_demo_runs_the_defaults_against_the_posts_final_settings() -> None:
    demo = ChurnConfig.presets()["demo"]
    assert [s.settings for s in demo.steps] == [POST_STEPS[0].settings, POST_STEPS[-1].settings]
    # Within about four minutes: the load itself, plus about 20 s to set each step up.
    assert len(demo.steps) * demo.seconds * demo.repeat <= 200
    assert demo.seconds - demo.warmup >= 90  # long enough for a few autovacuums at 10 s naptime


def _metrics(tps: float, latency: float, spread: float, dead: int, vacuums: int) -> dict[str, Any]:
    return {
        "tps": tps, "tps_ci_low": tps * (1 - spread), "tps_ci_high": tps * (1 + spread),
        "latency_mean_ms": latency, "latency_mean_ci_low": latency * (1 - spread),
        "latency_mean_ci_high": latency * (1 + spread), "latency_stddev_ms": 1.0,
        "latency_p99_ms": latency * 3, "autovacuum_count": vacuums, "dead_tuples_peak": dead,
        "sawtooth_amplitude": 1.0,
    }  # fmt: skip


def _demo_run(store: Store, spread: float) -> int:
    demo = ChurnConfig.presets()["demo"]
    run_id = store.create_run(
        "churn", demo.params(), server_version="PostgreSQL 18.0", settings={}, machine={}
    )
    figures = ((3500.0, 2.3, 80_000, 2), (3900.0, 2.0, 18_000, 11))
    for number, (step, (tps, latency, dead, vacuums)) in enumerate(
        zip(demo.steps, figures, strict=True), start=1
    ):
        store.record_point(
            run_id, ChurnPoint(number, step).params(), 0,
            _metrics(tps, latency, spread, dead, vacuums),
            started_at=T0 + timedelta(minutes=number), ended_at=T0 + timedelta(minutes=number + 1),
        )  # fmt: skip
    store.finish_run(run_id, "done")
    return run_id


def test_the_final_settings_are_compared_with_the_posts_last_step(tmp_path: Path) -> None:
    with Store.open(tmp_path / "results.sqlite") as store:
        run_id = _demo_run(store, spread=0.02)
        buffer = io.StringIO()
        Console(file=buffer, width=200).print(summary_table(store, run_id))
    rows = [line for line in buffer.getvalue().splitlines() if "│ 2 " in line]
    assert len(rows) == 1
    assert "5,268 / 2.83 / 0.81" in rows[0]  # the post's sixth step, not its second


def test_one_line_says_what_the_numbers_mean(tmp_path: Path) -> None:
    from vacuumlab.report.churn.text import finding

    with Store.open(tmp_path / "results.sqlite") as store:
        apart = finding(store, _demo_run(store, spread=0.02))
        overlapping = finding(store, _demo_run(store, spread=0.2))
    assert apart == (
        "defaults → the post's final settings: dead-tuple peak 80,000 → 18,000 "
        "(2 → 11 autovacuums), latency 2.30 → 2.00 ms, 3,500 → 3,900 tps; "
        "both 95 % intervals are apart: a real difference, not noise."
    )
    assert overlapping is not None
    assert overlapping.endswith(
        "the 95 % intervals overlap: this run cannot tell the speeds apart."
    )
