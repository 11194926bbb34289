"""The tune's search space and its first stage, on the simulator: what the default searches
for a profile, how --space narrows it (and refuses what it cannot take), and that the
simulator sees what a real server showed of a busy queue."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.profile import (
    CapturedTable,
    Column,
    ColumnStats,
    Profile,
    Rates,
    Setting,
    Shape,
)
from vacuumlab.records.tune import Dimension, TrialPoint, TrialSettings, TuneConfig
from vacuumlab.studies.tune.search import Search
from vacuumlab.studies.tune.simulated import Predictor, first_stage
from vacuumlab.studies.tune.space import default_space, narrowed


def table(name: str, rows: int, inserts: float, updates: float, deletes: float) -> CapturedTable:
    stats = ColumnStats(null_frac=0.0, avg_width=8, n_distinct=-1, correlation=1.0)
    pages = max(1, rows // 125)
    shape = Shape(
        schema_name="public", name=name, rows=rows, pages=pages, heap_bytes=pages * 8192,
        index_bytes=pages * 3000,
        columns=[Column(name="id", type="bigint", not_null=True, storage="plain", stats=stats)],
    )  # fmt: skip
    dead = updates + deletes
    rates = Rates(inserts=inserts, updates=updates, hot_updates=0, deletes=deletes,
                  dead_tuples=dead)  # fmt: skip
    return CapturedTable(shape=shape, rates=rates, explained=1)


def profile(*tables: CapturedTable) -> Profile:
    return Profile(
        vacuumlab_version="test", captured_at=datetime(2026, 1, 2, tzinfo=UTC), seconds=60,
        server_version_num=180000, tables=list(tables), source="counters",
        settings=[Setting(name="autovacuum_naptime", setting="60", unit="s", source="default")],
    )  # fmt: skip


#: The queue a real server was measured on: 50,000 rows, 1,200 dead tuples a second.
QUEUE = table("queue", 50_000, 600, 600, 600)


def keys(space: tuple[Dimension, ...]) -> set[str]:
    return {d.key for d in space}


def test_the_default_space_searches_only_what_can_matter() -> None:
    one = default_space(profile(QUEUE), 180000)
    assert "queue.autovacuum_vacuum_scale_factor" in keys(one.dimensions)
    assert "server.autovacuum_naptime" in keys(one.dimensions)
    # One table: one worker at a time, so the worker count and the shared limit cannot matter.
    assert "server.autovacuum_max_workers" not in keys(one.dimensions)
    assert "server.autovacuum_vacuum_cost_limit" not in keys(one.dimensions)
    log = table("log", 10_000, 50, 0, 0)  # inserts only
    two = default_space(profile(QUEUE, log), 180000)
    found = keys(two.dimensions)
    assert "server.autovacuum_max_workers" in found
    assert "log.autovacuum_vacuum_insert_threshold" in found
    assert "log.autovacuum_vacuum_scale_factor" not in found  # no updates or deletes
    assert "log.fillfactor" not in found  # no updates
    assert any("log: no fillfactor" in line for line in two.left_out)


def test_a_space_file_narrows_fixes_and_drops(tmp_path: Path) -> None:
    path = tmp_path / "space.toml"
    path.write_text(
        "[server]\nautovacuum_naptime = { levels = [10, 30, 60] }\n"
        '[table."public.queue"]\nautovacuum_vacuum_scale_factor = [0.01, 0.2]\n'
        "fillfactor = 90\nautovacuum_vacuum_cost_limit = false\n",
        encoding="utf-8",
    )
    found = narrowed(default_space(profile(QUEUE), 180000), path, profile(QUEUE), 180000)
    by_key = {d.key: d for d in found.dimensions}
    assert by_key["server.autovacuum_naptime"].levels == (10.0, 30.0, 60.0)
    scale = by_key["queue.autovacuum_vacuum_scale_factor"]
    assert (scale.low, scale.high, scale.log) == (0.01, 0.2, True)
    assert found.fixed == {"queue.fillfactor": "90"}
    assert "queue.fillfactor" not in by_key
    assert "queue.autovacuum_vacuum_cost_limit" not in by_key


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[server]\nautovacuum_naptime = [0, 10]\n", "out of range"),
        ("[server]\nfillfactor = [50, 90]\n", "cannot be set at server level"),
        ('[table."public.nope"]\nfillfactor = 90\n', "the profile has no table 'public.nope'"),
        ("[server]\nautovacuum_naptime = [60, 10]\n", "low below high"),
        ("[server]\nno_such_setting = 1\n", "knows no setting"),
        ("[servers]\n", "unknown section"),
        ("[server\n", "not valid TOML"),
        (
            "[server]\nautovacuum_naptime = 60\n[table.queue]\n"
            + "".join(
                f"{name} = false\n"
                for name in (
                    "autovacuum_vacuum_scale_factor", "autovacuum_vacuum_threshold",
                    "autovacuum_vacuum_insert_scale_factor", "autovacuum_vacuum_insert_threshold",
                    "autovacuum_vacuum_cost_delay", "autovacuum_vacuum_cost_limit", "fillfactor",
                )
            ),
            "leaves nothing to search",
        ),
    ],
)  # fmt: skip
def test_a_bad_space_file_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "space.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(VacuumlabError, match=message) as caught:
        narrowed(default_space(profile(QUEUE), 180000), path, profile(QUEUE), 180000)
    assert "\n" not in str(caught.value)


def test_the_simulator_sees_what_the_server_showed_of_a_busy_queue() -> None:
    """Measured on a real server (60-second steps): naptime 60 s against 10 s moved the peak
    four times over (48.8k-49.1k against 11.9k-12.3k); scale_factor 0.2 against 0.01 at
    naptime 60 s did not move it (48.8k against 49.1k)."""
    predictor = Predictor(profile(QUEUE), 1.0, 70)
    slow = predictor.predict(TrialSettings({"autovacuum_naptime": "60"}))
    fast = predictor.predict(TrialSettings({"autovacuum_naptime": "10"}))
    small = predictor.predict(
        TrialSettings({"autovacuum_naptime": "60"},
                      {"queue": {"autovacuum_vacuum_scale_factor": "0.01"}})
    )  # fmt: skip
    assert 3 < slow.dead_peak / fast.dead_peak < 6
    assert abs(small.dead_peak - slow.dead_peak) / slow.dead_peak < 0.1
    assert 9_000 < fast.dead_peak < 20_000
    assert fast.vacuums > slow.vacuums


def test_the_first_stage_finds_a_lower_peak_than_the_captured_settings() -> None:
    space = default_space(profile(QUEUE), 180000)
    stage = first_stage(
        Predictor(profile(QUEUE), 1.0, 70), space.dimensions, {}, candidates=200, seed=1
    )
    assert stage.scored == 200
    assert stage.best.prediction.dead_peak < stage.current.dead_peak / 3
    # The front is a front: no member is beaten on both scores by another.
    for a in stage.front:
        for b in stage.front:
            assert not (
                b.prediction.dead_peak < a.prediction.dead_peak
                and b.prediction.worker_s < a.prediction.worker_s
            )
    assert "queue.fillfactor" not in stage.best.values  # the simulator cannot see it


def test_a_trial_round_trips_through_the_store_params() -> None:
    point = TrialPoint(3, "search", TrialSettings({"autovacuum_naptime": "10"},
                                                  {"queue": {"fillfactor": "90"}}))  # fmt: skip
    assert TrialPoint.from_params(point.params()) == point
    config = TuneConfig.from_preset(
        "quick", profile=profile(QUEUE).model_dump(mode="json"),
        space=default_space(profile(QUEUE), 180000).dimensions,
    )  # fmt: skip
    assert TuneConfig.from_params(config.params()) == config


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"budget_s": 30.0}, "shorter than one trial"),
        ({"trials": 2}, "at least 3"),
        ({"objective": "speed"}, "--objective takes"),
        ({"profile": None}, "needs --profile"),
    ],
)
def test_a_bad_tune_config_is_refused(overrides: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"profile": profile(QUEUE).model_dump(mode="json")}
    with pytest.raises(VacuumlabError, match=message):
        TuneConfig.from_preset("quick", **(base | overrides))


def test_autovacuum_off_where_captured_is_turned_on_in_every_searched_trial() -> None:
    """Tried as a new user would: a server with autovacuum off gave 2,000 candidates that all
    scored alike (no vacuum but a forced one can run), and a pick no better than the
    current settings."""
    off = profile(QUEUE).model_copy(
        update={"settings": [Setting(name="autovacuum", setting="off", unit=None,
                                     source="configuration file")]}
    )  # fmt: skip
    space = default_space(off, 180000)
    assert space.fixed == {"server.autovacuum": "on"}
    assert any("autovacuum is off" in line for line in space.left_out)
    stage = first_stage(
        Predictor(off, 1.0, 70), space.dimensions, space.fixed, candidates=100, seed=0
    )
    assert stage.current.vacuums == 0
    assert stage.best.prediction.dead_peak < stage.current.dead_peak / 3


def test_the_search_journal_resumes_and_ranks_the_settings(tmp_path: Path) -> None:
    """The measured search's state survives its process (a journal file), and the settings'
    importance comes out once there are enough trials (it once needed scikit-learn)."""
    space = (
        Dimension("autovacuum_naptime", None, 1, 300, log=True, integer=True),
        Dimension("autovacuum_vacuum_scale_factor", "queue", 0.001, 0.4, log=True),
    )
    journal = tmp_path / "optuna.journal"
    search = Search(journal, space, {}, "dead", seed=0)
    grid = [(n, f) for n in (10, 30, 60, 120) for f in (0.01, 0.05, 0.1, 0.2)]
    for number, (naptime, scale) in enumerate(grid, 1):
        values = {"server.autovacuum_naptime": str(naptime),
                  "queue.autovacuum_vacuum_scale_factor": str(scale)}  # fmt: skip
        search.add(number, values, {"dead_tuples_peak": 1200.0 * naptime + scale})
    asked = search.ask(17)
    assert set(asked.server) == {"autovacuum_naptime"}
    again = Search(journal, space, {}, "dead", seed=0)  # as --resume opens it
    assert again.told() == set(range(1, 17))
    ranked = again.importance()
    assert set(ranked) == {"server.autovacuum_naptime", "queue.autovacuum_vacuum_scale_factor"}
    assert ranked["server.autovacuum_naptime"] > ranked["queue.autovacuum_vacuum_scale_factor"]


def test_the_answer_changes_only_what_the_captured_server_does_not_have() -> None:
    from vacuumlab.model.profiled import snapshots
    from vacuumlab.studies.tune.answer import recommendations

    captured = profile(QUEUE)
    winner = TrialSettings(
        {"autovacuum_naptime": "60", "autovacuum_vacuum_cost_limit": "2000"},
        {"queue": {"fillfactor": "100", "autovacuum_vacuum_scale_factor": "0.01"}},
    )
    recs = recommendations(winner, snapshots(captured)[1], {"queue": "public.queue"}, 180000)
    assert [r.sql for r in recs] == [
        'ALTER TABLE "public"."queue" SET ("autovacuum_vacuum_scale_factor" = \'0.01\');',
        "ALTER SYSTEM SET \"autovacuum_vacuum_cost_limit\" = '2000'; SELECT pg_reload_conf();",
    ]
