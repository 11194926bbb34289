"""Pure renderers from the results store or records, one subpackage per document: each study's
run on the shared run page (`page`), a recorded watch (`watch`), the advice (`advice`), a
simulation (`simulation`) and a snapshot (`snapshot`); a document that fits in one module is
that module (`compare`, `verification`). docs/layout.md says what lives where.

`RENDERERS` maps a study's name to the function that renders one of its runs from the store
into a directory and returns the page's path; it sits beside the lab's `STUDIES`. A study's
report is imported only when a run of it is rendered, so importing this package loads neither
matplotlib nor any study.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from vacuumlab.store import Store

#: Renders run `run_id` from the store into the directory; returns the written page's path.
Renderer = Callable[["Store", int, Path], Path]

#: study name (as the lab records it) -> the module that renders its runs (its `render`).
_MODULES = {
    "churn": "vacuumlab.report.churn",
    "cost-driver": "vacuumlab.report.cost_driver",
    "fillfactor": "vacuumlab.report.fillfactor",
    "toast": "vacuumlab.report.toast",
    "scheduling": "vacuumlab.report.scheduling",
    "custom": "vacuumlab.report.custom",
    "tune": "vacuumlab.report.tune",
    "watch": "vacuumlab.report.watch",
}


def _lazy(module: str) -> Renderer:
    def render(store: Store, run_id: int, out_dir: Path) -> Path:
        renderer = cast(Renderer, import_module(module).render)
        return renderer(store, run_id, out_dir)

    render.__doc__ = f"Render a run with `{module}.render`."
    return render


RENDERERS: Mapping[str, Renderer] = MappingProxyType(
    {study: _lazy(module) for study, module in _MODULES.items()}
)
