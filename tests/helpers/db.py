"""Helpers that talk to a test server: statements, sessions that hold the horizon, fresh
databases, and waiting for the statistics to catch up."""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

#: A second server of another major version, when one is named.
TEST_DSN = os.environ.get("VACUUMLAB_TEST_DSN")
#: A role of the session sandbox that must log in with this password.
PASSWORD_ROLE = "vl_password_role"
PASSWORD = "right-password"


def fresh_database(admin_dsn: str) -> Iterator[str]:
    """A new database on the server of ``admin_dsn``, dropped with FORCE afterwards;
    yields its DSN."""
    name = f"vl_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(admin_dsn, dbname=name)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def execute(dsn: str, *statements: str | sql.Composable) -> None:
    """Run statements in autocommit on a new connection."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


@contextmanager
def xmin_holder(dsn: str) -> Iterator[int]:
    """A session that sits idle in a REPEATABLE READ transaction, pinning the xmin horizon;
    yields its pid."""
    with psycopg.connect(dsn, application_name="vl-test-holder") as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        yield row[0]
        conn.rollback()


@contextmanager
def background(target: object) -> Iterator[threading.Thread]:
    thread = threading.Thread(target=target)  # type: ignore[arg-type]
    thread.start()
    try:
        yield thread
    finally:
        thread.join()


def wait_for_counts(dsn: str, table: str, column: str, at_least: int) -> None:
    """Statistics reach shared memory asynchronously: poll until they show the work."""
    query = sql.SQL("SELECT {} FROM pg_stat_user_tables WHERE relname = {}").format(
        sql.Identifier(column), sql.Literal(table)
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with psycopg.connect(dsn) as conn:
            row = conn.execute(query).fetchone()
        if row and row[0] >= at_least:
            return
        time.sleep(0.2)
    raise AssertionError(f"{table}.{column} never reached {at_least}")
