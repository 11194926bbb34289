"""Scenarios of the server as a whole: a wraparound approach (on a server of its own with
autovacuum_freeze_max_age at its minimum) and workers saturated by many churning tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scenarios.expect import ANY_TABLE, SERVER, Expect, Match, Top, Verdict
from scenarios.workloads import (
    BURN,
    advise_over,
    burn,
    execute_all,
    fresh_database,
    load_table,
    pgbench_load,
    update_script,
    write_script,
)
from vacuumlab.pg.sandbox import Sandbox

FREEZE_MAX_AGE = 100_000


@pytest.fixture(scope="module")
def aged_sandbox(sandbox_root: Path) -> Iterator[Sandbox]:
    """A server of its own with autovacuum_freeze_max_age at its minimum (a restart)."""
    settings = {"autovacuum_freeze_max_age": str(FREEZE_MAX_AGE)}
    with Sandbox.start(sandbox_root / "aged", settings=settings) as sb:
        yield sb


OLD_TABLE = Match(
    "the old table approaching its limit",
    "wraparound",
    "public.old_t",
    title="transaction id age",
    at_most="warning",
)
NOTHING_CRITICAL = Match("nothing critical", at_least="critical")
FRESH_TABLE = Match("the fresh table is not at risk", relation="public.fresh_t", at_least="info")


def wraparound_approach(databases: list[str]) -> Expect:
    """The whole cluster is as old as the old table: every database's age is near the limit,
    and one finding for the cluster says so, naming each; none has a finding of its own."""
    cluster = Match(
        "one finding for the cluster, naming the databases",
        "wraparound",
        SERVER,
        title="transaction id age",
        detail="The databases past 75% of autovacuum_freeze_max_age",
        at_most="warning",
    )
    named = [
        Match(f"the cluster's finding names {name}", "wraparound", SERVER, detail=f"{name} (")
        for name in databases
    ]
    one_each = [
        Match(f"no finding of its own for {name}", relation=f"database {name}", at_least="info")
        for name in databases
    ]
    return Expect(
        must=(OLD_TABLE, cluster, *named),
        must_not=(NOTHING_CRITICAL, FRESH_TABLE, *one_each),
    )


@pytest.mark.slow
def test_wraparound_approach(aged_sandbox: Sandbox, verdict: Verdict) -> None:
    """A table left untouched while 85,000 transaction ids go by, on a server whose
    autovacuum_freeze_max_age is 100,000, then a table made just now. Must: the old table's
    age found at warning (past 75 % of its limit, not yet past the failsafe), and one finding
    for the cluster naming every database (all as old). Must not: any finding at critical,
    any finding for the fresh table, a finding for each database."""
    with fresh_database(aged_sandbox.dsn, "vl_scenario_aged") as dsn:
        execute_all(dsn, BURN, "CREATE TABLE old_t (id int)", "INSERT INTO old_t VALUES (1)")
        burn(dsn, 85_000)
        execute_all(dsn, "CREATE TABLE fresh_t (id int)", "INSERT INTO fresh_t VALUES (1)")
        advice, later = advise_over(dsn, interval=5)
    verdict(advice, wraparound_approach([d.name for d in later.databases]))


TABLES = 60
ROWS = 2000
SLOW_AUTOVACUUM = {
    "autovacuum_naptime": "5",
    "autovacuum_vacuum_cost_delay": "100",
    "autovacuum_vacuum_cost_limit": "10",
}
WORKERS = Match("every worker busy, tables waiting", "workers", SERVER, title="workers busy")
SATURATED = Expect(
    must=(WORKERS,),
    may=(Match("the cost budget", "workers", SERVER, title="cost budget"),),
    must_not=(Match("per-table noise", relation=ANY_TABLE),),
    top=(
        Top(Match("more workers", "workers", SERVER, setting="autovacuum_max_workers")),
        Top(Match("a larger budget", "workers", SERVER, setting="autovacuum_vacuum_cost_limit")),
        Top(Match("a shorter delay", "workers", SERVER, setting="autovacuum_vacuum_cost_delay")),
    ),
)


@pytest.fixture
def slow_autovacuum(sandbox: Sandbox) -> Iterator[None]:
    sandbox.configure(SLOW_AUTOVACUUM)
    try:
        yield
    finally:
        sandbox.configure(dict.fromkeys(SLOW_AUTOVACUUM))


@pytest.mark.slow
@pytest.mark.usefixtures("slow_autovacuum")
def test_workers_saturated(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """60 small tables churning at once (updates of an indexed column, so their dead tuples
    wait for vacuum), autovacuum_max_workers at its default, a 5 s
    naptime and a cost budget that makes every vacuum slow (limit 10 per 100 ms). Must: the
    workers finding at warning. Must not: per-table findings at warning (the waiting is the
    server's, and one finding says it)."""
    names = [f"t{i:02d}" for i in range(TABLES)]
    for name in names:
        load_table(embedded_database, name, ROWS, index_n=True)
    scripts = [write_script(tmp_path, n, update_script(n, ROWS)) for n in names]
    with pgbench_load(sandbox, embedded_database, 40, scripts=scripts):
        execute_all(embedded_database, "SELECT pg_sleep(10)")
        advice, _ = advise_over(embedded_database, interval=20)
    verdict(advice, SATURATED)
