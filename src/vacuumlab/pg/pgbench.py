"""pgbench in two steps: pure functions build the command, one injectable runner runs it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vacuumlab.errors import VacuumlabError


@dataclass(frozen=True, slots=True)
class Load:
    """How to drive a custom script."""

    script: Path
    clients: int = 2
    jobs: int = 1
    seconds: int = 10
    log_prefix: Path | None = None  # per-transaction log (-l) when set


def command(pgbench: Path, load: Load, dsn: str) -> list[str]:
    """The argument list for one pgbench run of ``load`` against ``dsn``."""
    args = [
        str(pgbench),
        "--no-vacuum",  # the schema is ours; pgbench must not vacuum its own tables
        f"--file={load.script}",
        f"--client={load.clients}",
        f"--jobs={load.jobs}",
        f"--time={load.seconds}",
    ]
    if load.log_prefix is not None:
        args += ["--log", f"--log-prefix={load.log_prefix}"]
    return [*args, dsn]


Runner = Callable[[Sequence[str], Mapping[str, str] | None], str]


def run_subprocess(args: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """Run pgbench; its own error message becomes a one-line VacuumlabError."""
    proc = subprocess.run(list(args), capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        raise VacuumlabError(f"pgbench failed: {lines[-1] if lines else proc.returncode}")
    return proc.stdout


def parse_tps(output: str) -> float | None:
    """The ``tps = …`` figure from pgbench's summary."""
    for line in output.splitlines():
        if line.startswith("tps = "):
            return float(line.split()[2])
    return None
