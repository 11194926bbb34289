"""``vacuumlab exporter`` as a user runs it, this tree against another revision, taking turns on
one database: the seconds a Prometheus scrape (``GET /metrics``) waits for its answer.

Each code serves on a port of its own, both started before any scrape is timed; the first
scrapes of each (a live view's first refresh has no previous snapshot) are left out. Then
the two are scraped in turn, one scrape each per round, so both see the same server in the
same minutes. The revision's ``src/`` comes from this clone's history (``git archive``) and
runs on this environment's dependencies. The ratio is the figure that travels.

    .venv/bin/python bench/exporter_paired.py --dsn postgresql://.../t100k [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from against_start import extract

ROOT = Path(__file__).resolve().parent.parent
#: Where issue 27's fleet-scale work began.
BEFORE_FLEET = "5fdc7a3"
WARM_UP = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(src: Path, dsn: str, home: Path) -> Iterator[str]:
    """``vacuumlab exporter`` of the code under ``src``; its URL once it answers."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(src), "VACUUMLAB_HOME": str(home)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "vacuumlab", "exporter", dsn, "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"exporter_paired: the exporter under {src} did not start")
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def scrape(url: str) -> tuple[float, int]:
    """Seconds to the whole answer, and its samples."""
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as answer:
        body = answer.read().decode()
    seconds = time.perf_counter() - start
    return seconds, sum(1 for line in body.splitlines() if line.startswith("vacuumlab_"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", required=True, help="the database to export")
    parser.add_argument("--rounds", type=int, default=7, help="scrapes of each (default 7)")
    parser.add_argument("--rev", default=BEFORE_FLEET,
                        help=f"the other revision (default {BEFORE_FLEET})")  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vacuumlab-bench-") as tmp:
        codes = {args.rev: extract(args.rev, Path(tmp) / "then"), "now": ROOT / "src"}
        home = Path(tmp) / "home"
        with (
            serving(codes[args.rev], args.dsn, home) as then,
            serving(codes["now"], args.dsn, home) as now,
        ):
            urls = {args.rev: then, "now": now}
            for url in urls.values():
                for _ in range(WARM_UP):
                    scrape(url)
            found: dict[str, list[float]] = {code: [] for code in urls}
            samples: dict[str, int] = {}
            for turn in range(args.rounds):
                for code, url in urls.items():
                    seconds, samples[code] = scrape(url)
                    found[code].append(seconds)
                print(f"round {turn + 1} of {args.rounds} done", file=sys.stderr)
    print(f"one scrape of vacuumlab exporter, {args.rounds} each in turn (median):")
    for code, times in found.items():
        print(f"{code:10} {statistics.median(times):7.2f} s  {samples[code]:,} samples")
    ratio = statistics.median(found["now"]) / statistics.median(found[args.rev])
    print(f"now / {args.rev}: {ratio:.2f}x")


if __name__ == "__main__":
    main()
