"""``vacuumlab exporter --all-databases`` on the embedded PostgreSQL 18: three databases of the
shared server (one busy, one quiet, one whose CONNECT is revoked from PUBLIC), scraped as a
pg_monitor role over HTTP and checked against what each database's own catalog and
statistics say."""

from __future__ import annotations

import signal
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from psycopg import sql

from helpers.databases import BUSY_DEAD, Databases, three_databases
from helpers.db import execute
from helpers.exporter import exporting, scrape, value
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.watch.view import Pick

#: Per-table series of the whole server at most: fewer than either of the two databases read
#: has relations (four each), so a cap per database would export more.
CAP = 3


@pytest.fixture(scope="module")
def server(sandbox: Sandbox) -> Iterator[Databases]:
    with three_databases(sandbox.dsn, "vl_expdb") as found:
        yield found


#: What a database's catalog and statistics say of its user tables' heaps and TOAST
#: relations (those the exporter reads: no catalogs, no temporary tables): the dead tuples,
#: how many are past their vacuum threshold (no table here has reloptions that move it) and
#: the oldest relfrozenxid age.
TRUTH = """
WITH heaps AS (
    SELECT c.oid, c.reltoastrelid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'
       AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_toast'
), listed AS (
    SELECT oid FROM heaps UNION ALL SELECT reltoastrelid FROM heaps WHERE reltoastrelid <> 0
)
SELECT coalesce(sum(s.n_dead_tup), 0),
       count(*) FILTER (WHERE s.n_dead_tup > current_setting('autovacuum_vacuum_threshold')::int
           + current_setting('autovacuum_vacuum_scale_factor')::float8 * greatest(c.reltuples, 0)),
       max(age(c.relfrozenxid))
  FROM listed l JOIN pg_class c ON c.oid = l.oid JOIN pg_stat_all_tables s ON s.relid = l.oid
"""


@dataclass(frozen=True)
class Truth:
    dead: int
    past_vacuum: int
    xid_age: int


def truth(dsn: str) -> Truth:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(TRUTH).fetchone()
    assert row is not None
    return Truth(int(row[0]), row[1], row[2])


def database_up(found: dict[str, Metric]) -> dict[str, float]:
    return {s.labels["database"]: s.value for s in found["vacuumlab_database_up"].samples}


def test_each_databases_totals_are_its_own_and_the_refused_one_is_not_up(
    server: Databases,
) -> None:
    read = (server.busy, server.quiet)
    before = {name: truth(server.dsn(name)) for name in read}
    dsn = server.dsn(server.quiet, monitor=True)
    with exporting(dsn, pick=Pick(limit=CAP), all_databases=True) as (url, _):
        found = scrape(url)
    after = {name: truth(server.dsn(name)) for name in read}
    assert value(found, "vacuumlab_up") == 1
    up = database_up(found)
    assert (up[server.busy], up[server.quiet], up[server.locked]) == (1, 1, 0)
    # What the fixture made: the busy database's dead tuples, one table past its threshold.
    assert (before[server.busy].dead, before[server.busy].past_vacuum) == (BUSY_DEAD, 1)
    assert (before[server.quiet].dead, before[server.quiet].past_vacuum) == (0, 0)
    for name in read:
        db = {"database": name}
        assert before[name].dead == after[name].dead
        assert value(found, "vacuumlab_database_dead_tuples", **db) == before[name].dead
        past = value(found, "vacuumlab_database_relations_past_threshold", threshold="vacuum", **db)
        assert past == before[name].past_vacuum
        # Ages grow with every transaction id assigned in the cluster: between the reads.
        age = value(found, "vacuumlab_wraparound_table_age", counter="xid", **db)
        assert age is not None
        assert before[name].xid_age <= age <= after[name].xid_age, name
    # The refused database has no series but its database_up.
    for family in found.values():
        if family.name != "vacuumlab_database_up":
            assert all(s.labels.get("database") != server.locked for s in family.samples)
    # The busy table is labelled with its database, and no other database has one so named.
    table = {"schema": "public", "table": "forgotten", "kind": "heap"}
    assert value(found, "vacuumlab_table_dead_tuples", database=server.busy, **table) == 2000
    assert value(found, "vacuumlab_table_dead_tuples", **table) == 2000


def test_the_cli_caps_the_series_across_the_server_and_names_the_refused_once(
    server: Databases,
) -> None:
    dsn = server.dsn(server.quiet, monitor=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "vacuumlab", "exporter", dsn, "--all-databases",
         "--max-tables", str(CAP), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        url = serving(process)
        first, second = answer(url), answer(url)
    finally:
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=60)
    assert process.returncode == 130, rest
    assert "Traceback" not in rest
    for status, found in (first, second):
        assert status == 200
        assert value(found, "vacuumlab_up") == 1
        assert database_up(found)[server.locked] == 0
        dead = found["vacuumlab_table_dead_tuples"].samples
        assert len(dead) == CAP == value(found, "vacuumlab_relations_exported")
        assert len({s.labels["database"] for s in dead}) >= 1
        # The most urgent relation of the server, past its threshold, has a series.
        forgotten = [s for s in dead if s.labels["table"] == "forgotten"]
        assert [s.labels["database"] for s in forgotten] == [server.busy]
        assert value(found, "vacuumlab_relations") >= 8  # four tables in each database read
    said = [line for line in rest.splitlines() if f"database {server.locked} not read" in line]
    grant = f'GRANT CONNECT ON DATABASE "{server.locked}" TO "{server.role}";'
    assert len(said) == 1, rest
    assert "vacuumlab_database_up 0" in said[0]
    assert "permission denied" in said[0]
    assert grant in said[0]


def test_a_database_created_or_dropped_between_scrapes_comes_and_goes_without_error(
    server: Databases,
) -> None:
    new = f"vl_expdb_{uuid.uuid4().hex[:8]}_new"
    created = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(new))
    dropped = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(new))
    dsn = server.dsn(server.quiet, monitor=True)
    try:
        with exporting(dsn, all_databases=True) as (url, _):
            assert new not in database_up(scrape(url))
            execute(server.admin, created)
            execute(server.dsn(new), "CREATE TABLE fresh (id int)")
            there = scrape(url)
            # Dropped while the exporter's session to it is open (FORCE ends it).
            execute(server.admin, dropped)
            gone = scrape(url)
    finally:
        execute(server.admin, dropped)
    assert database_up(there)[new] == 1
    fresh = {"database": new, "schema": "public", "table": "fresh", "kind": "heap"}
    assert value(there, "vacuumlab_table_dead_tuples", **fresh) == 0
    assert new not in database_up(gone)
    assert all(s.labels.get("database") != new for f in gone.values() for s in f.samples)
    assert value(gone, "vacuumlab_up") == 1
    assert value(gone, "vacuumlab_scrape_errors_total") == 0
    assert database_up(gone)[server.busy] == 1


def serving(process: subprocess.Popen[str]) -> str:
    """The URL the exporter says it serves on (it picks a free port: --listen HOST:0)."""
    assert process.stderr is not None
    for line in process.stderr:
        if "serving " in line:
            return line.split("serving ", 1)[1].split()[0]
    raise AssertionError(f"the exporter stopped: {process.communicate()}")


def answer(url: str) -> tuple[int, dict[str, Metric]]:
    with urllib.request.urlopen(url, timeout=60) as response:
        status, text = response.status, response.read().decode()
    return status, {f.name: f for f in text_string_to_metric_families(text)}
