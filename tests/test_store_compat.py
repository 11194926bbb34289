"""A results store written before the restructuring still opens, resumes and renders.

``tests/data/store_v1.sqlite`` was written by vacuumlab as it stood before records/, lab/ and
the report pages existed (schema_version 1): one small run of each study on the embedded
PostgreSQL 18 (cost-driver, toast, churn twice, fillfactor).
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest

from vacuumlab.lab.registry import STUDIES
from vacuumlab.records import churn_spec, cost_driver_spec, fillfactor_spec, toast_spec
from vacuumlab.report import RENDERERS
from vacuumlab.store import Store

DATA = Path(__file__).parent / "data" / "store_v1.sqlite"
SPECS = {s.STUDY: s for s in (churn_spec, cost_driver_spec, fillfactor_spec, toast_spec)}


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "results.sqlite"
    shutil.copy(DATA, path)
    return path


#: Studies added after the old store was written: it cannot hold them.
NEWER = {"scheduling", "custom", "tune"}


def test_the_old_store_holds_every_study_of_its_time(old_store: Path) -> None:
    with Store.open(old_store) as store:
        studies = {run.study for run in store.runs()}
    assert studies == set(STUDIES) - NEWER


def test_each_runs_config_reads_back_as_stored(old_store: Path) -> None:
    """--resume rebuilds a run's config from its stored parameters: nothing lost, nothing added
    but the fields the study added since, at the value those runs ran with."""
    with Store.open(old_store) as store:
        for run in store.runs():
            config_type = STUDIES[run.study].config_type
            config = config_type.from_params(run.params)
            assert config.params() == {**config_type.added, **run.params}, run.study


@pytest.mark.slow
def test_each_old_run_renders_with_its_figures(old_store: Path, tmp_path: Path) -> None:
    with Store.open(old_store) as store:
        for run in store.runs():
            page = RENDERERS[run.study](store, run.id, tmp_path / f"run{run.id}")
            text = html.unescape(page.read_text())
            assert SPECS[run.study].PUBLICATION.title in text, run.study
            assert not re.search(r"seed \d", text)
            assert len(store.points(run.id)) > 1
            if run.study == "churn":  # each step's throughput, as measured then
                for point in store.points(run.id):
                    assert f"{point.metrics['tps']:.0f}" in text
