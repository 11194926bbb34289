"""A relation inside the simulation's loop (:class:`_Rel`), a worker (:class:`_Worker`), and
when a relation next passes a threshold (:func:`_crossing`)."""

from __future__ import annotations

import math
from typing import Protocol

from vacuumlab.model.simulator.records import Launcher, Subject, Tally


class _Thresholds(Protocol):
    """What :func:`_crossing` reads: a subject as given, or a relation in the loop."""

    @property
    def enabled(self) -> bool: ...
    @property
    def vacuum_base(self) -> float: ...
    @property
    def vacuum_scale(self) -> float: ...
    @property
    def vacuum_cap(self) -> float | None: ...
    @property
    def insert_base(self) -> float | None: ...
    @property
    def insert_scale(self) -> float: ...
    @property
    def unfrozen(self) -> float: ...
    @property
    def xid_limit(self) -> float: ...
    @property
    def dead_per_second(self) -> float: ...
    @property
    def inserts_per_second(self) -> float: ...
    @property
    def reltuples(self) -> float: ...
    @property
    def dead(self) -> float: ...
    @property
    def inserted(self) -> float: ...
    @property
    def xid_age(self) -> float: ...
    @property
    def mxid_age(self) -> float: ...
    @property
    def mxid_limit(self) -> float: ...


class _Rel:
    """One relation inside the loop: what it needs of its subject, its counters (as of
    ``since``), the vacuum on it (a relation has at most one) and its tally, in one object so
    the loop reads each with one attribute lookup. Built only for relations that pass a
    threshold within the window: the others never get a worker."""

    __slots__ = (
        "aggressive_age", "balanced", "base_pages", "changes", "changes_per_second", "counted",
        "dead", "dead_per_second", "delay_ms", "due_at", "durations", "enabled", "failsafe_age",
        "forced", "freeze_min_age", "frozen", "index", "index_pages", "indexed", "insert_base",
        "insert_scale", "inserted", "inserts_per_second", "last_end", "listed", "live_per_second",
        "max_wait", "mxid_age", "mxid_aggressive_age", "mxid_failsafe_age", "mxid_freeze_min_age",
        "mxid_limit", "next_bucket", "next_due", "next_seq", "own_limit", "page_dirty", "page_hit",
        "peak_dead", "per_page", "reltuples", "reltuples_then", "running", "since", "starts",
        "unfrozen", "v_advances", "v_at", "v_cost", "v_done", "v_forced", "v_nosleep", "v_speed",
        "v_start", "v_version", "v_work", "v_worker", "vacuum_base", "vacuum_cap", "vacuum_scale",
        "vacuums", "visible", "waited", "waited_full", "xid_age", "xid_limit",
    )  # fmt: skip

    def __init__(self, index: int, s: Subject, launcher: Launcher) -> None:
        self.index = index
        self.enabled = s.enabled
        self.vacuum_base, self.vacuum_scale, self.vacuum_cap = (
            s.vacuum_base, s.vacuum_scale, s.vacuum_cap
        )  # fmt: skip
        self.insert_base, self.insert_scale, self.unfrozen = (
            s.insert_base, s.insert_scale, s.unfrozen
        )  # fmt: skip
        self.dead_per_second = s.dead_per_second
        self.inserts_per_second = s.inserts_per_second
        # Rows updated or deleted (dead tuples) clear visibility-map bits where they are; the
        # inserts fill new pages, or free space where the new ones cannot hold them.
        self.changes_per_second = s.dead_per_second
        self.live_per_second = s.live_per_second
        self.xid_limit = s.xid_limit
        self.mxid_limit = s.mxid_limit
        self.mxid_aggressive_age = s.mxid_aggressive_age
        self.mxid_freeze_min_age = s.mxid_freeze_min_age
        self.mxid_failsafe_age = s.mxid_failsafe_age
        self.aggressive_age = s.aggressive_age
        self.freeze_min_age = s.freeze_min_age
        self.failsafe_age = s.failsafe_age
        self.base_pages = s.pages if s.pages > 1.0 else 1.0
        self.reltuples_then = s.reltuples
        self.index_pages = s.index_pages
        self.indexed = bool(s.n_indexes) and s.index_pages > 0
        self.page_hit = s.page_hit
        self.page_dirty = s.page_dirty
        self.balanced = s.balanced
        self.delay_ms = launcher.cost_delay_ms if s.own_delay_ms is None else s.own_delay_ms
        self.own_limit = s.own_limit or launcher.cost_limit
        self.dead = s.dead
        self.inserted = s.inserted
        self.xid_age = s.xid_age
        self.mxid_age = s.mxid_age
        self.reltuples = s.reltuples
        self.visible = s.all_visible  # all-visible pages when ``changes`` started counting
        self.frozen = min(s.all_frozen, s.all_visible)  # of those, all-frozen
        self.counted = s.pages if s.counted_pages is None else s.counted_pages  # pages then
        self.changes = s.touched  # rows updated or deleted since then
        self.per_page = s.tuples_per_page
        self.since = 0.0
        self.due_at: float | None = None  # when it passed a threshold; None while it needs none
        self.last_end: float | None = None  # when its last simulated vacuum ended
        self.running = False
        self.listed = False  # in the launcher's list of due relations (it may be done by now)
        # When it passes a threshold next, if within the window: the moment, the place in the
        # order of events, and the launch interval it falls in (-1: never, or noted already).
        self.next_due = 0.0
        self.next_seq = 0
        self.next_bucket = -1
        # The vacuum in progress: its start, unthrottled seconds, the cost units throttling
        # turns into sleep, the share done as of ``v_at`` and the share done per second.
        self.v_worker: _Worker | None = None
        self.v_start = self.v_work = self.v_cost = self.v_done = self.v_at = self.v_speed = 0.0
        self.v_forced = self.v_nosleep = self.v_advances = False
        self.v_version = 0  # the sequence number of the end event in force (0: none)
        self.vacuums = self.forced = 0
        self.starts: list[float] = []
        self.durations: list[float] = []
        self.peak_dead = s.dead
        self.waited = self.max_wait = self.waited_full = 0.0

    def advance(self, at: float, xids_per_second: float, mxids_per_second: float) -> None:
        """Bring the counters forward to ``at``."""
        elapsed = at - self.since
        if elapsed <= 0:
            return
        self.dead += self.dead_per_second * elapsed
        self.inserted += self.inserts_per_second * elapsed
        self.changes += self.changes_per_second * elapsed
        self.xid_age += xids_per_second * elapsed
        self.mxid_age += mxids_per_second * elapsed
        if self.live_per_second:
            reltuples = self.reltuples + self.live_per_second * elapsed
            self.reltuples = 0.0 if reltuples < 0.0 else reltuples
        self.since = at

    def pages(self) -> float:
        """Heap pages now: the table grows and shrinks with reltuples."""
        pages, then, now = self.base_pages, self.reltuples_then, self.reltuples
        if then > 0 and now != then and now > 0:
            pages = pages * now / then
            if pages < 1.0:
                pages = 1.0
        return pages

    def tally(self) -> Tally:
        return Tally(
            self.vacuums, self.forced, self.starts, self.durations, self.peak_dead, self.waited,
            self.max_wait, self.waited_full,
        )  # fmt: skip


class _Worker:
    __slots__ = ("position", "slot", "todo")

    def __init__(self, slot: int, todo: list[_Rel]) -> None:
        self.slot = slot
        self.todo = todo  # the relations that needed a vacuum when it started, in order
        self.position = 0


def _crossing(
    r: _Thresholds, since: float, xids_per_second: float, mxids_per_second: float
) -> float:
    """The moment a relation next needs a vacuum (relation_needs_vacanalyze()), from its
    counters as of ``since``: past its vacuum or insert threshold while they apply, or past its
    freeze limit; inf if never. Written out: it runs once per simulated vacuum."""
    xid_age, mxid_age = r.xid_age, r.mxid_age
    if xid_age > r.xid_limit or mxid_age > r.mxid_limit:
        return since
    when = math.inf
    if xids_per_second > 0:
        when = since + (r.xid_limit - xid_age) / xids_per_second
    if mxids_per_second > 0:
        at = since + (r.mxid_limit - mxid_age) / mxids_per_second
        if at < when:
            when = at
    if r.enabled:
        threshold = r.vacuum_base + r.vacuum_scale * r.reltuples
        if r.vacuum_cap is not None and r.vacuum_cap < threshold:
            threshold = r.vacuum_cap
        dead = r.dead
        if dead > threshold:
            return since
        if r.dead_per_second > 0:
            at = since + (threshold - dead) / r.dead_per_second
            if at < when:
                when = at
        if r.insert_base is not None:
            limit = r.insert_base + r.insert_scale * r.reltuples * r.unfrozen
            inserted = r.inserted
            if inserted > limit:
                return since
            if r.inserts_per_second > 0:
                at = since + (limit - inserted) / r.inserts_per_second
                if at < when:
                    when = at
    return when
