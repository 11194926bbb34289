"""Scenarios: real workloads on the embedded server, each with the findings that must appear
and those that must not (false positives). A fresh database per scenario."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import execute, xmin_holder
from scenarios.workloads import (
    advise_over,
    describe,
    horizon_blame,
    pgbench_init,
    pgbench_load,
    ranked,
    recommendations,
)
from vacuumlab.pg.sandbox import Sandbox

IDLE_TIMEOUT = "idle_in_transaction_session_timeout"


@pytest.fixture
def short_naptime(sandbox: Sandbox) -> Iterator[None]:
    """A 5 s naptime, so autovacuum visits a churning table several times within the
    interval (and is held back there, if anything holds the horizon)."""
    sandbox.configure({"autovacuum_naptime": "5"})
    try:
        yield
    finally:
        sandbox.configure({"autovacuum_naptime": None})


@pytest.mark.slow
def test_steady_oltp(embedded_database: str, sandbox: Sandbox) -> None:
    """pgbench TPC-B (scale 20, 4 clients), advised over 35 s under production naptime.
    Must not: any finding at warning or above, a timeout for sessions idle in a transaction
    (pgbench's are so between statements), horizon blame, a fillfactor rewrite."""
    pgbench_init(sandbox, embedded_database, scale=20)
    with pgbench_load(sandbox, embedded_database, seconds=45):
        advice, _ = advise_over(embedded_database, interval=35)
    broken = {
        "at warning or above": describe(ranked(advice)),
        "idle timeout": [r.sql for r in recommendations(advice, IDLE_TIMEOUT)],
        "horizon blame": describe(horizon_blame(advice)),
        "fillfactor rewrite": [r.sql for r in recommendations(advice, "fillfactor")],
    }
    failed = {k: v for k, v in broken.items() if v}
    assert not failed, "\n".join(f"{k}: {v}" for k, v in failed.items())


CHURN = "UPDATE churn SET n = n + 1 WHERE id = 1 + (random() * 999)::int;\n"


@pytest.mark.slow
@pytest.mark.usefixtures("short_naptime")
def test_abandoned_idle_in_transaction(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    """A session idle in a transaction holds the horizon across the interval while a table
    churns. Must: the horizon finding at warning or above, the timeout recommended once, the
    churning table's dead tuples blamed on the horizon."""
    execute(
        embedded_database,
        "CREATE TABLE churn (id int PRIMARY KEY, n int NOT NULL)",
        "INSERT INTO churn SELECT g, 0 FROM generate_series(1, 1000) g",
        "ANALYZE churn",
    )
    script = tmp_path / "churn.sql"
    script.write_text(CHURN)
    with (
        xmin_holder(embedded_database) as pid,
        pgbench_load(sandbox, embedded_database, 40, clients=2, script=script),
    ):
        advice, _ = advise_over(embedded_database, interval=30)
    held = [f for f in ranked(advice) if f.question == "horizon" and f.evidence.get("pid") == pid]
    assert held, describe(advice.findings)
    assert len(recommendations(advice, IDLE_TIMEOUT)) == 1
    assert [f.relation for f in horizon_blame(advice)] == ["public.churn"]


@pytest.mark.slow
def test_fresh_bulk_load(embedded_database: str) -> None:
    """A table loaded by one INSERT, then one UPDATE of every row. Must not: a fillfactor
    rewrite (one pass of updates says nothing of the steady pattern), scale-factor advice for
    a table whose reltuples is still -1."""
    execute(
        embedded_database,
        "CREATE TABLE bulk (id int PRIMARY KEY, v int NOT NULL, pad text NOT NULL)",
        "INSERT INTO bulk SELECT g, 0, repeat('x', 60) FROM generate_series(1, 200000) g",
        "UPDATE bulk SET v = v + 1",
    )
    advice, later = advise_over(embedded_database, interval=5)
    assert not recommendations(advice, "fillfactor"), describe(advice.findings)
    unknown = {t.heap.qualified_name for t in later.tables if t.heap.reltuples < 0}
    assert "public.bulk" in unknown  # the scenario is the one it claims: never analysed yet
    scaled = {
        f.relation
        for f in advice.findings
        if any(r.setting.endswith("scale_factor") for r in f.recommendations)
    }
    assert not unknown & scaled, describe(advice.findings)
