"""``vacuumlab advise --verify``: advice proven on the server it was made for.

1. **Advise** as usual from two snapshots ``interval`` seconds apart, while the workload runs.
2. **Before**: the relations the applied recommendations aim at, sampled at 1 Hz for
   ``window`` seconds (:mod:`vacuumlab.collect.window`). A window of its own rather than the
   advice's interval: which relations to watch is known only once the advice is made, and
   two windows of the same length give comparable peaks and counts.
3. **Apply** every recommendation the simulator models (``advise.simulated.change_for``); the
   rest (fillfactor, session timeouts) and server settings that need a restart are skipped,
   with the reason.
4. **Settle** until each watched relation has had an autovacuum under the new settings (at
   most one window), so the after window does not start with the dead tuples the old
   settings let pile up. On a reload the launcher rebuilds its schedule for the new naptime
   (HandleAutoVacLauncherInterrupts() → rebuild_database_list() in autovacuum.c), so that
   first visit comes within one naptime as it now reads.
5. **After**: the same relations, the same way, for ``window`` seconds.
6. **Restore** every changed setting, however the run ends (an error, Ctrl-C, SIGTERM), with
   the signals held off until it is done; then read each back.

The simulator's prediction stands beside each measurement, from the advice's two snapshots,
without and with the changes: the peak dead tuples over the windows the measurement takes, so
they compare with what a window can show (without the changes, the window that starts at the
advice; with them, the one that starts once each watched relation has had its first vacuum
under them, as the after window does after settling, not the backlog the old settings left);
the vacuums per hour over a longer run (:func:`rate_seconds`), as a window shorter than the
naptime often holds no launch at all and its count of vacuums says nothing of a rate. The
forecast takes the rates to stay as measured, so the longer run asks nothing more of it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from vacuumlab import __version__
from vacuumlab.advise import advise
from vacuumlab.advise.simulated import TOAST_SUFFIX, change_for
from vacuumlab.collect.window import measure, until_vacuumed
from vacuumlab.errors import Interrupted, VacuumlabError, signals_to
from vacuumlab.lab.advice import collect_two
from vacuumlab.lab.changes import Changes, TableChange
from vacuumlab.lab.verdicts import judge
from vacuumlab.model.forecast import (
    Inputs,
    dead_between,
    first_ends,
    index_of,
    inputs,
    run,
    to_record,
)
from vacuumlab.model.simulator import Launcher
from vacuumlab.model.whatif import Change
from vacuumlab.pg.connect import connect
from vacuumlab.pg.settings import load_specs
from vacuumlab.pg.target import Target
from vacuumlab.records.advice import Advice, Finding, Recommendation
from vacuumlab.records.simulation import Simulation
from vacuumlab.records.snapshot import Relation, Snapshot
from vacuumlab.records.verification import (
    Prediction,
    SkippedChange,
    TableResult,
    Verification,
    WindowFigures,
)

Step = Callable[[str], None]
#: The fewest relations watched when only server settings were advised, with no table named.
BUSIEST = 5
#: The predicted vacuums per hour come from a simulation of at least an hour and at least this
#: many of the launcher's rounds, with or without the changes, whichever is longer.
RATE_MIN_S = 3600.0
RATE_ROUNDS = 5


class Plan:
    """Which recommendations a verification applies and which it leaves alone, and why."""

    def __init__(self, advice: Advice, later: Snapshot, restart: set[str]) -> None:
        heaps = {t.heap.qualified_name: t.heap for t in later.tables}
        self.tables: list[TableChange] = []
        self.server: list[Recommendation] = []
        self.changes: list[Change] = []
        self.pairs: list[tuple[Finding, Recommendation]] = []
        self.skipped: list[SkippedChange] = []
        seen: set[tuple[str | None, bool, str]] = set()
        for finding, rec in advice.recommendations():
            change = change_for(finding, rec)
            why = _skip_reason(change, rec, restart, heaps)
            key = (
                (None, False, rec.setting)
                if change is None
                else (change.table, change.toast, rec.setting)
            )
            if why is None and key in seen:
                why = "the same setting was already applied for this relation"
            if why is not None:
                self.skipped.append(_skipped(finding, rec, why))
                continue
            assert change is not None
            seen.add(key)
            self.pairs.append((finding, rec))
            self.changes.append(change)
            if change.table is None:
                self.server.append(rec)
            else:
                self.tables.append(TableChange(change, heaps[change.table], rec))


def _skip_reason(
    change: Change | None, rec: Recommendation, restart: set[str], heaps: dict[str, Relation]
) -> str | None:
    if change is None:
        return "not applied: the simulator does not model it, so nothing is predicted to check"
    if change.table is None and rec.setting in restart:
        return "not applied: it needs a server restart"
    if change.table is not None and change.table not in heaps:
        return "not applied: the table is not in the snapshot"
    return None


def _skipped(finding: Finding, rec: Recommendation, why: str) -> SkippedChange:
    return SkippedChange(relation=finding.relation, setting=rec.setting, sql=rec.sql, reason=why)


def verify(
    dsn: str,
    target: Target,
    *,
    interval: float,
    window: float,
    on_step: Step | None = None,
) -> Verification:
    """Advise over ``interval`` seconds, then measure, apply, measure and restore."""
    step = on_step or (lambda _text: None)
    step(f"advising over {interval:.0f} s (two snapshots)")
    first, later = collect_two(dsn, interval, application_name="vacuumlab-verify")
    advice = advise(first, later)
    with connect(dsn, application_name="vacuumlab-verify") as session:
        restart = {s.name for s in load_specs(session).values() if s.context == "postmaster"}
    plan = Plan(advice, later, restart)
    watched = _watched(plan, advice, later)
    notes: list[str] = []
    predicted = _predictions(first, later, plan.changes, window, watched, notes)
    if not plan.pairs:
        step("nothing to change that the simulator models: nothing to measure")
        notes.append("no recommendation the simulator models: nothing was changed or measured")
        return _record(advice, window, 0.0, plan, Changes(dsn, target), [], notes, restored=True)
    step(
        f"{len(plan.pairs)} change(s) to verify: {2 * window:.0f} to {3 * window:.0f} s more, "
        "keep the workload running throughout"
    )
    step(f"measuring {len(watched)} relation(s) for {window:.0f} s before any change")
    before = measure(dsn, watched.values(), window)
    changes = Changes(dsn, target)
    problems: list[str] = []
    try:
        step(f"applying {len(plan.pairs)} change(s); every one is restored at the end")
        changes.apply_tables(plan.tables)
        changes.apply_server(plan.server)
        step(f"waiting (up to {window:.0f} s) for an autovacuum of each under the new settings")
        settle = until_vacuumed(dsn, watched.values(), window)
        step(f"measuring for {window:.0f} s (after {settle:.0f} s)")
        after = measure(dsn, watched.values(), window)
    finally:
        step("restoring every changed setting")
        with _signals_held():
            problems = changes.restore()
        step(
            f"restored {len(changes.applied)} setting(s); each reads as before"
            if not problems
            else "NOT everything was restored: " + "; ".join(problems)
        )
    results = [
        TableResult(
            relation=name,
            before=before.get(relid, _EMPTY),
            after=after.get(relid, _EMPTY),
            prediction=predicted.get(name),
        )
        for name, relid in watched.items()
    ]
    notes += problems
    return _record(advice, window, settle, plan, changes, results, notes, restored=not problems)


_EMPTY = WindowFigures(
    seconds=0.0,
    samples=0,
    peak_dead=None,
    mean_dead=None,
    start_bytes=None,
    end_bytes=None,
    vacuums=None,
)


def _watched(plan: Plan, advice: Advice, later: Snapshot) -> dict[str, int]:
    """The relations to measure, by label: those the applied recommendations' findings name;
    with none named (server settings only), the busiest few by dead-tuple rate."""
    oids = _oids(later)
    names = [f.relation for f, _ in plan.pairs if f.relation is not None]
    if not names and plan.pairs:
        busiest = sorted(advice.tables, key=lambda t: -(t.dead_per_second or 0.0))
        names = [t.relation for t in busiest[:BUSIEST] if (t.dead_per_second or 0.0) > 0]
    return {name: oids[name] for name in dict.fromkeys(names) if name in oids}


def _oids(snapshot: Snapshot) -> dict[str, int]:
    """Each relation's oid by the label findings and forecasts use."""
    found = {}
    for table in snapshot.tables:
        found[table.heap.qualified_name] = table.heap.oid
        if table.toast is not None:
            found[table.heap.qualified_name + TOAST_SUFFIX] = table.toast.oid
    return found


def _predictions(
    first: Snapshot,
    later: Snapshot,
    changes: list[Change],
    window: float,
    watched: dict[str, int],
    notes: list[str],
) -> dict[str, Prediction]:
    """The simulator without and with the changes, for each watched one: the peaks over the
    windows the measurement takes, the vacuums per hour over :func:`rate_seconds`."""
    try:
        if window <= 0:
            raise VacuumlabError("the measuring window must be positive")
        runs: list[tuple[Inputs, list[Change]]] = [
            (inputs(first, later), []),
            (inputs(first, later, changes), changes),
        ]
        seconds = rate_seconds(window, *(given.launcher for given, _ in runs))
        peaks = _peaks(runs[0][0], runs[1][0], window, list(watched))
        rates = [_simulation(given, later, seconds, made) for given, made in runs]
    except VacuumlabError as exc:
        notes.append(f"no prediction: {exc}")
        return {}
    return {
        name: prediction
        for name in watched
        if (prediction := _prediction(peaks, rates, name)) is not None
    }


@dataclass(frozen=True, slots=True)
class _Peaks:
    """The predicted peaks of dead tuples over the two measured windows, by relation: without
    the changes over the window after the advice (the before window), with them over the
    window after the settling, which ends once every watched relation has had its first
    vacuum under the changes, or after one window (``until_vacuumed()``)."""

    without: dict[str, float]
    with_: dict[str, float]
    settle: float


def _peaks(plain: Inputs, changed: Inputs, window: float, names: list[str]) -> _Peaks:
    before = run(plain, window / 3600.0)
    after = run(changed, 2.0 * window / 3600.0)  # the settling takes one window at most
    old = {n: i for n in names if (i := index_of(before, n)) is not None}
    new = {n: i for n in names if (i := index_of(after, n)) is not None}
    ends = first_ends(after, list(new.values()))
    settle = max((ends.get(i, window) for i in new.values()), default=0.0)
    settle = min(settle, window)
    return _Peaks(
        {n: dead_between(before, i, 0.0, window) for n, i in old.items()},
        {n: dead_between(after, i, settle, settle + window) for n, i in new.items()},
        settle,
    )


def rate_seconds(window: float, *launchers: Launcher) -> float:
    """How long a simulation the predicted vacuums per hour come from: an hour, or
    ``RATE_ROUNDS`` launch intervals of the slowest launcher, or the window if longer."""
    rounds = max((RATE_ROUNDS * launcher.launch_every_s for launcher in launchers), default=0.0)
    return max(RATE_MIN_S, rounds, window)


def _simulation(
    given: Inputs, later: Snapshot, seconds: float, changes: list[Change]
) -> Simulation:
    hours = seconds / 3600.0
    return to_record(run(given, hours), given, later, hours=hours, changes=changes)


def _prediction(peaks: _Peaks, rates: list[Simulation], name: str) -> Prediction | None:
    """``peaks`` over the measured windows; ``rates``: without and with the changes, over
    :func:`rate_seconds`."""
    old, new = peaks.without.get(name), peaks.with_.get(name)
    old_rate, new_rate = (sim.relation(name) for sim in rates)
    if old is None or new is None or old_rate is None or new_rate is None:
        return None
    hours = rates[0].hours
    return Prediction(
        peak_dead_without=round(old),
        peak_dead_with=round(new),
        vacuums_per_hour_without=old_rate.vacuums / hours,
        vacuums_per_hour_with=new_rate.vacuums / hours,
        rates_over_s=hours * 3600.0,
        settle_s=peaks.settle,
    )


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done (a restore must not be cut short), then
    interrupt as they would have."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, _frame: object) -> None:
        caught.append(signum)

    with signals_to(hold):
        yield
    if caught:
        raise Interrupted(signal.Signals(caught[0]).name)


def _record(
    advice: Advice,
    window: float,
    settle: float,
    plan: Plan,
    changes: Changes,
    results: list[TableResult],
    notes: list[str],
    *,
    restored: bool,
) -> Verification:
    measured = {r.relation: (r.relation, r.before, r.after) for r in results}
    outcomes = []
    for finding, rec in plan.pairs:
        change = change_for(finding, rec)
        assert change is not None
        on = [measured[finding.relation]] if finding.relation in measured else []
        if finding.relation is None:
            on = list(measured.values())
        outcomes.append(judge(rec.setting, rec.value, finding.relation, on))
    return Verification(
        vacuumlab_version=__version__,
        advice=advice,
        window_s=window,
        settle_s=settle,
        applied=changes.applied,
        skipped=plan.skipped,
        tables=results,
        outcomes=outcomes,
        restored=restored,
        finished_at=datetime.now(UTC),
        notes=notes,
    )
