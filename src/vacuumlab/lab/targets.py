"""Where a run happens and where its results go: the sandbox or a named server, the results
store and each run's directory, and whether a stored run may be resumed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.sandbox import Sandbox, default_home
from vacuumlab.pg.target import Target
from vacuumlab.store import Store
from vacuumlab.studies.base import run_directory


@dataclass(frozen=True, slots=True)
class Where:
    """The server a run uses: a DSN, or (without one) the sandbox in ``data_dir``."""

    dsn: str | None = None
    allow_alter_system: bool = False
    data_dir: Path | None = None
    pg_bin: Path | None = None

    @property
    def kind(self) -> str:
        """What a run's config records as its ``target``."""
        return "sandbox" if self.dsn is None else "server"


@contextmanager
def open_target(where: Where) -> Iterator[Target]:
    """The target for a run; a sandbox started here is stopped when the run ends."""
    if where.dsn is not None:
        yield Target.of_dsn(
            where.dsn, allow_alter_system=where.allow_alter_system, pg_bin=where.pg_bin
        )
        return
    with Sandbox.start(where.data_dir, pg_bin=where.pg_bin) as sandbox:
        yield Target.of_sandbox(sandbox)


def default_store() -> Path:
    """``$VACUUMLAB_HOME/results.sqlite``, or ``~/vacuumlab/results.sqlite``."""
    return default_home() / "results.sqlite"


def existing_store(path: Path | None) -> Path:
    """The store to read, which must exist."""
    path = path or default_store()
    if not path.exists():
        raise VacuumlabError(f"no results store at {path}: run a study first, or pass --store")
    return path


def report_directory(store_path: Path, run_id: int) -> Path:
    return run_directory(store_path, run_id) / "report"


def resumable_params(store: Store, run_id: int, study: str, dsn: str | None) -> dict[str, Any]:
    """The stored parameters of a run that ``--resume`` may finish."""
    run = store.run(run_id)
    if run.study != study:
        raise VacuumlabError(f"run {run_id} is a {run.study} run, not {study}")
    if run.status == "done":
        raise VacuumlabError(f"run {run_id} is complete; nothing to resume")
    if run.params.get("target") == "server" and dsn is None:
        raise VacuumlabError(f"run {run_id} ran on a named server: give its --dsn again")
    return run.params
