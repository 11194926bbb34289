"""Expectations as data, and the verdict on one scenario's advice.

Each scenario declares an :class:`Expect`: the findings that must appear (recall), those that
may (neither counted for nor against it), those that must not, and which recommendations are
acceptable among the top three. :func:`judge` turns the advice into an :class:`Outcome`; the
suite's conftest gathers the outcomes into the precision/recall table (report.py).

- A finding at warning or above is *ranked*: what a DBA acts on. Precision is the share of
  ranked findings that match a must or a may; a ranked finding that matches neither, or
  matches a must-not, is a false positive.
- A must-not with ``at_least="info"`` (a recommendation that must never appear, say) counts
  as a false positive at any severity.
- The top three are ``Advice.recommendations()[:3]``, the order every renderer shows ("What to
  change, most impact first"). They are right when each matches an acceptable recommendation
  and every one marked ``needed`` is among them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from vacuumlab.records.advice import Advice, Finding, Recommendation, Severity, Value

SERVER = "(server)"
#: ``Match.relation`` for any table's finding (not the server's).
ANY_TABLE = "*"
#: What a scenario calls with its advice and expectations (the ``verdict`` fixture).
Verdict = Callable[["Advice", "Expect"], "Outcome"]
_RANK = {"info": 0, "warning": 1, "critical": 2}


@dataclass(frozen=True, slots=True)
class Match:
    """A predicate on a finding (and, with ``setting``, on one of its recommendations).

    ``relation`` is exact (``SERVER`` for server-wide findings, ``ANY_TABLE`` for any
    table's); ``title`` and ``detail`` are fragments of the finding's; ``evidence`` items must
    equal the finding's. ``xfail`` says why a must-have is not expected to be found yet: it
    still counts in recall, but does not fail the test."""

    name: str
    question: str | None = None
    relation: str | None = None
    title: str | None = None
    detail: str | None = None
    setting: str | None = None
    at_least: Severity = "warning"
    at_most: Severity = "critical"
    evidence: Mapping[str, Value] = field(default_factory=dict)
    xfail: str | None = None

    def finding(self, f: Finding) -> bool:
        relation = SERVER if f.relation is None else f.relation
        return (
            (self.question is None or f.question == self.question)
            and (self.relation is None or relation == self.relation or self._any_table(f))
            and (self.title is None or self.title in f.title)
            and (self.detail is None or self.detail in f.detail)
            and _RANK[self.at_least] <= _RANK[f.severity] <= _RANK[self.at_most]
            and all(f.evidence.get(k) == v for k, v in self.evidence.items())
        )

    def _any_table(self, f: Finding) -> bool:
        return self.relation == ANY_TABLE and f.relation is not None

    def matches(self, f: Finding) -> bool:
        """The finding, and a recommendation of ``setting`` in it when one is named."""
        if self.setting is None:
            return self.finding(f)
        return any(self.recommendation(f, r) for r in f.recommendations)

    def recommendation(self, f: Finding, r: Recommendation) -> bool:
        return (self.setting is None or r.setting == self.setting) and self.finding(f)


IDLE_TIMEOUT = "idle_in_transaction_session_timeout"
#: Recommendations that are never right in these scenarios, at any severity.
NO_IDLE_TIMEOUT = Match("no idle-session timeout", setting=IDLE_TIMEOUT, at_least="info")
NO_FILLFACTOR = Match("no fillfactor rewrite", setting="fillfactor", at_least="info")
HORIZON_BLAME = "xmin horizon keeps"


def no_blame(relation: str | None = None) -> Match:
    return Match("no horizon blame", "thresholds", relation, title=HORIZON_BLAME, at_least="info")


@dataclass(frozen=True, slots=True)
class Top:
    """An acceptable recommendation among the top three; ``needed`` ones must be there."""

    match: Match
    needed: bool = False


@dataclass(frozen=True, slots=True)
class Expect:
    must: tuple[Match, ...] = ()
    may: tuple[Match, ...] = ()
    must_not: tuple[Match, ...] = ()
    top: tuple[Top, ...] = ()


@dataclass(frozen=True, slots=True)
class Outcome:
    scenario: str
    found: list[str]
    missing: list[str]
    excused: list[str]  # must-haves missing under an xfail, with the reason
    false_positives: list[str]
    top_three: list[str]
    top_right: bool
    top_problems: list[str]
    ranked: int
    ranked_expected: int
    ranked_findings: list[str]
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.missing and not self.false_positives and self.top_right

    def failures(self) -> str:
        parts = [f"missing: {m}" for m in self.missing]
        parts += [f"false positive: {fp}" for fp in self.false_positives]
        parts += [f"top three: {p}" for p in self.top_problems]
        return "\n".join([*parts, f"top three were: {self.top_three}"])


def judge(scenario: str, advice: Advice, expect: Expect) -> Outcome:
    found, missing, excused = [], [], []
    for m in expect.must:
        if any(m.matches(f) for f in advice.findings):
            found.append(m.name)
        elif m.xfail:
            excused.append(f"{m.name} ({m.xfail})")
        else:
            missing.append(f"{m.name} ({_said(advice, m)})")
    ranked = [f for f in advice.findings if _RANK[f.severity] >= _RANK["warning"]]
    expected = [f for f in ranked if _expected(f, expect)]
    false_positives = [describe(f) for f in ranked if not _expected(f, expect)]
    false_positives += [
        f"{m.name}: {describe(f)}"
        for m in expect.must_not
        if m.at_least == "info"
        for f in advice.findings
        if m.matches(f) and f not in ranked
    ]
    top = advice.recommendations()[:3]
    problems = _top_problems(top, expect.top)
    return Outcome(
        scenario=scenario,
        found=found,
        missing=missing,
        excused=excused,
        false_positives=false_positives,
        top_three=[f"{r.sql} [{f.relation or SERVER}]" for f, r in top],
        top_right=not problems,
        top_problems=problems,
        ranked=len(ranked),
        ranked_expected=len(expected),
        ranked_findings=[describe(f) for f in ranked],
    )


def _said(advice: Advice, m: Match) -> str:
    """What the advisor said instead, on the must-have's question and relation."""
    said = [
        describe(f)
        for f in advice.findings
        if (m.question is None or f.question == m.question)
        and (m.relation is None or (f.relation or SERVER) == m.relation)
    ]
    return "it said: " + ("; ".join(said) if said else "nothing there")


def _expected(f: Finding, expect: Expect) -> bool:
    if any(m.matches(f) for m in expect.must_not):
        return False
    return any(m.matches(f) for m in (*expect.must, *expect.may))


def _top_problems(top: list[tuple[Finding, Recommendation]], wanted: tuple[Top, ...]) -> list[str]:
    problems = [
        f"not acceptable: {r.sql}"
        for f, r in top
        if not any(t.match.recommendation(f, r) for t in wanted)
    ]
    problems += [
        f"not among them: {t.match.name}"
        for t in wanted
        if t.needed and not any(t.match.recommendation(f, r) for f, r in top)
    ]
    return problems


def describe(f: Finding) -> str:
    return f"[{f.severity}] {f.question} {f.relation or SERVER}: {f.title}"
