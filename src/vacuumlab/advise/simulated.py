"""Every recommendation simulated before and after: the launcher and workers run over the next
hours with the server as it is, then with the change, and the recommendation says what moved
("simulated over 6 h: vacuumed every 1.0 min instead of 6.0 min, peak 13k dead tuples instead
of 109k").

Only with two snapshots (the rates); only for settings the simulator reads
(:func:`simulated`), each recommendation turned into the what-if the simulator runs by
:func:`change_for` (a ``model.whatif.Change``; ``advise --verify`` applies the same ones).
The base run is shared by every recommendation and by the timing and workers questions
(``ctx.memo``).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cached_property
from typing import cast

from vacuumlab.advise.context import Context
from vacuumlab.errors import VacuumlabError
from vacuumlab.model import forecast
from vacuumlab.model.knobs import knob
from vacuumlab.model.simulator import Outcome, Tally
from vacuumlab.model.whatif import Change
from vacuumlab.records.advice import Finding, Recommendation
from vacuumlab.units import count, duration

#: How a finding names a table's TOAST relation.
TOAST_SUFFIX = " (TOAST)"
#: Settings the simulator reads, beyond every autovacuum_* one.
_ALSO_SIMULATED = frozenset(
    {"track_counts", "vacuum_cost_limit", "vacuum_cost_delay", "vacuum_freeze_min_age"}
)


def simulated(setting: str) -> bool:
    return setting.startswith("autovacuum") or setting in _ALSO_SIMULATED


def change_for(finding: Finding, rec: Recommendation) -> Change | None:
    """The change ``rec`` makes, in the setting's base unit; None for one the simulator does
    not model (fillfactor, a session timeout) or one without a table to put it on."""
    if not simulated(rec.setting):
        return None
    if rec.scope == "server":
        return Change(rec.setting, knob(rec.setting).in_base_unit(rec.value))
    table = rec.target or (finding.relation or "").removesuffix(TOAST_SUFFIX)
    if not table:
        return None
    return Change(rec.setting, rec.value, table=table, toast=rec.scope == "toast")


#: How far ahead the advisor simulates.
HOURS = 6.0
#: The relation a server-wide change is judged by, when its finding names none: the one with
#: the highest simulated peak of dead tuples.
_KEY = "simulation"


@dataclass(frozen=True)
class Run:
    inputs: forecast.Inputs
    outcome: Outcome

    @cached_property
    def _by_label(self) -> dict[str, Tally]:
        # Looked up once per timing finding and recommendation: a scan each would be
        # quadratic in relations.
        return {
            s.label: t for s, t in zip(self.outcome.subjects, self.outcome.tallies, strict=True)
        }

    def tally(self, label: str) -> Tally | None:
        return self._by_label.get(label)

    def busiest(self) -> str | None:
        pairs = zip(self.outcome.subjects, self.outcome.tallies, strict=True)
        best = max(pairs, key=lambda pair: pair[1].peak_dead, default=None)
        return best[0].label if best is not None and best[1].peak_dead > 0 else None


def base(ctx: Context) -> Run | None:
    """The server as it is, simulated over ``HOURS``; None without two snapshots."""
    if _KEY not in ctx.memo:
        ctx.memo[_KEY] = _base(ctx)
    return cast(Run | None, ctx.memo[_KEY])


def _base(ctx: Context) -> Run | None:
    if ctx.later is None or not ctx.seconds or ctx.seconds <= 0:
        return None
    try:
        given = forecast.inputs(ctx.snapshot, ctx.later)
    except VacuumlabError:
        return None
    return Run(given, forecast.run(given, HOURS))


#: What-if runs per advice at most, the first recommendations (most severe, most impact)
#: first: each runs the whole server over ``HOURS``, so their time grows with relations times
#: recommendations. At 10,000 tables with 7,500 relations changing, a run took about 6 s, and
#: 50 recommendations would have taken 5 minutes.
MAX_WHATIFS = 10


def annotate(ctx: Context, findings: list[Finding]) -> list[Finding]:
    """The timing and workers findings with the simulation's answer, and each recommendation
    the simulator can run (the first ``MAX_WHATIFS``) with what it predicts."""
    before = base(ctx)
    if before is None:
        return findings
    done = []
    left = [MAX_WHATIFS]
    for finding in findings:
        finding = _answered(before, finding)
        recs = [_with_effect(ctx, before, finding, rec, left) for rec in finding.recommendations]
        if recs != finding.recommendations:
            finding = finding.model_copy(update={"recommendations": recs})
        done.append(finding)
    return done


def unsimulated(ctx: Context, findings: list[Finding]) -> int:
    """Recommendations the simulator could have run but did not: past ``MAX_WHATIFS``."""
    if base(ctx) is None:
        return 0
    runnable = sum(1 for f in findings for r in f.recommendations if change_for(f, r) is not None)
    return max(runnable - MAX_WHATIFS, 0)


def _with_effect(
    ctx: Context, before: Run, finding: Finding, rec: Recommendation, left: list[int]
) -> Recommendation:
    change = change_for(finding, rec)
    if change is None or ctx.later is None or left[0] <= 0:
        return rec
    left[0] -= 1
    try:
        given = before.inputs.with_tables_changed([change]) or forecast.inputs(
            ctx.snapshot, ctx.later, [change]
        )
    except VacuumlabError:
        return rec
    after = Run(given, forecast.run(given, HOURS))
    label = finding.relation or rec.target or before.busiest()
    if label is None:
        return rec
    text = effect(label, before.tally(label), after.tally(label))
    return rec.model_copy(update={"simulated": text}) if text else rec


def effect(label: str, before: Tally | None, after: Tally | None) -> str | None:
    """What the change does to one relation, in the words of the recommendation."""
    if before is None or after is None:
        return None
    often, was = _often(after), _often(before)
    parts = [f"vacuumed {often} instead of {was}" if often != was else f"still vacuumed {was}"]
    peak, was_peak = count(after.peak_dead), count(before.peak_dead)
    if peak != was_peak:
        parts.append(f"peak {peak} dead tuples instead of {was_peak}")
    else:
        parts.append(f"the same peak of {peak} dead tuples")
    if before.vacuums and after.vacuums:
        wait_before = before.waited / before.vacuums
        wait_after = after.waited / after.vacuums
        if abs(wait_after - wait_before) >= 1:
            waits = f"{duration(wait_after)} instead of {duration(wait_before)}"
            parts.append(f"waiting {waits} past its threshold")
    return f"simulated over {HOURS:g} h, {label}: " + ", ".join(parts)


def _often(tally: Tally) -> str:
    every = tally.mean_interval
    if every is None:
        return "once" if tally.vacuums == 1 else "never"
    return f"every {duration(every)}"


def _answered(run: Run, finding: Finding) -> Finding:
    """A timing finding gains what the simulation says of its relation; the workers finding
    what it says of the workers."""
    if finding.question == "timing" and finding.relation is not None:
        tally = run.tally(finding.relation)
        if tally is None or not tally.vacuums:
            return finding
        wait = tally.waited / tally.vacuums
        text = (
            f" Simulated over {HOURS:g} h: vacuumed {_often(tally)}, each taking "
            f"{duration(statistics.fmean(tally.durations))}, with a peak of "
            f"{count(tally.peak_dead)} dead tuples and {duration(wait)} past its threshold "
            "before a worker starts on it, on average."
        )
        evidence = {
            "simulated_vacuums": tally.vacuums,
            "simulated_peak_dead": round(tally.peak_dead),
            "simulated_wait_s": round(wait, 1),
        }
        return _with(finding, text, evidence)
    if finding.question == "workers" and "autovacuum workers busy" in finding.title:
        share = run.outcome.busy_share(run.inputs.launcher.workers)
        late = waits(run)
        text = (
            f" Simulated over {HOURS:g} h: the workers are busy {share:.0%} of the time; "
            f"{len(late.for_a_slot) + len(late.with_slots_free)} relations wait past their "
            "threshold longer than the launcher's round on average."
            + _listed(late.for_a_slot, "Waiting while every slot is busy, which more workers "
                      "would shorten:")
            + _listed(late.with_slots_free, "Waiting with a slot free, for the launcher's next "
                      "worker (one per database every autovacuum_naptime) or behind other "
                      "relations' vacuums in a worker's list, which more workers would not "
                      "shorten:")
        )  # fmt: skip
        evidence = {
            "simulated_busy_share": round(share, 3),
            "simulated_waiting": len(late.for_a_slot) + len(late.with_slots_free),
            "simulated_waiting_for_a_slot": len(late.for_a_slot),
            "simulated_waiting_with_slots_free": len(late.with_slots_free),
        }
        return _with(finding, text, evidence)
    return finding


def _listed(labels: list[str], lead: str) -> str:
    if not labels:
        return ""
    return f" {lead} {', '.join(labels[:3])}{' …' if len(labels) > 3 else ''}."


def _with(finding: Finding, text: str, evidence: dict[str, int | float]) -> Finding:
    return finding.model_copy(
        update={"detail": finding.detail + text, "evidence": {**finding.evidence, **evidence}}
    )


@dataclass(frozen=True, slots=True)
class Waits:
    """The relations whose mean wait past their threshold is longer than a launch interval,
    by what they waited for."""

    for_a_slot: list[str]  # mostly while every worker slot was busy
    with_slots_free: list[str]  # mostly with a slot free: the launcher's pace, the list order


def waits(run: Run) -> Waits:
    """A wait longer than the launcher's round is not always a wait for a slot: the launcher
    starts one worker per database per naptime, and each goes through its list in order, so
    a relation behind two long vacuums waits two naptimes with slots free
    (launcher_determine_sleep(), do_autovacuum() in autovacuum.c). The simulation counts the
    seconds of each wait during which every slot was busy (Tally.waited_full)."""
    every = run.inputs.launcher.launch_every_s
    slot: list[str] = []
    free: list[str] = []
    for s, t in zip(run.outcome.subjects, run.outcome.tallies, strict=True):
        if t.vacuums and t.waited / t.vacuums > every:
            (slot if t.waited_full >= t.waited / 2 else free).append(s.label)
    return Waits(slot, free)
