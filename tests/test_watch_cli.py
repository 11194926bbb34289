"""``vacuumlab watch`` as a user runs it: in a real terminal (tmux) against the embedded
PostgreSQL, with a vacuum slowed down to watch it move, the keys, a server that goes away and
comes back; and the one-line errors of bad input."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psycopg
import pytest

from conftest import execute, run_cli
from test_cli import assert_one_line_error
from vacuumlab.pg.sandbox import Sandbox

WIDTH, HEIGHT = 200, 50
#: The blocks column of a running VACUUM of public.big: "scanned / total".
STATEMENTS = re.compile(r"(\d+) statements")
BLOCKS = re.compile(r"public\.big\s+VACUUM\s+\S+ heap\s.*?\s([\d,]+) / ([\d,]+)\s")


class Terminal:
    """A tmux session of its own (own server socket) running one command."""

    def __init__(self, command: str) -> None:
        self.socket = f"vl-test-{uuid.uuid4().hex[:8]}"
        # The terminal's size is the pane's: COLUMNS and LINES (set by the test runner's
        # environment) would override it. The shell reports the exit code and keeps the
        # pane, so the test can read both.
        wrapped = f"unset COLUMNS LINES; {command}; echo EXIT $?; sleep 600"
        self.tmux("new-session", "-d", "-x", str(WIDTH), "-y", str(HEIGHT), wrapped)

    def tmux(self, *args: str) -> str:
        result = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        )
        return result.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p")

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.tmux("send-keys", key)
            time.sleep(0.2)

    def wait(self, found: Callable[[str], bool], timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if found(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"not on the screen after {timeout} s:\n{screen}")
            time.sleep(0.2)

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        return self.wait(lambda screen: text in screen, timeout)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], check=False)


@contextmanager
def watching(*args: str) -> Iterator[Terminal]:
    command = " ".join(shlex.quote(a) for a in (sys.executable, "-m", "vacuumlab", "watch", *args))
    terminal = Terminal(command)
    try:
        yield terminal
    finally:
        terminal.close()


def status(screen: str) -> str:
    return screen.splitlines()[0]


def queue_rows(screen: str) -> list[str]:
    """The relations the queue panel lists, top to bottom."""
    lines = screen.splitlines()
    heads = [i for i, line in enumerate(lines) if "─ Queue" in line]
    found: list[str] = []
    for line in lines[heads[0] + 2 :] if heads else []:
        cells = line.strip("│ ").split()
        if not cells or line.startswith("╰"):
            break
        found.append(cells[0])
    return found


@contextmanager
def slow_vacuum(dsn: str) -> Iterator[int]:
    """A manual VACUUM of public.big (100,000 dead tuples) throttled to some ten pages a
    second in a session of its own; yields its pid, cancels it at the end."""
    execute(
        dsn,
        "CREATE TABLE big (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off)",
        "INSERT INTO big SELECT g, repeat('x', 60) FROM generate_series(1, 200000) g",
        "DELETE FROM big WHERE id % 2 = 0",
        "CREATE TABLE small (id int PRIMARY KEY)",
        "INSERT INTO small SELECT generate_series(1, 100)",
    )
    conn = psycopg.connect(dsn, autocommit=True)
    pid = conn.info.backend_pid
    # A cost limit of 1 makes every page cost a 100 ms sleep (vacuum_delay_point(), vacuum.c).
    conn.execute("SET vacuum_cost_delay = 100")
    conn.execute("SET vacuum_cost_limit = 1")

    def vacuum() -> None:
        with suppress(psycopg.errors.QueryCanceled):  # cancelled at the end
            conn.execute("VACUUM big")

    thread = threading.Thread(target=vacuum)
    thread.start()
    try:
        yield pid
    finally:
        execute(dsn, f"SELECT pg_cancel_backend({pid})")
        thread.join(30)
        conn.close()


def test_the_screen_shows_a_slow_vacuum_rising_and_the_keys_change_the_view(
    embedded_database: str,
) -> None:
    with slow_vacuum(embedded_database), watching(embedded_database, "--refresh", "1") as term:
        first = term.wait(lambda s: BLOCKS.search(s) is not None)
        scanned, total = (int(g.replace(",", "")) for g in BLOCKS.search(first).groups())  # type: ignore[union-attr]
        assert total > 1000
        later = term.wait(
            lambda s: (m := BLOCKS.search(s)) is not None and int(m[1].replace(",", "")) > scanned
        )
        assert "Running vacuums: 1" in later
        assert queue_rows(later)[0] == "public.big"  # being vacuumed: first in the queue
        assert "running" in later
        statements = STATEMENTS.findall(status(later))

        term.keys("s", "s")  # progress to threshold, then dead tuples
        screen = term.wait_for("sort: dead tuples")
        assert queue_rows(screen)[0] == "public.big"
        term.keys("s", "s", "s")  # dead tuples/s, predicted start, name
        screen = term.wait_for("sort: name")
        assert queue_rows(screen) == sorted(queue_rows(screen))

        term.keys("/", "s", "m", "a", "l", "l", "Enter")
        screen = term.wait_for("filter: small")
        assert queue_rows(screen) == ["public.small"]
        assert "public.big" not in screen.split("─ Queue")[0].split("─ Running")[1]

        term.keys("p")
        paused = status(term.wait_for("PAUSED"))
        time.sleep(2.5)  # more than two refreshes
        assert status(term.screen()) == paused
        term.keys("Escape", "p")  # the filter cleared, refreshes again
        term.wait(lambda s: "PAUSED" not in status(s) and status(s) != paused)
        assert "public.big" in queue_rows(term.screen())
        # The keys changed what is shown, not what a refresh asks.
        assert STATEMENTS.findall(status(term.screen())) == statements

        term.keys("q")
        term.wait_for("EXIT 0", timeout=10)


def test_a_server_that_goes_away_shows_a_banner_and_the_view_comes_back(tmp_path: Path) -> None:
    with Sandbox.start(tmp_path / "own") as sb:
        execute(sb.dsn, "CREATE TABLE keep (id int)", "INSERT INTO keep VALUES (1)")
        with watching(sb.dsn, "--refresh", "0.5") as term:
            term.wait(lambda s: "public.keep" in queue_rows(s))
            outage = threading.Thread(target=sb.restart, kwargs={"down_s": 6.0})
            outage.start()
            try:
                down = term.wait_for("connection lost: ", timeout=10)
                assert "retrying every 0.5 s" in down
                assert "public.keep" in queue_rows(down)  # the last view stays under it
            finally:
                outage.join()
            back = term.wait(lambda s: "connection lost" not in s, timeout=15)
            assert "public.keep" in queue_rows(back)
            assert "EXIT" not in back
            term.keys("q")
            term.wait_for("EXIT 0", timeout=10)


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--refresh", "0"), "--refresh takes a number of seconds above 0, not 0"),
        (("--refresh", "-1"), "--refresh takes a number of seconds above 0, not -1"),
        (("--refresh", "nan"), "--refresh takes a number of seconds above 0, not nan"),
        (("--refresh", "soon"), "Invalid value for '--refresh'"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    sandbox: Sandbox, args: tuple[str, ...], fragment: str
) -> None:
    assert_one_line_error(run_cli("watch", sandbox.dsn, *args), fragment)


def test_a_server_that_cannot_be_reached_is_one_line_and_exit_2() -> None:
    result = run_cli("watch", "postgresql://nobody@127.0.0.1:1/none")
    assert_one_line_error(result, "cannot connect to postgresql://nobody@127.0.0.1:1/none")


def test_a_malformed_dsn_is_one_line_and_exit_2() -> None:
    assert_one_line_error(run_cli("watch", "host=127.0.0.1 port"), "invalid connection string")


def test_no_dsn_and_no_sandbox_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_cli("watch", "--data-dir", str(tmp_path / "none"))
    assert_one_line_error(result, "no DSN given and no sandbox running")


def test_without_a_terminal_it_says_so(sandbox: Sandbox) -> None:
    assert_one_line_error(run_cli("watch", sandbox.dsn), "vacuumlab watch needs a terminal")
