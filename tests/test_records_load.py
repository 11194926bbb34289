"""Saved advice, simulations and verifications read back, or fail in one line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.advice import load_advice
from vacuumlab.records.simulation import load_simulation
from vacuumlab.records.verification import load_verification

LOADERS: list[tuple[Callable[[Path], object], str]] = [
    (load_advice, "vacuumlab.advice"),
    (load_simulation, "vacuumlab.simulation"),
    (load_verification, "vacuumlab.verification"),
]


@pytest.mark.parametrize(("load", "kind"), LOADERS, ids=lambda v: getattr(v, "__name__", v))
def test_each_loader_names_what_is_wrong(
    load: Callable[[Path], object], kind: str, tmp_path: Path
) -> None:
    path = tmp_path / "file.json"
    path.write_text("{not json")
    with pytest.raises(VacuumlabError, match="not JSON"):
        load(path)
    path.write_text('{"kind": "vacuumlab.snapshot"}')
    with pytest.raises(VacuumlabError, match=f"no kind '{kind}'"):
        load(path)
    path.write_text(f'{{"kind": "{kind}", "schema_version": 1}}')
    with pytest.raises(VacuumlabError, match="is damaged: vacuumlab_version"):
        load(path)
    with pytest.raises(VacuumlabError, match="cannot read"):
        load(tmp_path / "missing.json")
