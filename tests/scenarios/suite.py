"""The scenario suite's table across test processes: each scenario's outcome is kept in the
process that judged it; under pytest-xdist every worker hands its outcomes to the controller
when it ends (``workeroutput``), and the controller prints the one table. The hooks that call
these live in tests/conftest.py: the controller never loads this folder's conftest (it
collects no tests)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from scenarios.expect import Outcome
from scenarios.report import markdown

REPORT_VARIABLE = "VACUUMLAB_SCENARIO_REPORT"
OUTCOMES = pytest.StashKey[list[Outcome]]()
_HANDED = "vacuumlab_scenario_outcomes"


def configure(config: pytest.Config) -> None:
    config.stash[OUTCOMES] = []


def hand_over(config: pytest.Config) -> None:
    """In a worker: its outcomes go to the controller with the worker's output."""
    output: dict[str, Any] | None = getattr(config, "workeroutput", None)
    if output is not None:
        output[_HANDED] = [dataclasses.asdict(o) for o in config.stash.get(OUTCOMES, [])]


def take(config: pytest.Config, node: Any) -> None:
    """In the controller: a worker's outcomes, as it handed them over."""
    handed = getattr(node, "workeroutput", {}).get(_HANDED, [])
    config.stash.setdefault(OUTCOMES, []).extend(Outcome(**o) for o in handed)


def summary(terminalreporter: pytest.TerminalReporter) -> None:
    outcomes = sorted(terminalreporter.config.stash.get(OUTCOMES, []), key=lambda o: o.scenario)
    if not outcomes:
        return
    text = markdown(outcomes)
    terminalreporter.write_sep("=", "advisor scenario suite")
    terminalreporter.write_line(text)
    target = os.environ.get(REPORT_VARIABLE)
    if target:
        Path(target).write_text(text, encoding="utf-8")
        terminalreporter.write_line(f"written to {target}")
