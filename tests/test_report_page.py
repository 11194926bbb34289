"""The shared run page: the pieces every study's report builds its header from."""

from __future__ import annotations

from vacuumlab.records.cost_driver import CostDriverConfig, CostDriverPoint
from vacuumlab.report.page import (
    Obs,
    is_int,
    list_text,
    of,
    param_rows,
    param_text,
    planned_repeat,
    status_notice,
    stored_config,
    typed,
    values,
)


def test_status_notice_names_what_the_study_records() -> None:
    assert status_notice("done") == []
    (running,) = status_notice("running", "steps")
    assert running.endswith("the report shows only the steps recorded so far.")
    (failed,) = status_notice("failed")
    assert (
        failed == "This run failed: the report shows only the points recorded before the failure."
    )


def test_param_rows_labelled_first_then_the_others_by_name() -> None:
    params = {"zeta": 1, "rows": 1_000_000, "preset": "quick", "steps": [1], "alpha": [1, 2]}
    labels = (("preset", "preset"), ("rows", "rows"), ("repeat", "repetitions"))
    assert param_rows(params, labels, hidden=("steps",)) == [
        ("preset", "quick"),
        ("rows", "1,000,000"),
        ("repetitions", "—"),
        ("alpha", "1, 2"),
        ("zeta", "1"),
    ]


def test_parameter_text() -> None:
    assert param_text(12_345) == "12,345"
    assert param_text(True) == "yes"
    assert list_text(12_345) == "12345"
    assert list_text([]) == "—"


def test_counts_and_types_from_untyped_parameters() -> None:
    assert is_int(3)
    assert not is_int(True)
    assert of(3, 4) == "3 of 4"
    assert of(3, 0) == "3"


def test_parameters_are_read_through_the_studys_records() -> None:
    stored = CostDriverConfig(repeat=4).params()
    config = stored_config(CostDriverConfig, stored)
    assert config == CostDriverConfig(repeat=4)
    assert planned_repeat(config) == 4
    # A config the run did not store in full is not completed from today's defaults.
    partial = {k: v for k, v in stored.items() if k != "manual"}
    assert stored_config(CostDriverConfig, partial) is None
    assert planned_repeat(None) == 1
    point = CostDriverPoint("compact", 10, 3, 1000, "manual")
    assert typed(CostDriverPoint.from_params, point.params()) == point
    assert typed(CostDriverPoint.from_params, {"distribution": "compact"}) is None


def test_observations_read_numbers_only() -> None:
    group = [Obs("a", 0, {"x": 1, "flag": True}), Obs("a", 1, {"x": 2.5, "y": None})]
    assert group[0].get("flag") is None
    assert values(group, "x") == [1.0, 2.5]
    assert values(group, "y") == []
