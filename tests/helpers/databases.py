"""Three databases of the test server for the live side's ``--all-databases`` (exporter and
watch): one busy, one quiet, one whose CONNECT is revoked from PUBLIC, and a pg_monitor role
that may therefore connect to the first two only. Unique names, dropped afterwards."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from helpers.db import execute

#: Autovacuum off for a table and its TOAST relation: nothing empties them mid-test.
OFF = "WITH (autovacuum_enabled = off, toast.autovacuum_enabled = off)"
#: The busy database: 2,000 of 5,000 analysed rows of ``forgotten`` dead, past its vacuum
#: threshold (50 + 0.2 × 5,000 = 1,050), the highest ratio of the three databases (1.9);
#: three more tables with a few dead rows each, far from theirs (70).
BUSY = (
    f"CREATE TABLE forgotten (id int PRIMARY KEY) {OFF}",
    "INSERT INTO forgotten SELECT generate_series(1, 5000)",
    *(f"CREATE TABLE busy_{i} (id int) {OFF}" for i in range(3)),
    *(f"INSERT INTO busy_{i} SELECT generate_series(1, 100)" for i in range(3)),
    "SELECT pg_stat_force_next_flush()",
    "ANALYZE",
    "DELETE FROM forgotten WHERE id <= 2000",
    *(f"DELETE FROM busy_{i} WHERE id <= {i + 1}" for i in range(3)),
)
#: The quiet database: four tables, no dead tuples.
QUIET = (
    *(f"CREATE TABLE quiet_{i} (id int) {OFF}" for i in range(4)),
    *(f"INSERT INTO quiet_{i} SELECT generate_series(1, 10)" for i in range(4)),
)
#: Dead tuples the busy database's heaps hold once the statistics have them.
BUSY_DEAD = 2000 + 1 + 2 + 3


@dataclass(frozen=True)
class Databases:
    admin: str
    busy: str
    quiet: str
    locked: str
    role: str

    def dsn(self, database: str, *, monitor: bool = False) -> str:
        """A database's DSN, as the superuser or as the pg_monitor role."""
        if monitor:
            return make_conninfo(self.admin, dbname=database, user=self.role)
        return make_conninfo(self.admin, dbname=database)

    @property
    def mine(self) -> tuple[str, str, str]:
        return self.busy, self.quiet, self.locked


@contextmanager
def three_databases(admin: str, prefix: str) -> Iterator[Databases]:
    """The three databases and the role, named ``{prefix}_{tag}_…``; the busy one's dead
    tuples in the statistics before it yields."""
    tag = uuid.uuid4().hex[:8]
    found = Databases(
        admin=admin,
        busy=f"{prefix}_{tag}_busy",
        quiet=f"{prefix}_{tag}_quiet",
        locked=f"{prefix}_{tag}_locked",
        role=f"{prefix}_{tag}_monitor",
    )
    try:
        for name in found.mine:
            execute(admin, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        execute(
            admin,
            sql.SQL("CREATE ROLE {} LOGIN IN ROLE pg_monitor").format(sql.Identifier(found.role)),
            sql.SQL("REVOKE CONNECT ON DATABASE {} FROM PUBLIC").format(
                sql.Identifier(found.locked)
            ),
        )
        execute(found.dsn(found.locked), f"CREATE TABLE locked_only (id int) {OFF}")
        execute(found.dsn(found.quiet), *QUIET)
        execute(found.dsn(found.busy), *BUSY)
        wait_for_dead(found.dsn(found.busy), BUSY_DEAD)
        yield found
    finally:
        for name in found.mine:
            execute(
                admin,
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)),
            )
        execute(admin, sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(found.role)))


def wait_for_dead(dsn: str, dead: int) -> None:
    """Until the user tables' dead tuples reach the statistics (flushed about once a
    second)."""
    deadline = time.monotonic() + 15
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT sum(n_dead_tup) FROM pg_stat_user_tables").fetchone()
            if row is not None and row[0] == dead:
                return
            time.sleep(0.2)
    raise AssertionError(f"the dead tuples never reached {dead}")
