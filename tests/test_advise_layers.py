"""The advisor's layers, checked on what a fresh interpreter actually loads: records need
nothing of vacuumlab but errors, model only records, advise never talks to a server."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vacuumlab.records.advice import QUESTIONS


def loaded_by(module: str) -> set[str]:
    """The vacuumlab modules and the driver that importing ``module`` loads."""
    code = (
        f"import sys, {module}\n"
        "print('\\n'.join(m for m in sys.modules if m.startswith(('vacuumlab', 'psycopg'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(result.stdout.split())


def vacuumlab_modules(modules: set[str]) -> set[str]:
    return {m for m in modules if m.startswith("vacuumlab.")}


@pytest.mark.parametrize("module", ["vacuumlab.records.snapshot", "vacuumlab.records.advice"])
def test_records_import_only_errors(module: str) -> None:
    loaded = vacuumlab_modules(loaded_by(module))
    assert loaded <= {"vacuumlab.errors", "vacuumlab.records"} | {
        m for m in loaded if m.startswith("vacuumlab.records.")
    }
    assert not any(m.startswith("psycopg") for m in loaded_by(module))


@pytest.mark.parametrize("module", ["vacuumlab.model.thresholds", "vacuumlab.model.cost"])
def test_model_imports_only_records(module: str) -> None:
    loaded = vacuumlab_modules(loaded_by(module))
    allowed = ("vacuumlab.errors", "vacuumlab.records", "vacuumlab.model")
    assert {m for m in loaded if not m.startswith(allowed)} == set()


def test_advise_works_on_records_and_never_talks_to_a_server() -> None:
    every_question = ", ".join(f"vacuumlab.advise.{name}" for name in QUESTIONS)
    loaded = vacuumlab_modules(loaded_by(f"vacuumlab.advise, {every_question}"))
    forbidden = ("vacuumlab.collect", "vacuumlab.pg.connect", "vacuumlab.report", "vacuumlab.cli")
    assert {m for m in loaded if m.startswith(forbidden)} == set()
    assert "vacuumlab.advise.bloat" in loaded  # the question modules themselves were loaded
