"""Fixtures: one embedded PostgreSQL 18 per test session, and the server named by
``VACUUMLAB_TEST_DSN`` (tests parametrised over ``server`` run against both; the second is
skipped when the variable is unset). Every test that changes data gets a database of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from scenarios import suite
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.store import Store

TEST_DSN = os.environ.get("VACUUMLAB_TEST_DSN")
PASSWORD_ROLE = "vl_password_role"
PASSWORD = "right-password"
#: The session's server: nothing a test measures depends on data reaching the disk, and
#: skipping fsync saves time in every commit, CREATE DATABASE and checkpoint. Not
#: synchronous_commit (tests read the flushed WAL position) nor full_page_writes (the TOAST
#: study measures the full-page images that data checksums make vacuum write).
TEST_SETTINGS = {"fsync": "off"}


def pytest_configure(config: pytest.Config) -> None:
    suite.configure(config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    suite.hand_over(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """pytest-xdist: a worker ended; its scenario outcomes join the controller's."""
    suite.take(node.config, node)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with slow tests first, each file's tests in their order: the test processes take
    whole files in turn (--dist loadfile), so the longest start first and the short ones fill
    in around them, rather than one long file starting last and running alone."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    suite.summary(terminalreporter)


@pytest.fixture(scope="session", autouse=True)
def own_home() -> Iterator[Path]:
    """A vacuumlab home of the session's own: no test reads or writes the user's
    ~/vacuumlab (its results store, its sandbox). Outside pytest's temporary root, for the
    reason sandbox_root gives: the CLI's sandboxes live in it."""
    home = Path(tempfile.mkdtemp(prefix="vacuumlab-home-"))
    before = os.environ.get("VACUUMLAB_HOME")
    os.environ["VACUUMLAB_HOME"] = str(home)
    yield home
    if before is None:
        del os.environ["VACUUMLAB_HOME"]
    else:
        os.environ["VACUUMLAB_HOME"] = before
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def sandbox_root() -> Iterator[Path]:
    """Data directories live under a folder of vacuumlab's own: as root, the server user is
    given traverse permission on every parent. Not under pytest's temporary root: each new
    pytest session takes group and other permissions off /tmp/pytest-of-USER, so a second
    session started beside this one would lock this one's server user out of its data
    directory (pg_ctl could no longer stop it)."""
    root = Path(tempfile.mkdtemp(prefix="vacuumlab-tests-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def sandbox(sandbox_root: Path) -> Iterator[Sandbox]:
    with Sandbox.start(sandbox_root / "session", settings=TEST_SETTINGS) as sb:
        _require_password_for(sb, PASSWORD_ROLE, PASSWORD)
        yield sb


def _require_password_for(sb: Sandbox, role: str, password: str) -> None:
    """A role that must log in with a password, to test authentication failures."""
    with psycopg.connect(sb.dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        hba = conn.execute("SHOW hba_file").fetchone()
        assert hba is not None
        path = Path(hba[0])
        path.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + path.read_text())
        conn.execute("SELECT pg_reload_conf()")


@pytest.fixture(
    params=[
        "embedded",
        pytest.param(
            "dsn", marks=pytest.mark.skipif(TEST_DSN is None, reason="VACUUMLAB_TEST_DSN unset")
        ),
    ]
)
def server(request: pytest.FixtureRequest) -> str:
    """An admin DSN: the embedded PostgreSQL 18, then the server of VACUUMLAB_TEST_DSN."""
    if request.param == "embedded":
        sb: Sandbox = request.getfixturevalue("sandbox")
        return sb.dsn
    assert TEST_DSN is not None
    return TEST_DSN


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """An empty results store of the test's own."""
    with Store.open(tmp_path / "results.sqlite") as s:
        yield s


@pytest.fixture
def database(server: str) -> Iterator[str]:
    """A fresh database on ``server``, dropped afterwards; yields its DSN."""
    yield from _fresh_database(server)


@pytest.fixture
def embedded_database(sandbox: Sandbox) -> Iterator[str]:
    """A fresh database on the embedded server only."""
    yield from _fresh_database(sandbox.dsn)


def _fresh_database(admin_dsn: str) -> Iterator[str]:
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


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The vacuumlab command in a real child process, as a user would run it."""
    return subprocess.run(
        [sys.executable, "-m", "vacuumlab", *args],
        capture_output=True,
        text=True,
        check=False,
        env=(os.environ | {"COLUMNS": "160"}) | (env or {}),
        timeout=120,
    )


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
