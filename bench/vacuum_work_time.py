"""The unthrottled work of a vacuum per heap page, measured on the embedded server: VACUUM
with vacuum_cost_delay 0 (manual VACUUM's default), timed, on tables of known pages and
changes. Three kinds of page, each on tables of 1,000 to 12,000 pages (all fit in
the 128 MB of shared_buffers):

- read only: every page all-frozen, VACUUM (DISABLE_PAGE_SKIPPING) reads and inspects each
  and changes none (found in shared buffers; then again with the table evicted, read in);
- changed: one row updated on every page, the new versions on new pages: VACUUM prunes each
  old page and dirties it (the workload's dirty buffers; then again after a CHECKPOINT, as
  a vacuum long after the changes finds them; then with the table evicted);
- appended: as many pages again inserted at the end, which VACUUM reads and sets
  all-visible (dirty from the inserts; then after a CHECKPOINT).

Run: .venv/bin/python bench/vacuum_work_time.py (fsync off, as the tests run).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

from vacuumlab.pg.sandbox import Sandbox

SIZES = (1_000, 4_000, 8_000, 12_000)
PER_PAGE = 23  # char(300) rows
REPEAT = 5


def update(remainder: int) -> sql.Composed:
    """One row a page: rows fill the pages in order, PER_PAGE to each."""
    return sql.SQL("UPDATE w SET n = n + 1 WHERE id % {} = {}").format(
        sql.Literal(PER_PAGE), sql.Literal(remainder)
    )


def timed(conn: psycopg.Connection, statement: str) -> float:
    start = time.perf_counter()
    conn.execute(statement)
    return time.perf_counter() - start


def one(conn: psycopg.Connection, pages: int) -> dict[str, float]:
    conn.execute("DROP TABLE IF EXISTS w")
    conn.execute("CREATE TABLE w (id int, n int, pad char(300)) WITH (autovacuum_enabled = off)")
    rows = sql.Literal(pages * PER_PAGE)
    conn.execute(
        sql.SQL("INSERT INTO w SELECT g, 0, '' FROM generate_series(1, {}) g").format(rows)
    )
    conn.execute("VACUUM (FREEZE) w")
    conn.execute("VACUUM (FREEZE) w")
    out = {}
    out["read"] = min(timed(conn, "VACUUM (DISABLE_PAGE_SKIPPING) w") for _ in range(REPEAT))
    evicted = []
    for _ in range(REPEAT):
        conn.execute("SELECT pg_buffercache_evict_relation('w')")
        evicted.append(timed(conn, "VACUUM (DISABLE_PAGE_SKIPPING) w"))
    out["read_missed"] = min(evicted)
    conn.execute(update(1))
    out["changed_dirty"] = timed(conn, "VACUUM w")
    conn.execute(update(2))
    conn.execute("CHECKPOINT")
    out["changed_clean"] = timed(conn, "VACUUM w")
    conn.execute(update(3))
    conn.execute("CHECKPOINT")
    conn.execute("SELECT pg_buffercache_evict_relation('w')")
    out["changed_missed"] = timed(conn, "VACUUM w")
    # Appended pages, as in an append-mostly table: VACUUM reads the new pages only and sets
    # them all-visible, still dirty from the inserts, then again after a CHECKPOINT.
    for kind, checkpoint in (("appended_dirty", False), ("appended_clean", True)):
        conn.execute("VACUUM (FREEZE) w")
        conn.execute(
            sql.SQL("INSERT INTO w SELECT g, 0, '' FROM generate_series(1, {}) g").format(rows)
        )
        if checkpoint:
            conn.execute("CHECKPOINT")
        out[kind] = timed(conn, "VACUUM w")
    return out


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return my - b * mx, b


def main() -> None:
    with (
        tempfile.TemporaryDirectory(prefix="vacuumlab-bench-") as root,
        Sandbox.start(Path(root) / "work", settings={"fsync": "off"}) as sb,
        psycopg.connect(sb.dsn, autocommit=True) as conn,
    ):
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
        rows = {n: one(conn, n) for n in SIZES}
        for n, r in rows.items():
            print(n, {k: round(v * 1000, 1) for k, v in r.items()}, "ms")
        for kind in rows[SIZES[0]]:
            a, b = fit([float(n) for n in SIZES], [rows[n][kind] for n in SIZES])
            print(f"{kind}: {a * 1000:.2f} ms + {b * 1e6:.2f} us a page")


if __name__ == "__main__":
    main()
