"""The advisor: per table, where autovacuum stands and what to change, with the evidence.

Advising is pure: it works on snapshots (records) only, so ``--input`` can advise from saved
ones with no server. Collecting them lives in :mod:`vacuumlab.lab.advice`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import cast

from vacuumlab import __version__
from vacuumlab.advise import idle, partitions, simulated
from vacuumlab.advise.context import Context
from vacuumlab.advise.table_status import table_statuses
from vacuumlab.memory import collector_paused
from vacuumlab.model import forecast
from vacuumlab.records.advice import QUESTIONS, Advice, Finding, Recommendation
from vacuumlab.records.snapshot import ProbeNote, Snapshot

Question = Callable[[Context], list[Finding]]


def questions() -> list[tuple[str, Question]]:
    """Each question's module (``vacuumlab.advise.<question>``) and its ``findings``."""
    found = []
    for name in QUESTIONS:
        module = importlib.import_module(f"vacuumlab.advise.{name}")
        found.append((name, cast(Question, module.findings)))
    return found


def advise(snapshot: Snapshot, later: Snapshot | None = None, *, every: bool = False) -> Advice:
    """Answer every question from one snapshot, or two taken some time apart; bloat is
    measured where the later (or only) one carries ``--exact`` figures. The status table
    counts the quiet relations rather than list them, unless ``every``."""
    with collector_paused():
        return _advise(context(snapshot, later, every=every), every=every)


def advise_simulated(snapshot: Snapshot, later: Snapshot) -> tuple[Advice, forecast.Inputs | None]:
    """``advise(snapshot, later)``, and the simulator's inputs it built for the server as it
    is (None where the snapshots give none): ``advise --all-databases`` simulates every
    database together from them rather than building each database's again."""
    with collector_paused():
        ctx = context(snapshot, later)
        advice = _advise(ctx)
        run = simulated.base(ctx)
        return advice, None if run is None else run.inputs


def context(snapshot: Snapshot, later: Snapshot | None = None, *, every: bool = False) -> Context:
    """The questions' context, the idle tables set aside (advise/idle.py) unless ``every``."""
    ctx = Context(snapshot, later)
    if not every:
        idle.set_aside(ctx)
    return ctx


def _advise(ctx: Context, *, every: bool = False) -> Advice:
    findings: list[Finding] = []
    for _name, question in questions():
        findings.extend(question(ctx))
    order = {"critical": 0, "warning": 1, "info": 2}
    findings.sort(
        key=lambda f: (order[f.severity], -max((r.impact for r in f.recommendations), default=0))
    )
    findings = simulated.annotate(ctx, without_moot(once_per_setting(findings)))
    tables, quiet = table_statuses(ctx, every=every)
    notes = list(ctx.now.notes)
    if skipped := simulated.unsimulated(ctx, findings):
        notes.append(
            ProbeNote(
                probe="simulation",
                reason=f"{skipped:,} recommendation{'s' if skipped != 1 else ''} after the "
                f"first {simulated.MAX_WHATIFS} not simulated: each what-if runs the whole "
                "server",
                fix="apply the first ones, then advise again",
            )
        )
    return Advice(
        vacuumlab_version=__version__,
        taken_at=ctx.now.taken_at,
        interval_s=ctx.seconds,
        server=ctx.now.server,
        exact=ctx.exact_probed,
        findings=findings,
        tables=tables,
        quiet=quiet,
        partitioned=partitions.statuses(ctx),
        notes=notes,
    )


def once_per_setting(findings: list[Finding]) -> list[Finding]:
    """One recommendation per setting however many findings lead to it (a server setting
    once, a table's setting once per table): it stays with the first (most severe) finding,
    the later ones keep their evidence without repeating it."""
    seen: set[str] = set()
    kept = []
    for finding in findings:
        fresh = [r for r in finding.recommendations if _key(r) not in seen]
        seen.update(_key(r) for r in fresh)
        if len(fresh) < len(finding.recommendations):
            finding = finding.model_copy(update={"recommendations": fresh})
        kept.append(finding)
    return kept


def _key(rec: Recommendation) -> str:
    """A server setting once; a table's (or its TOAST relation's) setting once per table,
    whatever value each finding would give it."""
    if rec.scope == "server":
        return rec.setting
    return f"{rec.scope}:{rec.target or rec.sql}:{rec.setting}"


def without_moot(findings: list[Finding]) -> list[Finding]:
    """No cost limit where the same advice turns the cost delay off: with a delay of 0
    vacuum_delay_point() never sleeps, so the limit changes nothing."""
    unthrottled = {
        _where(r)
        for f in findings
        for r in f.recommendations
        if r.setting == "autovacuum_vacuum_cost_delay" and _is_zero(r.value)
    }
    if not unthrottled:
        return findings
    kept = []
    for finding in findings:
        recs = [
            r
            for r in finding.recommendations
            if not (r.setting == "autovacuum_vacuum_cost_limit" and _where(r) in unthrottled)
        ]
        if len(recs) < len(finding.recommendations):
            finding = finding.model_copy(update={"recommendations": recs})
        kept.append(finding)
    return kept


def _where(rec: Recommendation) -> tuple[str, str | None]:
    return rec.scope, rec.target


def _is_zero(value: str) -> bool:
    try:
        return float(value.removesuffix("ms")) == 0
    except ValueError:
        return False


__all__ = ["Advice", "advise", "questions"]
