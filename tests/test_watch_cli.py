"""``vacuumlab watch`` as a user runs it: in a real terminal (tmux) against the embedded
PostgreSQL, with a vacuum slowed down to watch it move, the keys, a server that goes away and
comes back; and the one-line errors of bad input."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from helpers.cli import assert_one_line_error, run_cli
from helpers.db import execute
from helpers.terminal import queue_rows, slow_vacuum, watching
from vacuumlab.pg.sandbox import Sandbox

WIDTH, HEIGHT = 200, 50
#: The blocks column of a running VACUUM of public.big: "scanned / total".
STATEMENTS = re.compile(r"(\d+) statements")
BLOCKS = re.compile(r"public\.big\s+VACUUM\s+\S+ heap\s.*?\s([\d,]+) / ([\d,]+)\s")


def status(screen: str) -> str:
    return screen.splitlines()[0]


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
