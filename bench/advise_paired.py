"""``vacuumlab advise DSN`` as a user runs it (a whole process, start to exit), this tree against
another revision, taking turns on one database: the ratio is the figure that travels.

Machines are noisy and differ from day to day, so the two codes run alternately on the same
server in the same minutes; each run is a fresh interpreter (imports, connection, snapshot,
models, rendering), timed for its wall time, its CPU time (user + system, from the child's own
resource usage) and its peak RSS. The statements each run sent are read from
pg_stat_statements (those tagged ``/* vacuumlab:``), so a change in the count shows too. The
revision's ``src/`` comes from this clone's history (``git archive``) and runs on this
environment's dependencies.

    .venv/bin/python bench/advise_paired.py [--tables 10000] [--runs 7] [--rev c46b2d0]
    .venv/bin/python bench/advise_paired.py --dsn postgresql://... --runs 5   # a database you have
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from against_start import extract
from snapshot_scale import table_database, tagged_calls
from vacuumlab.pg.sandbox import Sandbox

ROOT = Path(__file__).resolve().parent.parent
#: Where issue 10's speed work ended: the advisor at 10,000 tables before the later features.
SPEED_WORK_END = "c46b2d0"


@dataclass
class Runs:
    """One code's measurements, a run each."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    statements: list[int] = field(default_factory=list)


def one_run(src: Path, dsn: str, home: Path) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one ``advise`` process, and its first
    line of output (the same for both codes, or the comparison means little)."""
    env = {**os.environ, "PYTHONPATH": str(src), "VACUUMLAB_HOME": str(home), "COLUMNS": "120"}
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "vacuumlab", "advise", dsn, "--format", "json"],
            stdout=out, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.returncode != 0:
            sys.exit(f"advise_paired: advise exited {proc.returncode} under {src}: {err}")
        out.seek(0)
        head = out.read(200).decode(errors="replace").splitlines()[0:1]
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, "".join(head)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=10_000, help="tables (default 10000)")
    parser.add_argument("--runs", type=int, default=7, help="runs of each code (default 7)")
    parser.add_argument("--rev", default=SPEED_WORK_END,
                        help=f"the other revision (default {SPEED_WORK_END})")  # fmt: skip
    parser.add_argument("--dsn", help="a database to advise instead of a new sandbox's")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vacuumlab-bench-") as tmp:
        codes = {args.rev: extract(args.rev, Path(tmp) / "then"), "now": ROOT / "src"}
        if args.dsn:
            measure(codes, args.dsn, args.runs, Path(tmp) / "home", args.tables)
            return
        with Sandbox.start(Path(tmp) / "sandbox") as sandbox:
            print(f"making {args.tables:,} tables ...", file=sys.stderr)
            dsn = table_database(sandbox, "advise_paired", args.tables)
            measure(codes, dsn, args.runs, Path(tmp) / "home", args.tables)


def measure(codes: dict[str, Path], dsn: str, runs: int, home: Path, tables: int) -> None:
    found = {code: Runs() for code in codes}
    for src in codes.values():  # one unmeasured run each: the server's caches, the .pyc files
        one_run(src, dsn, home)
    for turn in range(runs):
        for code, src in codes.items():
            before = tagged_calls(dsn)
            wall, cpu, rss, _ = one_run(src, dsn, home)
            runs_of = found[code]
            runs_of.wall.append(wall)
            runs_of.cpu.append(cpu)
            runs_of.rss_mb.append(rss)
            runs_of.statements.append(tagged_calls(dsn) - before - 1)  # less the count's own
        print(f"turn {turn + 1} of {runs} done", file=sys.stderr)
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM pg_class WHERE relkind = 'r'").fetchone()
    print(f"vacuumlab advise, whole process, {runs} runs each in turn, "
          f"{row[0] if row else tables:,} tables:")  # fmt: skip
    print(f"{'':14} {'wall s':>8} {'cpu s':>8} {'rss MB':>8} {'statements':>11}")
    for code, r in found.items():
        print(f"{code:14} {statistics.median(r.wall):>8.2f} {statistics.median(r.cpu):>8.2f} "
              f"{max(r.rss_mb):>8.0f} {statistics.median(r.statements):>11.0f}")  # fmt: skip
    then, now = found[next(iter(codes))], found["now"]
    print(f"{'now / then':14} {statistics.median(now.wall) / statistics.median(then.wall):>7.2f}x "
          f"{statistics.median(now.cpu) / statistics.median(then.cpu):>7.2f}x "
          f"{max(now.rss_mb) / max(then.rss_mb):>7.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
