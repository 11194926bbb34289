"""The snapshot and the advisor at 10,000 tables, now against the code issue 10 started from,
in turn on one server in one run: the ratio is the figure that travels between machines.

Issue 10 set its goals on the machine its figures came from: a snapshot of 10,000 tables in
under 0.5 s (then 2.1 s) and the advisor in under 1 s (then 3.2 s), 4.2 and 3.2 times faster. A
machine twice as slow doubles every figure but leaves the ratios, so this script measures
both: it extracts ``src/`` of the starting revision (``--rev``, by default the last commit
before issue 10's work, from this clone's history with ``git archive``), makes one database
of ``--tables`` tables (as bench/snapshot_scale.py makes them), and times, in separate
interpreters taking turns, what the issue timed: a snapshot (connect and collect) and the
advisor (collect_advice: connect, snapshot, advise). Each interpreter measures after one
unmeasured round, so imports and first-use set-up are not counted, as they were not then.

    .venv/bin/python bench/against_start.py [--tables 10000] [--rounds 4] [--rev d2997f4]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from snapshot_scale import table_database
from vacuumlab.pg.sandbox import Sandbox

ROOT = Path(__file__).resolve().parent.parent
#: The last commit before issue 10's work: issue 9 resolved, the advisor as issue 10 found it.
START = "d2997f4"
#: Issue 10's figures then, and its goals: seconds at 10,000 tables.
THEN = {"snapshot": 2.1, "advise": 3.2}
GOAL = {"snapshot": 0.5, "advise": 1.0}

#: What one interpreter runs: a warm-up round, then ``n`` timed rounds; JSON on stdout.
PROBE = """
import gc, json, sys, time
from vacuumlab.lab.advice import collect_advice
from vacuumlab.collect.snapshot import collect
from vacuumlab.pg.connect import connect
dsn, n = sys.argv[1], int(sys.argv[2])
out = {"snapshot": [], "advise": []}
for i in range(n + 1):
    gc.collect()
    start = time.perf_counter()
    with connect(dsn) as session:
        tables = len(collect(session).tables)
    took = time.perf_counter() - start
    gc.collect()
    start = time.perf_counter()
    advice, _ = collect_advice(dsn)
    advised = time.perf_counter() - start
    if i:
        out["snapshot"].append(took)
        out["advise"].append(advised)
out["tables"] = tables
print(json.dumps(out))
"""


def extract(rev: str, into: Path) -> Path:
    """``src/`` of ``rev`` under ``into``; its path."""
    try:
        tar = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src"],
            check=True,
            capture_output=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"against_start: cannot read {rev} from this clone's history: {exc}")
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")
    return into / "src"


def rounds(src: Path, dsn: str, n: int, home: Path) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(src), "VACUUMLAB_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, dsn, str(n)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, list[float]] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=4, help="turns of each code (default 4)")
    parser.add_argument("--per-turn", type=int, default=2, help="timed rounds a turn (default 2)")
    parser.add_argument("--rev", default=START, help=f"the starting revision (default {START})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vacuumlab-bench-") as tmp:
        codes = {"then": extract(args.rev, Path(tmp) / "then"), "now": ROOT / "src"}
        with Sandbox.start(Path(tmp) / "sandbox") as sandbox:
            dsn = table_database(sandbox, "against_start", args.tables)
            times: dict[str, dict[str, list[float]]] = {
                code: {"snapshot": [], "advise": []} for code in codes
            }
            for turn in range(args.rounds):
                for code, src in codes.items():
                    got = rounds(src, dsn, args.per_turn, Path(tmp) / "home")
                    for what in ("snapshot", "advise"):
                        times[code][what].extend(got[what])
                print(f"turn {turn + 1} of {args.rounds} done", file=sys.stderr)
    print(f"{args.tables:,} tables, {args.rev} ('then') against this tree ('now'), in turn:")
    print(f"{'':9} {'then s':>7} {'now s':>7} {'ratio':>7} {'needed':>7}  verdict")
    for what in ("snapshot", "advise"):
        then = statistics.median(times["then"][what])
        now = statistics.median(times["now"][what])
        needed = THEN[what] / GOAL[what]
        verdict = "met" if then / now >= needed else "missed"
        print(
            f"{what:9} {then:>7.3f} {now:>7.3f} {then / now:>6.2f}x {needed:>6.2f}x  {verdict}"
            f" (issue 10: {THEN[what]:g} s then, goal {GOAL[what]:g} s; on this machine the"
            f" goal is {then / needed:.2f} s)"
        )


if __name__ == "__main__":
    main()
