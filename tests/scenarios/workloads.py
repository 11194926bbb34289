"""Real workloads for the scenario suite: pgbench from the sandbox's own installation, run in
the background while the advisor takes its two snapshots."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from vacuumlab.advise import advise
from vacuumlab.collect.advice import TIMEOUTS
from vacuumlab.collect.snapshot import collect
from vacuumlab.pg.connect import connect
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Advice, Finding, Recommendation
from vacuumlab.records.snapshot import Snapshot

RANKED = ("warning", "critical")


def pgbench_init(sandbox: Sandbox, dsn: str, scale: int) -> None:
    """``pgbench -i``: pgbench's four tables, loaded and vacuumed, as a new user would."""
    exe = str(sandbox.bin.exe("pgbench"))
    args = [exe, "--initialize", "--quiet", f"--scale={scale}", dsn]
    subprocess.run(args, check=True, capture_output=True, env=sandbox.environment())


@contextmanager
def pgbench_load(
    sandbox: Sandbox, dsn: str, seconds: int, *, clients: int = 4, script: Path | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """pgbench (TPC-B, or ``script``) in the background for ``seconds``; waited for on exit."""
    args = [str(sandbox.bin.exe("pgbench")), "--no-vacuum", f"--client={clients}", "--jobs=2"]
    args += [f"--time={seconds}", *([f"--file={script}"] if script else []), dsn]
    proc = subprocess.Popen(
        args, env=sandbox.environment(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        yield proc
    finally:
        _, err = proc.communicate(timeout=seconds + 60)
        assert proc.returncode == 0, err.decode()


def snapshots(dsn: str, interval: float) -> tuple[Snapshot, Snapshot]:
    """Two snapshots ``interval`` seconds apart, as ``advise --interval`` takes them."""
    import time

    with connect(dsn, read_only=True, timeouts=TIMEOUTS, application_name="vacuumlab-advise") as s:
        first = collect(s)
        time.sleep(interval)
        return first, collect(s)


def advise_over(dsn: str, interval: float) -> tuple[Advice, Snapshot]:
    first, later = snapshots(dsn, interval)
    return advise(first, later), later


def recommendations(advice: Advice, setting: str) -> list[Recommendation]:
    return [r for f in advice.findings for r in f.recommendations if r.setting == setting]


def ranked(advice: Advice) -> list[Finding]:
    """Findings at warning or above: what a DBA acts on."""
    return [f for f in advice.findings if f.severity in RANKED]


def horizon_blame(advice: Advice) -> list[Finding]:
    return [f for f in advice.findings if "xmin horizon keeps" in f.title]


def describe(findings: list[Finding]) -> str:
    return "; ".join(f"[{f.severity}] {f.relation}: {f.title} {f.evidence}" for f in findings)
