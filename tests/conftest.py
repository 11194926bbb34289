"""Fixtures: one embedded PostgreSQL 18 per test session, and the server named by
``VACUUMLAB_TEST_DSN`` (tests parametrised over ``server`` run against both; the second is
skipped when the variable is unset). Every test that changes data gets a database of its own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from helpers.db import PASSWORD, PASSWORD_ROLE, TEST_DSN, fresh_database
from scenarios import suite
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.store import Store

#: The session's server: nothing a test measures depends on data reaching the disk, and
#: skipping fsync saves time in every commit, CREATE DATABASE and checkpoint. Not
#: synchronous_commit (tests read the flushed WAL position) nor full_page_writes (the TOAST
#: study measures the full-page images that data checksums make vacuum write).
TEST_SETTINGS = {"fsync": "off"}


#: Server binaries of the other majors, fetched once per machine and kept where a fresh clone
#: finds them again (the version matrix).
os.environ.setdefault("VACUUMLAB_PG_CACHE", str(Path("~/.cache/vacuumlab/pg").expanduser()))


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
    in around them, rather than one long file starting last and running alone (the Makefile
    keeps xdist from reordering them by their number of tests)."""
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
    yield from fresh_database(server)


@pytest.fixture
def embedded_database(sandbox: Sandbox) -> Iterator[str]:
    """A fresh database on the embedded server only."""
    yield from fresh_database(sandbox.dsn)
