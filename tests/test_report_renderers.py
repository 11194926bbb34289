"""RENDERERS: every study's run renders through the registry, from the store alone; and the
report package stays on its side of the layers."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import pytest
from markupsafe import escape
from rich.console import Console

from helpers.advice_record import full_advice
from helpers.cost_driver import make_cost_driver_run
from helpers.custom import make_custom_run
from helpers.fillfactor import make_fillfactor_run
from helpers.report import make_churn_run
from helpers.scheduling import make_scheduling_run
from helpers.toast import make_toast_run
from helpers.tune_report import make_tune_run
from vacuumlab.errors import VacuumlabError
from vacuumlab.records import (
    churn_spec,
    cost_driver_spec,
    custom_spec,
    fillfactor_spec,
    scheduling_spec,
    toast_spec,
    tune_spec,
)
from vacuumlab.report import RENDERERS
from vacuumlab.report.advice.html import render_html
from vacuumlab.report.advice.markdown import render_markdown
from vacuumlab.report.advice.text import render as render_text
from vacuumlab.report.churn.text import summary_table
from vacuumlab.store import Store

SPECS = (
    churn_spec, cost_driver_spec, fillfactor_spec, toast_spec, scheduling_spec, custom_spec,
    tune_spec,
)  # fmt: skip
MAKERS: dict[str, Callable[[Store], int]] = {
    churn_spec.STUDY: lambda s: make_churn_run(s, steps=2),
    cost_driver_spec.STUDY: lambda s: make_cost_driver_run(s, repeat=1, manual=True),
    fillfactor_spec.STUDY: lambda s: make_fillfactor_run(s, repeat=2),
    toast_spec.STUDY: lambda s: make_toast_run(s),
    scheduling_spec.STUDY: lambda s: make_scheduling_run(s),
    custom_spec.STUDY: lambda s: make_custom_run(s, recorded=2),
    tune_spec.STUDY: make_tune_run,
}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Every study's fixture run, rendered through RENDERERS."""
    root = tmp_path_factory.mktemp("renderers")
    with Store.open(root / "r.sqlite") as store:
        yield {
            study: RENDERERS[study](store, make(store), root / study)
            for study, make in MAKERS.items()
        }


def test_every_study_has_a_renderer() -> None:
    # And a recorded `vacuumlab watch`, whose runs are not a study's (test_watch_recorder.py).
    assert set(RENDERERS) == {spec.STUDY for spec in SPECS} | {"watch"}


def test_each_study_renders_through_the_registry(pages: dict[str, Path]) -> None:
    for study, path in pages.items():
        assert path.name == "report.html", study
        html = path.read_text(encoding="utf-8")
        assert html.startswith("<!DOCTYPE html>"), study
        assert "<svg" in html, study
        assert list(path.parent.glob("*.png")), study


#: A run of each study with nothing recorded yet: interrupted before its first point.
EMPTY: dict[str, Callable[[Store], int]] = {
    churn_spec.STUDY: lambda s: make_churn_run(s, steps=0, planned=3, status="interrupted"),
    cost_driver_spec.STUDY: lambda s: make_cost_driver_run(s, recorded=0, status="interrupted"),
    fillfactor_spec.STUDY: lambda s: make_fillfactor_run(s, recorded=0, status="interrupted"),
    toast_spec.STUDY: lambda s: make_toast_run(s, recorded=0, status="interrupted"),
    custom_spec.STUDY: lambda s: make_custom_run(s, recorded=0, status="interrupted"),
}


def refused(study: str, store: Store, run_id: int, out: Path) -> str:
    """The one-line error a study's renderer gives for ``run_id``; nothing is written."""
    with pytest.raises(VacuumlabError) as info:
        RENDERERS[study](store, run_id, out)
    message = str(info.value)
    assert "\n" not in message
    assert not out.exists()
    return message


@pytest.mark.parametrize("study", sorted(MAKERS))
def test_an_unknown_run_is_refused(study: str, store: Store, tmp_path: Path) -> None:
    assert "no run 42" in refused(study, store, 42, tmp_path / "out")


@pytest.mark.parametrize("study", sorted(MAKERS))
def test_another_studys_run_is_refused(study: str, store: Store, tmp_path: Path) -> None:
    other = make_toast_run(store) if study != toast_spec.STUDY else make_churn_run(store, steps=1)
    assert f"not a '{study}' run" in refused(study, store, other, tmp_path / "out")
    foreign = store.create_run("other", {}, server_version="18.6", settings={}, machine={})
    assert f"not a '{study}' run" in refused(study, store, foreign, tmp_path / "out")


@pytest.mark.parametrize("study", sorted(EMPTY))
def test_a_run_without_points_is_refused(study: str, store: Store, tmp_path: Path) -> None:
    message = refused(study, store, EMPTY[study](store), tmp_path / "out")
    assert re.search(r"has no recorded (points|steps) yet \(status interrupted\)", message)


REPORT_MODULES = (
    "vacuumlab.report",
    "vacuumlab.report.page",
    "vacuumlab.report.common",
    "vacuumlab.report.charts",
    "vacuumlab.report.churn",
    "vacuumlab.report.cost_driver",
    "vacuumlab.report.fillfactor",
    "vacuumlab.report.toast",
    "vacuumlab.report.scheduling",
    "vacuumlab.report.custom",
    "vacuumlab.report.tune",
    "vacuumlab.report.watch",
    "vacuumlab.report.markdown",
    "vacuumlab.report.advice",
    "vacuumlab.report.advice.view",
    "vacuumlab.report.advice.markdown",
    "vacuumlab.report.advice.html",
    "vacuumlab.report.advice.text",
    "vacuumlab.report.churn.text",
    "vacuumlab.report.tune.text",
    "vacuumlab.report.snapshot",
    "vacuumlab.report.snapshot.text",
    "vacuumlab.report.simulation",
    "vacuumlab.report.simulation.text",
    "vacuumlab.report.simulation.markdown",
    "vacuumlab.report.simulation.html",
    "vacuumlab.report.compare",
    "vacuumlab.report.verification",
)
FORBIDDEN = (
    "psycopg", "vacuumlab.pg", "vacuumlab.lab", "vacuumlab.cli", "vacuumlab.advise",
    "vacuumlab.studies", "vacuumlab.watch",
)  # fmt: skip


#: Run in one fresh interpreter: imports each module in turn and prints, after each, the
#: modules that import loaded (a line with the module's name, then one per loaded module).
_LOADS = """
import importlib, sys
for name in sys.argv[1:]:
    before = set(sys.modules)
    importlib.import_module(name)
    print("== " + name)
    print("\\n".join(sorted(set(sys.modules) - before)))
"""


@pytest.fixture(scope="module")
def loads() -> dict[str, set[str]]:
    """What importing each report module loaded, in one fresh interpreter: the modules are
    imported in REPORT_MODULES' order, so the first (the registry) loads what it would alone,
    and each later one what it adds. Together they are everything each one loads: a module
    cannot have a forbidden import hidden by an earlier one that did not itself load it."""
    out = subprocess.run(
        [sys.executable, "-c", _LOADS, *REPORT_MODULES], capture_output=True, text=True, check=True
    ).stdout
    loaded: dict[str, set[str]] = {}
    for block in out.split("== ")[1:]:
        name, *modules = block.split()
        loaded[name] = set(modules)
    assert list(loaded) == list(REPORT_MODULES)
    return loaded


def test_report_modules_load_no_driver_no_lab_no_study_and_no_watch(
    loads: dict[str, set[str]],
) -> None:
    """A report reads what a study or a recorded watch stores from its spec in records/, so it
    loads neither the studies nor the watch package."""
    for module in REPORT_MODULES:
        bad = {m for m in loads[module] if m.split(".")[0] in FORBIDDEN or m.startswith(FORBIDDEN)}
        assert not bad, (module, sorted(bad))


def test_the_registry_loads_no_plotting_library(loads: dict[str, set[str]]) -> None:
    assert REPORT_MODULES[0] == "vacuumlab.report"  # imported first: what it loads alone
    assert "matplotlib" not in loads["vacuumlab.report"]
    assert "vacuumlab.report" in loads["vacuumlab.report"]


# -- defect 3: the published work by its name, never by a file of ours -------------------------

SEED = re.compile(r"seed \d", re.IGNORECASE)
PUBLICATIONS = {spec.STUDY: spec.PUBLICATION for spec in SPECS}


def rendered_texts(pages: dict[str, Path]) -> dict[str, str]:
    """Every rendered report: the four study pages, the advice in Markdown, HTML and text, and
    the churn summary the terminal shows."""
    texts = {study: path.read_text(encoding="utf-8") for study, path in pages.items()}
    advice = full_advice()
    texts["advice.md"] = render_markdown(advice)
    texts["advice.html"] = render_html(advice)
    texts["advice.txt"] = printed(render_text(advice))
    with Store.open(next(iter(pages.values())).parent.parent / "r.sqlite") as store:
        texts["churn summary"] = printed(summary_table(store, 1))
    return texts


def printed(renderable: object) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(renderable)
    return cast(io.StringIO, console.file).getvalue()


def test_no_report_names_a_seed_file(pages: dict[str, Path]) -> None:
    for name, text in rendered_texts(pages).items():
        assert not SEED.search(text), (name, SEED.search(text))


def test_each_study_report_names_its_publication(pages: dict[str, Path]) -> None:
    """A study that reproduces a published work cites it; one that has none (scheduling
    validates the simulator) says so, and cites nothing."""
    for study, path in pages.items():
        html = path.read_text(encoding="utf-8")
        publication = PUBLICATIONS[study]
        if publication is None:
            assert "no published work is reproduced" in html, study
            assert "The published work it reproduces" not in html, study
            continue
        assert str(escape(publication.cite())) in html, study
        assert publication.short() in html or study == churn_spec.STUDY, study


def test_every_study_in_the_lab_has_a_renderer():
    from vacuumlab.lab.registry import STUDIES
    from vacuumlab.report import RENDERERS

    assert set(RENDERERS) == set(STUDIES) | {"watch"}
