"""A real terminal for the terminal UI's tests: a tmux session of its own running
``vacuumlab watch``, its screen read with capture-pane and keys sent with send-keys; and a
vacuum slowed down to watch it move."""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import psycopg

from helpers.db import execute

WIDTH, HEIGHT = 200, 50


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


def queue_rows(screen: str) -> list[str]:
    """The first cell of each row of the queue panel, top to bottom."""
    lines = screen.splitlines()
    heads = [i for i, line in enumerate(lines) if "─ Queue" in line]
    found: list[str] = []
    for line in lines[heads[0] + 2 :] if heads else []:
        cells = line.strip("│ ").split()
        if not cells or line.startswith("╰"):
            break
        found.append(cells[0])
    return found
