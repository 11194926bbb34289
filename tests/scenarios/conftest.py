"""The scenario suite's verdicts: each scenario judges its advice against its expectations
through ``verdict``; at the end of the session the precision/recall table is printed, and
written as Markdown to ``$VACUUMLAB_SCENARIO_REPORT`` when that is set (scenarios/suite.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from scenarios.expect import Expect, Outcome, Verdict, judge
from scenarios.suite import OUTCOMES
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Advice


@pytest.fixture
def verdict(request: pytest.FixtureRequest) -> Verdict:
    """Judge the advice, keep the outcome for the table, and fail on anything not as
    expected (a must-have excused by an xfail reason is reported, not failed)."""
    started = time.monotonic()
    outcomes = request.config.stash[OUTCOMES]

    def judged(advice: Advice, expect: Expect) -> Outcome:
        name = request.node.name.removeprefix("test_")
        outcome = replace(judge(name, advice, expect), seconds=time.monotonic() - started)
        outcomes.append(outcome)
        assert outcome.passed, outcome.failures()
        return outcome

    return judged


@pytest.fixture
def short_naptime(sandbox: Sandbox) -> Iterator[None]:
    """A 5 s naptime, so autovacuum visits a churning table several times within the
    interval (and is held back there, if anything holds the horizon)."""
    sandbox.configure({"autovacuum_naptime": "5"})
    try:
        yield
    finally:
        sandbox.configure({"autovacuum_naptime": None})
