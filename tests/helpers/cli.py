"""Helpers that run the vacuumlab command as a user would, and check what it printed."""

from __future__ import annotations

import os
import subprocess
import sys


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


def assert_one_line_error(result: object, fragment: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)  # type: ignore[attr-defined]
    stderr: str = result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    assert fragment in lines[0], lines[0]
