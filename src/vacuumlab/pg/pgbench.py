"""pgbench in two steps: pure functions build the command and parse its output; one runner
runs it. The runner streams ``--progress`` lines to a callback, so a study can show live TPS,
and can be terminated when the user interrupts."""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vacuumlab.errors import VacuumlabError

_PROGRESS = re.compile(r"^progress: ([\d.]+) s, ([\d.]+) tps")


@dataclass(frozen=True, slots=True)
class Load:
    """How to drive a custom script."""

    script: Path
    clients: int = 2
    jobs: int = 1
    seconds: int = 10
    log_prefix: Path | None = None  # per-transaction log (-l), one file per thread, when set
    progress: bool = False  # a progress line on stderr every second
    #: Weighted scripts (``-f file@weight``): each transaction runs one, chosen at random in
    #: proportion to its weight. When given they replace ``script``.
    weighted: tuple[tuple[Path, int], ...] = ()
    #: Transactions per second over all clients (``--rate``, a Poisson schedule); None: as
    #: fast as they go.
    rate: float | None = None


def command(pgbench: Path, load: Load, dsn: str) -> list[str]:
    """The argument list for one pgbench run of ``load`` against ``dsn``."""
    args = [
        str(pgbench),
        "--no-vacuum",  # the schema is ours; pgbench must not vacuum its own tables
        *(
            [f"--file={path}@{weight}" for path, weight in load.weighted]
            if load.weighted
            else [f"--file={load.script}"]
        ),
        f"--client={load.clients}",
        f"--jobs={load.jobs}",
        f"--time={load.seconds}",
    ]
    if load.rate is not None:
        args.append(f"--rate={load.rate:g}")
    if load.log_prefix is not None:
        args += ["--log", f"--log-prefix={load.log_prefix}"]
    if load.progress:
        args.append("--progress=1")
    return [*args, dsn]


def log_files(prefix: Path) -> list[Path]:
    """The per-thread logs of a run: ``prefix.PID`` and ``prefix.PID.N`` (pgbench.c)."""
    return sorted(prefix.parent.glob(f"{prefix.name}.*"))


def parse_progress(line: str) -> tuple[float, float] | None:
    """(elapsed seconds, tps) from a ``progress: 5.0 s, 4321.3 tps, lat …`` line."""
    match = _PROGRESS.match(line)
    return None if match is None else (float(match[1]), float(match[2]))


def parse_tps(output: str) -> float | None:
    """The ``tps = …`` figure from pgbench's summary."""
    for line in output.splitlines():
        if line.startswith("tps = "):
            return float(line.split()[2])
    return None


Runner = Callable[[Sequence[str], Mapping[str, str] | None], str]


def run_subprocess(args: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """Run pgbench to the end; its own error message becomes a one-line VacuumlabError."""
    proc = subprocess.run(list(args), capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise VacuumlabError(f"pgbench failed: {_last_line(proc.stderr) or proc.returncode}")
    return proc.stdout


class Process:
    """A running pgbench whose stderr lines go to ``on_line`` as they come."""

    def __init__(self, args: Sequence[str], on_line: Callable[[str], None]) -> None:
        self._proc = subprocess.Popen(
            list(args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self._lines: list[str] = []
        self._reader = threading.Thread(target=self._read, args=(on_line,), daemon=True)
        self._reader.start()

    def _read(self, on_line: Callable[[str], None]) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self._lines.append(line)
            on_line(line)

    def wait(self) -> str:
        """Wait for the end; pgbench's stdout, or a one-line error when it failed."""
        # Not communicate(): it would read (and close) stderr under the reader thread's feet.
        assert self._proc.stdout is not None
        stdout = self._proc.stdout.read()
        self._proc.wait()
        self._reader.join()
        if self._proc.returncode != 0:
            detail = _last_line("".join(self._lines)) or f"exit code {self._proc.returncode}"
            raise VacuumlabError(f"pgbench failed: {detail}")
        return stdout

    def terminate(self) -> None:
        """Stop pgbench (on interrupt); safe to call when it has ended."""
        if self._proc.poll() is None:
            self._proc.terminate()
        self._proc.wait()
        self._reader.join()
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if not line.startswith("progress:")]
    return errors[-1] if errors else ""
