"""The lab against the embedded PostgreSQL 18: the run loop every study shares, presets and the
registry of studies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import psycopg
import pytest

from helpers.tune import queue_profile
from vacuumlab.errors import VacuumlabError
from vacuumlab.lab import Where
from vacuumlab.lab.registry import STUDIES, study_run
from vacuumlab.pg.connect import connect
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.custom import Script
from vacuumlab.records.params import Config, Params
from vacuumlab.store import Store
from vacuumlab.studies.base import Measured, Planned, StudyRun


@dataclass(frozen=True, slots=True)
class TinyConfig(Config):
    study: ClassVar[str] = "tiny"

    points: int = 2
    preset: str = "quick"
    target: str = "sandbox"

    @classmethod
    def presets(cls) -> dict[str, TinyConfig]:
        return {"quick": cls(), "none": cls(preset="none", points=0)}

    def checked(self, chosen: Mapping[str, Any]) -> TinyConfig:
        if self.points < 0:
            raise VacuumlabError("--points must not be negative")
        return self


@dataclass(frozen=True, slots=True)
class TinyPoint(Params):
    number: int


class Recorder:
    """A progress watcher that keeps what it is told, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def started(self, total: int) -> None:
        self.events.append(("started", total))

    def point_started(self, label: str, seconds: int | None) -> None:
        self.events.append(("point_started", label))

    def tick(self, elapsed: float, live: Mapping[str, float | None]) -> None:
        pass

    def point_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        self.events.append(("point_finished", label))

    def message(self, text: str) -> None:
        self.events.append(("message", text))


class TinyRun(StudyRun[TinyConfig, TinyPoint]):
    """A study whose points ask the server one question each."""

    study = "tiny"
    config_type = TinyConfig

    def describe(self) -> str:
        return f"{self.config.points} points"

    def plan(self) -> list[Planned[TinyPoint]]:
        return [Planned(TinyPoint(n), 0) for n in range(self.config.points)]

    def label(self, planned: Planned[TinyPoint]) -> str:
        return f"point {planned.point.number}"

    def measure_point(self, planned: Planned[TinyPoint]) -> Measured:
        with connect(self.target.dsn) as session:
            value = session.scalar("SELECT %s::int * 10", [planned.point.number])
        return Measured({"value": value}, {"line": [(0.0, 1.0), (1.0, None)]})


def test_settings_are_stored_as_the_server_shows_them(sandbox: Sandbox, tmp_path: Path) -> None:
    with psycopg.connect(sandbox.dsn) as conn:
        row = conn.execute("SHOW shared_buffers").fetchone()
    assert row is not None
    with Store.open(tmp_path / "results.sqlite") as store:
        run_id = TinyRun(TinyConfig(points=0), Target.of_sandbox(sandbox), store).execute()
        settings = store.run(run_id).settings
    assert settings["shared_buffers"] == row[0]  # e.g. "128MB", not 16384 pages with "8kB"
    assert settings["autovacuum_naptime"].endswith(("s", "min"))


def test_the_loop_commits_each_point_and_reports_it(sandbox: Sandbox, tmp_path: Path) -> None:
    recorder = Recorder()
    with Store.open(tmp_path / "results.sqlite") as store:
        run = TinyRun(TinyConfig.from_preset("quick"), Target.of_sandbox(sandbox), store, recorder)
        run_id = run.execute()
        points = store.points(run_id)
        assert store.run(run_id).status == "done"
        assert [(p.params, p.metrics["value"]) for p in points] == [
            ({"number": 0}, 0),
            ({"number": 1}, 10),
        ]
        assert store.series(points[1].id, "line") == [(0.0, 1.0), (1.0, None)]
    assert recorder.events == [
        ("started", 2),
        ("point_started", "point 0"),
        ("point_finished", "point 0"),
        ("point_started", "point 1"),
        ("point_finished", "point 1"),
    ]


def test_from_preset_overrides_and_checks() -> None:
    assert TinyConfig.from_preset("quick", points=None) == TinyConfig()
    assert TinyConfig.from_preset("none").points == 0
    with pytest.raises(VacuumlabError, match="unknown preset 'huge'; choose quick, none"):
        TinyConfig.from_preset("huge")
    with pytest.raises(VacuumlabError, match="unknown tiny study setting"):
        TinyConfig.from_preset("quick", colour="red")
    with pytest.raises(VacuumlabError, match="must not be negative"):
        TinyConfig.from_preset("quick", points=-1)


#: What a study cannot run without, beside its preset: the custom study's workload.
REQUIRED: dict[str, dict[str, Any]] = {
    "custom": {
        "schema": "CREATE TABLE t (id int)",
        "scripts": (Script(name="a.sql", text="INSERT INTO t VALUES (1);\n", weight=2),),
    },
    "tune": {"profile": queue_profile(1_000, 10.0).model_dump(mode="json")},
}


@pytest.mark.parametrize("name", sorted(STUDIES))
def test_every_study_has_presets_that_round_trip(name: str) -> None:
    run_type = STUDIES[name]
    assert run_type.study == name
    for preset in run_type.config_type.presets():
        config = run_type.config_type.from_preset(preset, **REQUIRED.get(name, {}))
        assert type(config).from_params(config.params()) == config


def test_resume_refuses_another_study_before_any_server_starts(tmp_path: Path) -> None:
    with Store.open(tmp_path / "results.sqlite") as store:
        run_id = store.create_run("toast", {"target": "sandbox"}, server_version="18", settings={})
        where = Where(data_dir=tmp_path / "no-sandbox")
        refused = pytest.raises(VacuumlabError, match="is a toast run, not churn")
        with refused, study_run("churn", store=store, where=where, resume=run_id):
            pass
        assert not (tmp_path / "no-sandbox").exists()
