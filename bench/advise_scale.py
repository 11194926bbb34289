"""Advisor cost against the number of tables: wall time and statements, side by side.

Creates databases with 1,000 and 10,000 tables (as ``snapshot_scale.py`` does: each with a
primary key and a text column, so each has an index and a TOAST table) in a throwaway sandbox,
runs the advisor end to end on each a few times and prints the median wall time, the number
of statements it sent, and whether that number is the same for both sizes: the advisor asks
a fixed number of queries whatever the number of tables. The count is read twice, from the
advisor's own counter and from pg_stat_statements (statements tagged ``/* vacuumlab:``). It
also times the pure ``advise()`` on a snapshot already taken (no server), and rendering the
advice as Markdown and HTML, which grow with the tables. Each figure with a goal (issue 10:
the advisor end to end on 10,000 tables in under 1 s) is printed beside it.

    .venv/bin/python bench/advise_scale.py [--tables 1000 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg

from snapshot_scale import (
    against,
    asked_in_halves,
    statements_line,
    table_database,
    tagged_calls,
)
from vacuumlab.advise import advise
from vacuumlab.collect.snapshot import collect
from vacuumlab.lab.advice import TIMEOUTS, collect_advice
from vacuumlab.pg.connect import connect
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Advice
from vacuumlab.report.advice.html import render_html
from vacuumlab.report.advice.markdown import render_markdown

#: Seconds for 10,000 tables, end to end (issue 10, "Performance").
ADVISE_GOAL_S = 1.0


@dataclass(frozen=True, slots=True)
class Result:
    tables: int
    relations: int  # heap and TOAST relations in the advice
    seconds: float  # median wall time of collect_advice
    statements: int  # by the advisor's counter
    tagged: int  # by pg_stat_statements, per run
    advise_seconds: float  # median of the pure advise() on one snapshot, no server
    markdown_seconds: float
    html_seconds: float
    halved: bool  # the tables question asked in two halves (a large catalog)


def prepare(sandbox: Sandbox, count: int) -> str:
    """A database of `count` tables with pg_stat_statements; its DSN."""
    return table_database(sandbox, f"advise_{count}", count)


def measure(dsn: str, count: int, repeat: int) -> Result:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")
    times, counts = [], []
    advice: Advice | None = None
    for _ in range(repeat):
        start = time.perf_counter()
        advice, statements = collect_advice(dsn)
        times.append(time.perf_counter() - start)
        counts.append(statements)
    assert advice is not None
    if len(set(counts)) != 1:
        print(f"warning: statement counts vary between runs at {count} tables: {counts}")
    tagged = tagged_calls(dsn) // repeat  # before the snapshot below adds its own
    with connect(dsn, timeouts=TIMEOUTS, application_name="vacuumlab-bench") as session:
        snapshot = collect(session)
        halved = asked_in_halves(session)
    pure = []
    for _ in range(repeat):
        start = time.perf_counter()
        advise(snapshot)
        pure.append(time.perf_counter() - start)
    return Result(
        count,
        len(advice.tables),
        statistics.median(times),
        counts[0],
        tagged,
        statistics.median(pure),
        _timed(render_markdown, advice),
        _timed(render_html, advice),
        halved,
    )


def _timed(render: Callable[[Advice], str], advice: Advice) -> float:
    start = time.perf_counter()
    render(advice)
    return time.perf_counter() - start


def report(results: list[Result]) -> None:
    print(
        f"{'tables':>8} {'relations':>10} {'median s':>9} {'statements':>11} "
        f"{'pg_stat_statements':>19} {'advise() s':>11} {'markdown s':>11} {'html s':>7}"
    )
    for r in results:
        print(
            f"{r.tables:>8} {r.relations:>10} {r.seconds:>9.3f} {r.statements:>11} "
            f"{r.tagged:>19} {r.advise_seconds:>11.3f} {r.markdown_seconds:>11.3f} "
            f"{r.html_seconds:>7.3f}"
        )
    first, last = results[0], results[-1]
    print(
        f"time ratio {last.tables:,}/{first.tables:,} tables: {last.seconds / first.seconds:.1f}x"
    )
    for r in results:
        print(
            against("advise end to end", r.tables, r.seconds, ADVISE_GOAL_S)
            + f"; of which advise() {r.advise_seconds:.2f} s; "
            f"render Markdown {r.markdown_seconds:.2f} s, HTML {r.html_seconds:.2f} s"
        )
    halved = {r.tables: r.halved for r in results}
    print(statements_line({r.tables: r.statements for r in results}, halved))
    print(statements_line({r.tables: r.tagged for r in results}, halved) + " by pg_stat_statements")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="vacuumlab-bench-") as tmp,
        Sandbox.start(Path(tmp) / "sandbox") as sandbox,
    ):
        results = [measure(prepare(sandbox, n), n, args.repeat) for n in args.tables]
    report(results)


if __name__ == "__main__":
    main()
