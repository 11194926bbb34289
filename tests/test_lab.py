"""The lab's run loop against the embedded PostgreSQL 18: what every run records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from vacuumlab.lab import Planned, StudyRun
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.store import Store


class _Config:
    def params(self) -> dict[str, Any]:
        return {"target": "sandbox"}


class NothingRun(StudyRun[Any, Any]):
    """A study that plans no point: the run record alone."""

    study = "nothing"

    def silent(self) -> Any:
        return None

    def validate(self) -> None:
        pass

    def plan(self) -> list[Planned]:
        return []

    def measure(self, todo: list[Planned]) -> None:
        pass


def test_settings_are_stored_as_the_server_shows_them(sandbox: Sandbox, tmp_path: Path) -> None:
    with psycopg.connect(sandbox.dsn) as conn:
        row = conn.execute("SHOW shared_buffers").fetchone()
    assert row is not None
    with Store.open(tmp_path / "results.sqlite") as store:
        run_id = NothingRun(_Config(), Target.of_sandbox(sandbox), store).execute()
        settings = store.run(run_id).settings
    assert settings["shared_buffers"] == row[0]  # e.g. "128MB", not 16384 pages with "8kB"
    assert settings["autovacuum_naptime"].endswith(("s", "min"))
