"""The scheduling study: its plan and workload, what the 1 Hz samples say, predicted against
measured, and one tiny run on the sandbox end to end."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from vacuumlab.errors import VacuumlabError
from vacuumlab.lab.registry import study_run
from vacuumlab.lab.targets import Where
from vacuumlab.model.simulator import Launcher, Subject, simulate
from vacuumlab.pg.pgbench import Load, command
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.scheduling import (
    QUICK_ARMS,
    Arm,
    SchedulingConfig,
    SchedulingPoint,
    TableSample,
)
from vacuumlab.report import RENDERERS
from vacuumlab.store import Store
from vacuumlab.studies import scheduling
from vacuumlab.studies import scheduling_compare as cmp

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def test_workload_spreads_churn_geometrically_and_scatters_it_over_pg_class_order() -> None:
    loads = cmp.workload(40, 8, 50.0, 5_000)
    assert {(t.rows, t.hot, t.fillfactor) for t in loads} == {(5_000, False, 100)}
    weights = sorted((t.weight for t in loads), reverse=True)
    assert [t.name for t in loads][:2] == ["sched_00", "sched_01"]
    assert weights.count(0) == 8
    assert weights[0] == 500
    assert weights[31] == 10
    hottest = next(i for i, t in enumerate(loads) if t.weight == 500)
    coldest = next(i for i, t in enumerate(loads) if t.weight == 10)
    assert abs(hottest - coldest) > 1  # not a ramp in creation order


def test_the_mixed_workload_has_hot_only_tables_churners_and_one_busy_table() -> None:
    loads = cmp.mixed_workload(5_000, 100_000)
    hot = [t for t in loads if t.hot]
    churners = [t for t in loads if not t.hot and t.rows == 5_000]
    (busy,) = [t for t in loads if t.rows == 100_000]
    assert (len(loads), len(hot), len(churners)) == (10, 5, 4)
    assert len({t.name for t in loads}) == 10
    assert all(t.fillfactor == cmp.HOT_FILLFACTOR < 100 for t in hot)
    assert busy.fillfactor == 100
    assert not busy.hot
    # The busy table takes the most transactions and far more rows: most of the workers' time.
    assert busy.weight > sum(t.weight for t in churners)
    assert busy.weight > 3 * max(t.weight for t in churners)
    weights = sorted(t.weight for t in churners)
    assert weights[-1] / weights[0] == 8
    # Neither kind is a block in pg_class order: a worker's list mixes them.
    kinds = ["hot" if t.hot else "other" for t in loads]
    assert kinds != sorted(kinds)


def test_hot_scripts_change_a_column_no_index_covers() -> None:
    hot, churner = cmp.TableLoad("h", 1, 700, hot=True), cmp.TableLoad("c", 1, 900)
    assert scheduling.script_text(hot) == (
        "\\set id random(1, 700)\nUPDATE vacuumlab.h SET hits = hits + 1 WHERE id = :id;\n"
    )
    assert "SET v = v + 1" in scheduling.script_text(churner)
    assert "random(1, 900)" in scheduling.script_text(churner)


def test_a_mixed_config_refuses_the_spread_workloads_shape() -> None:
    mixed = SchedulingConfig.from_preset("quick", workload="mixed")
    assert (mixed.workload, mixed.busy_rows) == ("mixed", 100_000)
    assert SchedulingConfig.from_params(mixed.params()) == mixed
    assert SchedulingConfig.from_preset("quick").workload == "spread"
    with pytest.raises(VacuumlabError, match="--quiet, --tables shape the spread workload"):
        SchedulingConfig.from_preset("quick", workload="mixed", tables=10, quiet=0)
    with pytest.raises(VacuumlabError, match="--workload must be one of spread, mixed"):
        SchedulingConfig.from_preset("quick", workload="hot")
    with pytest.raises(VacuumlabError, match="--busy-rows"):
        SchedulingConfig.from_preset("quick", workload="mixed", busy_rows=0)


def test_the_quick_preset_has_a_saturated_and_a_spare_arm() -> None:
    quick = SchedulingConfig.from_preset("quick")
    assert quick.arms == QUICK_ARMS
    workers = [a.workers for a in quick.arms]
    assert min(workers) == 1
    assert max(workers) == 3
    assert all(5 <= a.naptime_s <= 15 for a in quick.arms)
    assert len(quick.arms) * quick.seconds <= 8 * 60
    assert SchedulingConfig.from_params(quick.params()) == quick
    point = SchedulingPoint(2, quick.arms[1])
    assert SchedulingPoint.from_params(point.params()) == point


def test_arm_settings_are_the_servers_names() -> None:
    arm = Arm("x", 2, 7, 30, 4.5)
    assert arm.settings() == {
        "autovacuum_max_workers": "2",
        "autovacuum_naptime": "7s",
        "autovacuum_vacuum_cost_limit": "30",
        "autovacuum_vacuum_cost_delay": "4.5ms",
    }


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"quiet": 40}, "--quiet"),
        ({"seconds": 60, "warmup": 20, "interval": 40}, "--seconds (60)"),
        ({"spread": 0.5}, "--spread"),
        ({"tables": 200}, "at most 100"),
    ],
)
def test_bad_configs_are_one_line_errors(overrides: dict[str, object], fragment: str) -> None:
    with pytest.raises(VacuumlabError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        SchedulingConfig.from_preset("quick", **overrides)


def test_weighted_scripts_become_file_at_weight() -> None:
    load = Load(Path("unused.sql"), weighted=((Path("a.sql"), 5), (Path("b.sql"), 1)))
    args = command(Path("pgbench"), load, "dsn")
    assert "--file=a.sql@5" in args
    assert "--file=b.sql@1" in args
    assert "--file=unused.sql" not in args


def sample(t: float, table: str, count: int, end: float | None, total: float) -> TableSample:
    return TableSample(
        at=T0 + timedelta(seconds=t),
        table_name=table,
        n_dead_tup=int(10 * t),
        autovacuum_count=count,
        last_autovacuum=None if end is None else T0 + timedelta(seconds=end),
        total_autovacuum_time_ms=total,
    )


def test_a_vacuum_starts_at_its_end_less_the_time_it_added() -> None:
    samples = [
        sample(1, "a", 0, None, 0.0),
        sample(2, "a", 0, None, 0.0),
        sample(3, "a", 1, 2.75, 500.0),  # ended at 2.75 s after 0.5 s
        sample(4, "a", 1, 2.75, 500.0),
        sample(5, "b", 3, 1.0, 90.0),
        sample(6, "b", 4, 5.5, 100.0),
    ]
    found = cmp.vacuums_seen(samples, T0)
    assert [(v.table, round(v.start, 3), v.end) for v in found] == [
        ("a", 2.25, 2.75),
        ("b", 5.49, 5.5),
    ]


def test_the_next_launch_follows_the_last_worker_seen() -> None:
    assert cmp.next_launch([3.0, 8.0, 13.0], 20.0, 5.0) == pytest.approx(3.0)
    assert cmp.next_launch([21.0], 20.0, 5.0) is None
    assert cmp.next_launch([], 20.0, 5.0) is None


def test_errors_and_medians_count_only_tables_they_say_something_about() -> None:
    measured = cmp.measured_sides(
        [cmp.Vacuum("a", 12.0, 13.0), cmp.Vacuum("a", 22.0, 23.0), cmp.Vacuum("a", 5.0, 6.0)],
        {"a": [(11.0, 800.0), (21.0, 1000.0), (4.0, 5000.0)], "b": [(15.0, 30.0)], "c": []},
        (10.0, 30.0),
    )
    predicted = {
        "s.a": cmp.Side([12.5, 22.5, 27.0], [0.5, 0.5, 0.5], 1100.0),
        "s.b": cmp.Side([], [], 30.0),
    }
    results = cmp.compare(["a", "b", "c"], "s", measured, predicted, {"s.a": 100.0})
    a, b, c = results
    assert a.measured.vacuums == 2  # the one before the window is not the simulator's
    assert a.measured.peak_dead == 1000.0
    assert a.count_error == pytest.approx(0.5)
    assert a.peak_error == pytest.approx(0.1)
    assert a.duration_error == pytest.approx(0.5)
    assert a.first_start_error_s == pytest.approx(0.5)
    assert b.count_error is None
    assert b.peak_error == 0.0
    assert c.peak_error is None
    summary = cmp.summarize(results)
    assert summary.counted == 1
    assert summary.count_error == pytest.approx(0.5)
    assert summary.peak_error == pytest.approx(0.05)
    assert (summary.vacuums_measured, summary.vacuums_predicted) == (2, 3)


def test_predicted_sides_move_onto_the_loads_clock() -> None:
    subject = Subject(
        label="s.a", is_toast=False, order=1, enabled=True, vacuum_base=50, vacuum_scale=0.0,
        vacuum_cap=None, insert_base=None, insert_scale=0.0, unfrozen=1.0, reltuples=1000,
        live_per_second=0, dead=0, dead_per_second=10, inserted=0, inserts_per_second=0,
        xid_age=0, xid_limit=float("inf"), aggressive_age=float("inf"), freeze_min_age=0,
        failsafe_age=float("inf"), pages=10, all_visible=0, index_pages=0, n_indexes=0, page_hit=1,
        page_dirty=20,
    )  # fmt: skip
    outcome = simulate([subject], Launcher(naptime_s=10, workers=1, first_launch_s=1), 60)
    sides = cmp.predicted_sides(outcome, 100.0)
    assert sides["s.a"].starts[0] == pytest.approx(111.0)  # due at 5 s, visits at 1 and 11
    assert sides["s.a"].vacuums == len(outcome.spans)


def test_busy_share_counts_only_the_window() -> None:
    assert cmp.busy_share([(0.0, 20.0), (25.0, 30.0)], (10.0, 30.0), 2) == pytest.approx(0.375)


@pytest.mark.slow
def test_a_tiny_run_records_autovacuums_and_renders_both_timelines(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """A tiny preset on the sandbox: the recording finds autovacuums, the simulator predicts
    some, and the report draws both timelines."""
    overrides = {
        "seconds": 40, "warmup": 4, "interval": 14, "tables": 6, "quiet": 1, "rows": 1000,
        "arms": (Arm("1 worker, naptime 5 s", 1, 5),),
    }  # fmt: skip
    where = Where(dsn=sandbox.dsn, allow_alter_system=True)
    with Store.open(tmp_path / "r.sqlite") as store:
        with study_run("scheduling", store=store, where=where, overrides=overrides) as run:
            run_id = run.execute()
        (point,) = store.points(run_id)
        assert (point.metrics["vacuums_measured"] or 0) > 0
        assert (point.metrics["vacuums_predicted"] or 0) > 0
        assert point.metrics["median_count_error"] is not None
        names = sorted(
            {k.split("|")[0] for k in point.metrics if "|" in k}
            & {k.split("|")[0] for k, v in point.metrics.items() if "|vacuums_" in k and v}
        )
        measured = [t for t in names if store.series(point.id, f"measured|{t}")]
        predicted = [t for t in names if store.series(point.id, f"predicted|{t}")]
        page = RENDERERS["scheduling"](store, run_id, tmp_path / "report")
    html = page.read_text(encoding="utf-8")
    assert measured
    assert predicted
    assert html.count("<svg") == 1
    assert 'id="chart-arm-1-0-axes_1"' in html  # measured, above
    assert 'id="chart-arm-1-0-axes_2"' in html  # predicted, below
    # One bar collection per table and panel (the shaded windows are patches).
    bars = len(re.findall(r'id="chart-arm-1-0-PolyCollection_\d+"', html))
    assert bars == len(measured) + len(predicted)
    assert "sched_00" in html


@pytest.mark.slow
def test_a_tiny_mixed_run_keeps_hot_tables_hot_and_its_snapshots(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The mixed workload on the sandbox: every update of the HOT tables is HOT and none of
    the others' is, the busy table is vacuumed, and the arm's two snapshots are kept to
    predict again from."""
    overrides = {
        "workload": "mixed", "seconds": 40, "warmup": 4, "interval": 14, "rows": 1000,
        "busy_rows": 20_000, "arms": (Arm("2 workers, naptime 2 s", 2, 2),),
    }  # fmt: skip
    where = Where(dsn=sandbox.dsn, allow_alter_system=True)
    with Store.open(tmp_path / "r.sqlite") as store:
        with study_run("scheduling", store=store, where=where, overrides=overrides) as run:
            run_id = run.execute()
            directory = run.artifacts / "arm-1-rep-0"
        (point,) = store.points(run_id)
    m = point.metrics
    hot = {t.name: m[f"{t.name}|hot_share"] for t in cmp.mixed_workload(1000, 20_000)}
    assert {v for k, v in hot.items() if "_hot_" in k} == {1.0}
    assert {v for k, v in hot.items() if "_hot_" not in k} == {0.0}
    assert (m["sched_busy|vacuums_measured"] or 0) > 0
    first, second = scheduling.load_snapshots(directory / scheduling.SNAPSHOTS)
    assert second.taken_at > first.taken_at
    names = {t.heap.name for t in second.tables}
    assert set(hot) <= names
