"""Every study the lab can run, by name, and the one way to start any of them.

Adding a study means its module (a :class:`~vacuumlab.studies.base.StudyRun`), its spec and one
line here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from vacuumlab.errors import VacuumlabError
from vacuumlab.lab.targets import Where, open_target, resumable_params
from vacuumlab.records.params import Config
from vacuumlab.store import Store
from vacuumlab.studies.base import Executor, Progress, StudyRun
from vacuumlab.studies.churn import ChurnRun
from vacuumlab.studies.cost_driver import CostDriverRun
from vacuumlab.studies.custom import CustomRun
from vacuumlab.studies.fillfactor import FillfactorRun
from vacuumlab.studies.scheduling import SchedulingRun
from vacuumlab.studies.toast import ToastRun
from vacuumlab.studies.tune.run import TuneRun

AnyRun = StudyRun[Any, Any]

STUDIES: dict[str, type[AnyRun]] = {
    run.study: run
    for run in (ChurnRun, CostDriverRun, ToastRun, FillfactorRun, SchedulingRun, CustomRun, TuneRun)
}


def study(name: str) -> type[AnyRun]:
    if name not in STUDIES:
        raise VacuumlabError(f"no study {name!r}; the lab has {', '.join(STUDIES)}")
    return STUDIES[name]


def config_for(name: str, preset: str, overrides: Mapping[str, Any], where: Where) -> Config:
    """A fresh run's config: the preset, the overrides, and where it runs."""
    return study(name).config_type.from_preset(preset, **overrides, target=where.kind)


@contextmanager
def study_run(
    name: str,
    *,
    store: Store,
    where: Where,
    preset: str = "quick",
    overrides: Mapping[str, Any] | None = None,
    resume: int | None = None,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> Iterator[AnyRun]:
    """A run ready to ``execute()``: a fresh config, or a stored run to finish (``resume``),
    checked before any server is started; on its target, which is stopped afterwards when it
    is a sandbox started here. With an ``executor`` (a cluster) the points run elsewhere, each
    on a server of its own; the target then only answers for the run (version, settings)."""
    run_type = study(name)
    if executor is not None and where.dsn is not None:
        raise VacuumlabError(
            f"--executor {executor.name} gives each point a sandbox of its own; with --dsn "
            "one named server would host points side by side: leave one of them out"
        )
    if resume is not None:
        config = run_type.config_type.from_params(resumable_params(store, resume, name, where.dsn))
    else:
        config = config_for(name, preset, overrides or {}, where)
    why = run_type.side_by_side(config) if executor is not None else None
    if executor is not None and why is not None:
        raise VacuumlabError(f"--executor {executor.name} cannot run this: {why}")
    with open_target(where) as target:
        run = run_type(config, target, store, progress, run_id=resume)
        run.executor = executor
        yield run
