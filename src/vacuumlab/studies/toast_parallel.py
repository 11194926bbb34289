"""The TOAST study's parallel experiment: one table whose heap and TOAST relation are
vacuumed in three arms — ``sequential`` (one VACUUM of the table), ``overlapping`` (one
session vacuums the TOAST relation by name, a second the table, as in the post) and
``separate`` (the second with ``PROCESS_TOAST false``, 14+) — while a third session samples
pg_stat_activity, pg_stat_progress_vacuum and pg_locks into a timeline of who waits for whom.
See :mod:`vacuumlab.studies.toast` for why the overlapping arm waits.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import Any

from psycopg import sql

from vacuumlab.collect import probes
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.connect import Session, Timeouts, connect
from vacuumlab.pg.target import Target
from vacuumlab.records.toast import ParallelPoint, Span
from vacuumlab.records.toast_spec import ARMS, DEFAULT_TOAST_TUPLE_TARGET, PARTS, vacuum_metric
from vacuumlab.store import Metric
from vacuumlab.studies.base import SCHEMA, Progress
from vacuumlab.studies.shared import checkpoint
from vacuumlab.studies.toast_tables import (
    APPLICATION_NAME,
    Notices,
    Relation,
    build,
    relations,
    report_field,
    work_session,
)

#: The racing VACUUM sessions connect with this name: toast_waits.sql finds them by it.
RACE_APPLICATION_NAME = "vacuumlab-toast-race"
PARALLEL_TABLE = "toast_parallel"
#: The table session of the overlapping arm must wait as long as the TOAST session holds
#: the TOAST relation: that wait is what is measured.
RACE = Timeouts(statement_ms=0, lock_ms=0)
SAMPLE_INTERVAL_S = 0.02
#: A phase change is announced by a VERBOSE notice, and a wait that starts there can be
#: shorter than the interval on a small table: after each notice, sample closely for a while.
BURST_INTERVAL_S = 0.002
BURST_S = 0.04
#: How long the second session waits for the first to hold its lock before it starts anyway.
LOCK_WAIT_S = 10.0


def measure_parallel(target: Target, p: ParallelPoint, progress: Progress) -> dict[str, Metric]:
    """Prepare the table, race the arm's VACUUMs while sampling, return what was seen."""
    arm, rows, width = p.arm, p.rows, p.width
    table = sql.Identifier(SCHEMA, PARALLEL_TABLE)
    with work_session(target) as s:
        progress.message(f"loading {rows:,} rows for the parallel experiment ({arm})")
        oid = build(s, table, "extended", DEFAULT_TOAST_TUPLE_TARGET, rows, width)
        s.execute(sql.SQL("UPDATE {} SET age = age + 5").format(table))
        # The last quarter of the rows, whose values fill the end of the TOAST relation too:
        # both relations then end in empty pages that vacuum truncates (vacuumlazy.c,
        # should_attempt_truncation: at least 1/16 of the relation, REL_TRUNCATE_FRACTION).
        s.execute(sql.SQL("DELETE FROM {} WHERE id > {}").format(table, rows - rows // 4))
        before = relations(s, oid)
        if "toast" not in before:
            raise VacuumlabError(f"{SCHEMA}.{PARALLEL_TABLE} has no TOAST relation")
        checkpoint(s)
        race = _race(target, arm, table, before)
        after = relations(s, oid)
        s.execute(sql.SQL("DROP TABLE {}").format(table))
    return race.metrics(before, after)


@dataclass
class Racer:
    """One session running one VACUUM in a thread of its own."""

    role: str
    statement: sql.Composed
    text: str  # the statement as sent, kept while the connection is open
    session: Session
    notices: Notices
    pid: int = 0
    started: float | None = None
    ended: float | None = None
    error: BaseException | None = None
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name=f"vacuum-{self.role}")
        self.started = time.monotonic()
        self.thread.start()

    def _run(self) -> None:
        try:
            self.session.execute(self.statement)
        except BaseException as exc:  # handed to the main thread, which raises it
            self.error = exc
        finally:
            self.ended = time.monotonic()

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def stop(self) -> None:
        """Cancel the statement if it still runs, then wait for the thread."""
        if self.running:
            self.session.conn.cancel_safe()
        if self.thread is not None:
            self.thread.join()


def _statements(arm: str, table: sql.Identifier, toast: Relation) -> list[tuple[str, sql.Composed]]:
    """(role, VACUUM) in starting order. FREEZE and VERBOSE as in the post."""
    own_toast = sql.SQL("VACUUM (FREEZE, VERBOSE) {}").format(toast.ident)
    whole = sql.SQL("VACUUM (FREEZE, VERBOSE) {}").format(table)
    # PROCESS_TOAST false (14+): the table's VACUUM leaves its TOAST relation alone.
    heap_only = sql.SQL("VACUUM (FREEZE, VERBOSE, PROCESS_TOAST FALSE) {}").format(table)
    if arm == "sequential":
        return [("table", whole)]
    if arm == "overlapping":
        return [("toast", own_toast), ("table", whole)]
    if arm == "separate":
        return [("toast", own_toast), ("table", heap_only)]
    raise VacuumlabError(f"unknown arm {arm!r}; choose {', '.join(ARMS)}")


@dataclass(frozen=True, slots=True)
class WaitRow:
    """One racing session in one sample (toast_waits.sql)."""

    pid: int
    state: str | None
    wait_event_type: str | None
    wait_event: str | None
    phase: str | None
    vacuum_relid: int | None
    lock_mode: str | None
    lock_relid: int | None
    blocked_by: list[int]


def _race(target: Target, arm: str, table: sql.Identifier, found: Mapping[str, Relation]) -> Race:
    """Start the TOAST session, and the table session as soon as the first holds its lock on
    the TOAST relation (so "together" does not depend on thread start-up); sample both until
    they end. An interruption cancels the VACUUMs before it propagates."""
    wake = threading.Event()
    with ExitStack() as stack:
        sampler = stack.enter_context(connect(target.dsn, application_name=APPLICATION_NAME))
        racers = [
            _racer(stack, target, role, statement, wake)
            for role, statement in _statements(arm, table, found["toast"])
        ]
        origin = time.monotonic()
        try:
            samples = _run_and_sample(sampler, racers, found["toast"].oid, wake)
        finally:
            for racer in racers:
                racer.stop()
        for racer in racers:
            if racer.error is not None:
                raise racer.error
    return Race(arm, origin, racers, samples, found)


def _racer(
    stack: ExitStack, target: Target, role: str, statement: sql.Composed, wake: threading.Event
) -> Racer:
    session = stack.enter_context(work_session(target, RACE_APPLICATION_NAME, RACE))
    notices = Notices(wake)
    session.conn.add_notice_handler(notices)
    pid = session.conn.info.backend_pid  # known from the connection: no round trip
    return Racer(role, statement, statement.as_string(session.conn), session, notices, pid)


def _run_and_sample(
    sampler: Session, racers: Sequence[Racer], toast_oid: int, wake: threading.Event
) -> list[tuple[float, list[WaitRow]]]:
    for k, racer in enumerate(racers):
        racer.start()
        if k < len(racers) - 1:
            _await_lock(sampler, racer, toast_oid)
    return _sample(sampler, racers, wake)


def _await_lock(sampler: Session, racer: Racer, oid: int) -> None:
    """Until the racer holds a lock on the relation, or ends, or LOCK_WAIT_S pass."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while racer.running and time.monotonic() < deadline:
        if probes.holds_lock(sampler, racer.pid, oid):
            return
        time.sleep(0.001)


def _sample(
    sampler: Session, racers: Sequence[Racer], wake: threading.Event
) -> list[tuple[float, list[WaitRow]]]:
    """Every SAMPLE_INTERVAL_S, and every BURST_INTERVAL_S for BURST_S after a notice."""
    samples: list[tuple[float, list[WaitRow]]] = []
    pids = {r.pid for r in racers}
    burst_until = 0.0
    while any(r.running for r in racers):
        now = time.monotonic()
        rows = [row for row in sampler.fetch("toast_waits", WaitRow) if row.pid in pids]
        samples.append((now, rows))
        if wake.is_set():
            wake.clear()
            burst_until = now + BURST_S
        wake.wait(BURST_INTERVAL_S if now < burst_until else SAMPLE_INTERVAL_S)
    return samples


# -- the timeline ------------------------------------------------------------------------------


def category(row: WaitRow) -> str:
    """Lock: queued for a heavyweight lock. VacuumTruncate: retrying the AccessExclusiveLock
    that truncation needs, every 50 ms for up to 5 s (vacuumlazy.c, lazy_truncate_heap)."""
    if row.wait_event_type == "Lock":
        return "lock"
    if row.wait_event == "VacuumTruncate":
        return "truncate-wait"
    if row.phase == "truncating heap":
        return "truncating"
    return "working"


@dataclass
class Race:
    """What one arm saw: the sessions, the samples, and the relations they vacuumed."""

    arm: str
    origin: float
    racers: list[Racer]
    samples: list[tuple[float, list[WaitRow]]]
    found: Mapping[str, Relation]
    spans: list[Span] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.spans = self._spans()

    def _relation_label(self, oid: int | None) -> str | None:
        names = {rel.oid: part for part, rel in self.found.items()}
        return None if oid is None else names.get(oid, str(oid))

    def _span(self, role: str, t: float, row: WaitRow) -> Span:
        roles = {r.pid: r.role for r in self.racers}
        kind = category(row)
        waiting = kind in ("lock", "truncate-wait")
        return Span(
            session=role,
            start=t - self.origin,
            end=t - self.origin,
            category=kind,
            phase=row.phase,
            wait_event=f"{row.wait_event_type}:{row.wait_event}" if waiting else None,
            lock_mode=row.lock_mode,
            relation=self._relation_label(row.lock_relid if row.lock_mode else row.vacuum_relid),
            granted=False if row.lock_mode else None,
            blocked_by=tuple(roles.get(pid, f"pid {pid}") for pid in row.blocked_by),
        )

    def _spans(self) -> list[Span]:
        spans: list[Span] = []
        for racer in self.racers:
            spans += self._spans_of(racer)
        return spans

    def _spans_of(self, racer: Racer) -> list[Span]:
        """A state lasts from the sample that first shows it to the next sample (or to the
        end of the racer's statement): the timeline's resolution is the sampling interval."""
        spans: list[Span] = []
        open_span = False
        for t, rows in self.samples:
            if open_span:
                spans[-1] = replace(spans[-1], end=t - self.origin)
            row = next((r for r in rows if r.pid == racer.pid and r.state == "active"), None)
            if row is None:
                open_span = False
                continue
            span = self._span(racer.role, t, row)
            if open_span and _key(spans[-1]) == _key(span):
                spans[-1] = _merge(spans[-1], span)
            else:
                spans.append(span)
            open_span = True
        if open_span and racer.ended is not None:
            spans[-1] = replace(spans[-1], end=max(racer.ended - self.origin, spans[-1].end))
        return spans

    def metrics(
        self, before: Mapping[str, Relation], after: Mapping[str, Relation]
    ) -> dict[str, Metric]:
        metrics = self._times() | self._waits() | self._truncations()
        for role in ("toast", "table"):
            metrics |= self._reports(role)
        for part in PARTS:
            metrics[f"{part}_bytes_before"] = before[part].bytes if part in before else None
            metrics[f"{part}_bytes_after"] = after[part].bytes if part in after else None
            metrics[f"{part}_vacuum_truncate"] = (
                after[part].vacuum_truncate() if part in after else None
            )
        return metrics | {
            "samples": len(self.samples),
            "sample_interval_ms": SAMPLE_INTERVAL_S * 1000,
            "timeline_json": self.timeline_json(),
        }

    def _racer(self, role: str) -> Racer | None:
        return next((r for r in self.racers if r.role == role), None)

    def _times(self) -> dict[str, Metric]:
        ends = [r.ended for r in self.racers if r.ended is not None]
        metrics: dict[str, Metric] = {
            "wall_s": max(ends) - self.origin if ends else None,
            "toast_session_s": None,
            "table_session_s": None,
            "table_session_start_s": None,
        }
        for racer in self.racers:
            if racer.started is not None and racer.ended is not None:
                metrics[f"{racer.role}_session_s"] = racer.ended - racer.started
        table = self._racer("table")
        if table is not None and table.started is not None:
            metrics["table_session_start_s"] = table.started - self.origin
        return metrics

    def _waits(self) -> dict[str, Metric]:
        def total(kind: str, role: str | None = None) -> float:
            chosen = [s for s in self.spans if s.category == kind]
            return sum(s.end - s.start for s in chosen if role in (None, s.session))

        return {
            "lock_waits": sum(1 for s in self.spans if s.category == "lock"),
            "lock_wait_table_s": total("lock", "table"),
            "lock_wait_toast_s": total("lock", "toast"),
            "truncate_wait_s": total("truncate-wait"),
        }

    def _truncations(self) -> dict[str, Metric]:
        texts = [text for r in self.racers for _, text in r.notices.items]
        return {
            "truncations": sum(1 for t in texts if ": truncated " in t),
            "truncate_suspended": sum(1 for t in texts if t.startswith("suspending truncate")),
            "truncate_skipped": sum(1 for t in texts if "stopping truncate" in t),
        }

    def _reports(self, role: str) -> dict[str, Metric]:
        racer = self._racer(role)
        reports = [] if racer is None else racer.notices.reports()
        metrics: dict[str, Metric] = {}
        for part in PARTS:
            rel = self.found.get(part)
            report = None if rel is None else rel.report(reports)
            for name in ("elapsed_s", "pages_scanned", "pages_removed", "tuples_removed"):
                metrics[vacuum_metric(role, part, name)] = report_field(report, name)
        return metrics

    def timeline_json(self) -> str:
        """Sessions, spans and the notices that mark phases, as one JSON string: the store
        holds numbers and strings, and a timeline is neither."""
        timeline = {
            "arm": self.arm,
            "interval_ms": SAMPLE_INTERVAL_S * 1000,
            "samples": len(self.samples),
            "sessions": [self._session(r) for r in self.racers],
            "spans": [s.to_json() for s in self.spans],
            "notices": [n for r in self.racers for n in self._notices(r)],
        }
        return json.dumps(timeline, sort_keys=True, separators=(",", ":"))

    def _session(self, racer: Racer) -> dict[str, Any]:
        return {
            "role": racer.role,
            "pid": racer.pid,
            "statement": racer.text,
            "start": _rounded(racer.started, self.origin),
            "end": _rounded(racer.ended, self.origin),
        }

    def _notices(self, racer: Racer) -> list[dict[str, Any]]:
        return [
            {"session": racer.role, "t": _rounded(t, self.origin), "text": text.split("\n")[0]}
            for t, text in racer.notices.items
            if "vacuuming" in text or "truncate" in text
        ]


def _key(span: Span) -> tuple[object, ...]:
    """Samples with the same key make one span. A lock wait is one wait whatever each sample
    caught of it: pg_stat_activity and pg_locks are not read atomically, so a sample at its
    edge can see the wait event without the queued lock."""
    if span.category == "lock":
        return (span.category, span.wait_event)
    return (span.category, span.phase, span.wait_event, span.relation)


def _merge(span: Span, later: Span) -> Span:
    """The span with what a later sample of it adds: the lock it queues for, and everyone
    seen holding it up (pg_blocking_pids() reads empty as the holder commits)."""
    blockers = dict.fromkeys((*span.blocked_by, *later.blocked_by))
    return replace(
        span,
        lock_mode=span.lock_mode or later.lock_mode,
        relation=span.relation or later.relation,
        granted=span.granted if span.granted is not None else later.granted,
        blocked_by=tuple(blockers),
    )


def _rounded(t: float | None, origin: float) -> float | None:
    return None if t is None else round(t - origin, 4)
