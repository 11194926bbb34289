"""Snapshot cost against the number of tables: wall time and statements, side by side.

Creates databases with 1,000 and 10,000 tables (each with a primary key and a text column,
so each has an index and a TOAST table) in a throwaway sandbox, snapshots each five times and
prints the median wall time and the statement count, then each figure beside its goal
(issue 10: a snapshot of 10,000 tables in under 0.5 s). The count must be the same for both:
the snapshot asks one query per probe, whatever the number of tables. The count is read twice,
from vacuumlab's own session counter and from pg_stat_statements (queries tagged vacuumlab).
With ``--vacuum`` the tables are vacuumed and analysed first, as a database's tables are once
autovacuum has been round: the snapshot then measures every relation's size, where it takes
the indexes of a table that no vacuum has seen from pg_class. Each snapshot is taken twice in
turn: sizing relations from their files (pg_stat_file(), as the bench's superuser may) and
by pg_relation_size() (as a role without that grant), and the ratio printed.

    make bench          or          .venv/bin/python bench/snapshot_scale.py [--tables 1000 10000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

from vacuumlab.collect.snapshot import SPLIT_CATALOG_BYTES, collect
from vacuumlab.pg.connect import Session, connect
from vacuumlab.pg.sandbox import Sandbox

REPEAT = 5
#: Seconds for 10,000 tables (issue 10, "Performance"); fewer tables are held to the same.
SNAPSHOT_GOAL_S = 0.5


def against(what: str, tables: int, seconds: float, goal: float) -> str:
    """One figure beside its goal: "snapshot 10,000 tables: 0.42 s (goal 0.5 s: met)"."""
    verdict = "met" if seconds <= goal else f"{seconds / goal:.1f}x the goal"
    return f"{what} {tables:,} tables: {seconds:.2f} s (goal {goal:g} s: {verdict})"


def statements_line(counts: dict[int, int], halved: dict[int, bool]) -> str:
    """ "statements 1,000 tables: 13, 10,000 tables: 14 (constant: one more where the tables
    were asked in halves)". A catalog large enough has its tables question asked in two
    halves on two sessions (collect/snapshot.py): one statement more, whatever the number."""
    figures = ", ".join(
        f"{tables:,} tables: {n}{' (tables in halves)' if halved[tables] else ''}"
        for tables, n in counts.items()
    )
    base = {n - halved[tables] for tables, n in counts.items()}
    return f"statements {figures} ({'constant' if len(base) == 1 else 'NOT CONSTANT'})"


def asked_in_halves(session: Session) -> bool:
    """Whether this session's snapshot asks the tables question in two halves."""
    return session.catalog_bytes >= SPLIT_CATALOG_BYTES and not session.sibling_refused


def create_tables(dsn: str, count: int) -> None:
    """DO blocks of 1,000 tables: one round trip each, and few enough locks per transaction."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for start in range(1, count + 1, 1000):
            conn.execute(
                sql.SQL(
                    "DO $$ BEGIN FOR i IN {}..{} LOOP "
                    "EXECUTE format('CREATE TABLE t%s (id int PRIMARY KEY, body text)', i); "
                    "END LOOP; END $$"
                ).format(sql.Literal(start), sql.Literal(min(start + 999, count)))
            )


def table_database(sandbox: Sandbox, name: str, count: int) -> str:
    """A database ``name`` of ``count`` tables, with pg_stat_statements; its DSN."""
    with psycopg.connect(sandbox.dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = sandbox.dsn_for(name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_stat_statements")
    create_tables(dsn, count)
    return dsn


def tagged_total(dsn: str, column: str) -> float:
    """The sum of pg_stat_statements' ``column`` over vacuumlab's tagged statements in ``dsn``'s
    database."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            sql.SQL(
                "SELECT coalesce(sum({}), 0) FROM pg_stat_statements "
                "WHERE query LIKE '%%/* vacuumlab:%%' AND dbid = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())"
            ).format(sql.Identifier(column))
        ).fetchone()
        assert row is not None
        return float(row[0])


def tagged_calls(dsn: str) -> int:
    return int(tagged_total(dsn, "calls"))


def measure(dsn: str) -> tuple[float, int, int, int, float, bool]:
    """Median seconds, statements by our counter, by pg_stat_statements, tables seen; the
    median seconds of the same snapshot sizing by pg_relation_size() instead of the files,
    taken in turn with it (as a role without pg_stat_file() would); and whether the tables
    were asked in halves."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")
    times, counts, tables = [], [], 0
    opened: list[float] = []
    halved = False
    for _ in range(REPEAT):
        start = time.perf_counter()
        with connect(dsn, application_name="vacuumlab-bench") as session:
            snap = collect(session)
            counts.append(session.statements)
            halved = asked_in_halves(session)
        times.append(time.perf_counter() - start)
        tables = len(snap.tables)
        start = time.perf_counter()
        with connect(dsn, application_name="vacuumlab-bench-opened") as session:
            session.info = session.info.model_copy(update={"can_stat_files": False})
            collect(session)
        opened.append(time.perf_counter() - start)
    assert len(set(counts)) == 1
    return (
        statistics.median(times),
        counts[0],
        tagged_calls(dsn) // (2 * REPEAT),
        tables,
        statistics.median(opened),
        halved,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--vacuum", action="store_true", help="VACUUM (ANALYZE) the tables first")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="vacuumlab-bench-") as tmp,
        Sandbox.start(Path(tmp) / "sandbox") as sandbox,
    ):
        rows = []
        for count in args.tables:
            dsn = table_database(sandbox, f"bench_{count}", count)
            if args.vacuum:
                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute("VACUUM (ANALYZE)")
            rows.append((count, *measure(dsn)))
    print(
        f"{'tables':>8} {'seen':>8} {'median s':>9} {'statements':>11} {'pg_stat_statements':>19}"
        f" {'opened s':>9} {'ratio':>6}"
    )
    for count, seconds, statements, tagged, seen, opened, _ in rows:
        print(
            f"{count:>8} {seen:>8} {seconds:>9.3f} {statements:>11} {tagged:>19}"
            f" {opened:>9.3f} {opened / seconds:>5.2f}x"
        )
    print(
        "opened s: the same snapshot sizing each relation by pg_relation_size(), as a role"
        " that may not call pg_stat_file() does; ratio: opened / files, in turn in this run"
    )
    first, last = rows[0], rows[-1]
    print(f"time ratio {last[0]:,}/{first[0]:,} tables: {last[1] / first[1]:.1f}x")
    for count, seconds, *_ in rows:
        print(against("snapshot", count, seconds, SNAPSHOT_GOAL_S))
    halved = {row[0]: row[-1] for row in rows}
    print(statements_line({count: statements for count, _, statements, *_ in rows}, halved))
    print(
        statements_line({count: tagged for count, _, _, tagged, *_ in rows}, halved)
        + " by pg_stat_statements"
    )


if __name__ == "__main__":
    main()
