"""The toast report's parallel experiment: what each arm ran, who waited for whom, whether the
relations were truncated, and what the arms show side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vacuumlab.records.toast_spec import vacuum_metric
from vacuumlab.report.common import Cell, count
from vacuumlab.report.page import median, stat
from vacuumlab.report.toast.data import Data, Rep
from vacuumlab.report.toast.formats import TableRow, cell, seconds
from vacuumlab.report.toast.timeline import ARM_TITLES, ROLE_NAMES, Timeline, waits


@dataclass(frozen=True, slots=True)
class ArmView:
    """One arm of the parallel experiment: what happened, in a sentence, and its figures."""

    arm: str
    title: str
    statements: tuple[tuple[str, str], ...]  # (session, the VACUUM it ran)
    sentences: tuple[str, ...]
    row: TableRow


def _lock_sentence(timeline: Timeline) -> str | None:
    """Who waited for whom: the longest lock wait of each waiting session."""
    found = waits(timeline)
    if not found:
        return None
    parts = []
    for session in dict.fromkeys(s.session for s in found):
        mine = [s for s in found if s.session == session]
        longest = max(mine, key=lambda s: s.end - s.start)
        total = sum(s.end - s.start for s in mine)
        holders = ", ".join(ROLE_NAMES.get(b, b) for b in longest.blocked_by) or "another session"
        relation = {"toast": "the TOAST relation", "heap": "the table"}.get(
            longest.relation or "", longest.relation or "a relation"
        )
        parts.append(
            f"the {ROLE_NAMES.get(session, session)} waited {seconds(total)} s (sampled, from "
            f"{seconds(longest.start)} s to {seconds(longest.end)} s) for a "
            f"{longest.lock_mode or 'lock'} on {relation}, held by the {holders}"
        )
    return "In the first repetition " + "; ".join(parts) + "."


def _truncation_sentence(timeline: Timeline) -> str:
    truncated = [(r, t, x) for r, t, x in timeline.notices if ": truncated " in x]
    skipped = [(r, t, x) for r, t, x in timeline.notices if "stopping truncate" in x]
    if skipped:
        who = ", ".join(sorted({ROLE_NAMES.get(r, r) for r, _, _ in skipped}))
        return (
            f"Truncation was skipped: the {who} gave up "
            "(\u201cstopping truncate due to conflicting lock request\u201d)."
        )
    if not truncated:
        return "No relation was truncated."
    done = "; ".join(f"{ROLE_NAMES.get(r, r)}: {x.split(': ', 1)[-1]}" for r, _, x in truncated)
    return f"Truncation was not skipped ({done})."


def _arm_sentences(timeline: Timeline | None) -> tuple[str, ...]:
    if timeline is None:
        return ("No timeline is recorded for this arm.",)
    lock = _lock_sentence(timeline)
    if lock is None:
        lock = (
            "Neither session was sampled waiting for a lock held by the other."
            if len(timeline.extents) > 1
            else "One session: nobody to wait for."
        )
    return (lock, _truncation_sentence(timeline))


def _arm_row(arm: str, group: Sequence[Rep]) -> TableRow:
    waited = sum(1 for o in group if (o.get("lock_waits") or 0) > 0)
    cells = (
        cell(stat(group, "wall_s"), seconds),
        cell(stat(group, "toast_session_s"), seconds),
        cell(stat(group, "table_session_s"), seconds),
        cell(stat(group, "lock_wait_table_s"), seconds),
        Cell(f"{waited} of {len(group)}"),
        cell(stat(group, vacuum_metric("toast", "toast", "pages_removed")), count),
        cell(stat(group, vacuum_metric("table", "toast", "pages_removed")), count),
        cell(stat(group, vacuum_metric("table", "heap", "pages_removed")), count),
        cell(stat(group, "truncate_skipped"), count),
    )
    return TableRow((arm,), cells)


def _statements(timeline: Timeline | None) -> tuple[tuple[str, str], ...]:
    if timeline is None:
        return ()
    return tuple(
        (ROLE_NAMES.get(role, role), timeline.statements[role])
        for role in ("toast", "table")
        if role in timeline.statements
    )


def arms(data: Data, timelines: Mapping[str, Timeline]) -> list[ArmView]:
    views = []
    for arm, group in data.parallel.items():
        timeline = timelines.get(arm)
        views.append(
            ArmView(
                arm,
                ARM_TITLES[arm],
                _statements(timeline),
                _arm_sentences(timeline),
                _arm_row(arm, group),
            )
        )
    return views


def parallel_note(data: Data, timelines: Mapping[str, Timeline]) -> list[str]:
    notes: list[str] = []
    walls = {a: median(stat(g, "wall_s")) for a, g in data.parallel.items()}
    seq, sep = walls.get("sequential"), walls.get("separate")
    if seq is not None and sep is not None:
        separate = data.parallel["separate"]
        shorter = [median(stat(separate, f"{r}_session_s")) for r in ("table", "toast")]
        notes.append(
            "Side by side, with PROCESS_TOAST false, the two VACUUMs finished in "
            f"{seconds(sep)} s, against {seconds(seq)} s for one VACUUM doing the heap and then "
            "the TOAST relation. Side by side saves at most the shorter of the two: here the "
            f"table session took {seconds(shorter[0])} s and the TOAST session "
            f"{seconds(shorter[1])} s."
        )
    overlapping = timelines.get("overlapping")
    if overlapping is not None and waits(overlapping):
        notes.append(
            "A table's VACUUM takes a ShareUpdateExclusiveLock on its TOAST relation when it "
            "gets there (vacuum.c, vacuum_rel), and that lock conflicts with itself: so the table "
            "session, done with the heap, queues behind the TOAST session until it commits. "
            "That is the post's wait."
        )
        if not any("stopping truncate" in x for _, _, x in overlapping.notices):
            notes.append(
                "Unlike the post, the TOAST session still truncated its relation while the table "
                "session was queued: on the server of this run a conditional lock request "
                "from a backend that already holds a lock the queued waiter needs is granted at "
                "once, ahead of that waiter (proc.c, JoinWaitQueue). The post's older server "
                "refused it, retried for 5 s (VACUUM_TRUNCATE_LOCK_TIMEOUT) and gave up."
            )
    return notes
