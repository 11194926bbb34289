"""The simulation's event loop: :class:`Simulator` runs it, :class:`_Loop` handles its events,
one method each (a launcher's visit, a worker taking its next relation, a vacuum's start and
end, a re-split of the cost limit)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from heapq import heappop, heappush
from operator import attrgetter

from vacuumlab.model.simulator.cost import _vacuum_cost, skips_unfrozen
from vacuumlab.model.simulator.records import (
    Launcher,
    Outcome,
    Spans,
    Subject,
    Tally,
    dead_after_vacuum,
)
from vacuumlab.model.simulator.relation import _crossing, _Rel, _Worker

_INDEX = attrgetter("index")


def _listed_order(s: Subject) -> tuple[bool, int, int]:
    """Heaps before TOAST relations, each in pg_class's physical order (by oid for
    subjects without a position)."""
    return s.is_toast, s.order if s.position is None else s.position, s.order


class Simulator:
    """Runs ``subjects`` under ``launcher`` for ``seconds``; :meth:`run` returns the outcome.

    The loop is written for speed (a simulated day of a large fleet holds tens of thousands of
    vacuums): its state lives in one :class:`_Loop` with slots, each relation's fixed values
    are read once into a :class:`_Rel`, and the records are built at the end.

    Events are ordered by time, then by when they were scheduled (a sequence number). The ends
    of vacuums and the launches go through a heap. The moment a relation passes a threshold
    does not: it is noted on the relation (``next_due``, ``next_seq``) and in a bucket per
    launch interval, and takes effect where something looks at it, as if it had been an event:
    when a launch builds its list (every bucket up to the launch) and when a worker rechecks a
    relation on its list."""

    def __init__(self, subjects: list[Subject], launcher: Launcher, seconds: float) -> None:
        self.subjects = sorted(subjects, key=_listed_order)
        self.launcher = launcher
        self.end = seconds

    def run(self) -> Outcome:
        loop = self._loop(first_starts=False)
        return Outcome(self.subjects, self._tallies(loop.rels), loop.spans, loop.launches, self.end)

    def first_starts(self) -> dict[int, float]:
        """The start of each relation's first vacuum that ends within the window, by its
        subject's ``order``; the relations with none are left out. The loop stops once every
        relation in it has had one: events are handled in time order, so nothing later moves
        a first start (run()'s tallies give the same starts, at the cost of the whole window:
        at 10,000 tables a live view's simulation of the hour ahead took a tenth of what
        that did, 200 relations vacuumed 19 times each)."""
        loop = self._loop(first_starts=True)
        subjects = self.subjects
        return {subjects[r.index].order: r.starts[0] for r in loop.rels if r.starts}

    def _loop(self, *, first_starts: bool) -> _Loop:
        """The events of the window, handled in order; with ``first_starts``, only until
        every relation in the loop has finished a vacuum."""
        every = self.launcher.launch_every_s
        buckets: dict[int, list[_Rel]] = {}
        loop = _Loop(self.launcher, self.end, self._relations(buckets, every), buckets)
        loop.run(first_starts=first_starts)
        return loop

    def _relations(self, buckets: dict[int, list[_Rel]], every: float) -> list[_Rel]:
        """The relations that pass a threshold within the window, each noted in the bucket of
        the moment it does (their sequence numbers follow pg_class order)."""
        launcher, end = self.launcher, self.end
        xps, mxps = launcher.xids_per_second, launcher.mxids_per_second
        rels = []
        for index, s in enumerate(self.subjects):
            when = _crossing(s, 0.0, xps, mxps)
            if when <= end:
                r = _Rel(index, s, launcher)
                rels.append(r)
                r.next_due = when = when if when > 0.0 else 0.0
                r.next_seq = len(rels)
                r.next_bucket = k = int(when / every)
                buckets.setdefault(k, []).append(r)
        return rels

    def _tallies(self, rels: list[_Rel]) -> dict[int, Tally]:
        """The tallies of the relations in the loop, their dead tuples brought forward to the
        end of the window."""
        end, xps, mxps = self.end, self.launcher.xids_per_second, self.launcher.mxids_per_second
        tallies = {}
        for r in rels:
            r.advance(end, xps, mxps)
            r.peak_dead = max(r.peak_dead, r.dead)
            tallies[r.index] = r.tally()
        return tallies


class _Loop:
    """The state of one run through the window's events, and a handler for each.

    Two kinds of event go through the heap: a launch (the launcher sends a worker,
    :meth:`launch`) and the end of a vacuum (:meth:`finish`). Between them a worker takes the
    next relation on its list (:meth:`next_table`) and starts vacuuming it
    (:meth:`start_vacuum`); a vacuum that starts or ends among balanced workers re-splits the
    cost limit (:meth:`rebalance`), which moves the others' ends (:meth:`reschedule`)."""

    __slots__ = (
        "advances", "buckets", "cost_limit", "current", "danger_at", "drained", "due", "end",
        "events", "every", "free", "full_at", "full_now", "full_sum", "launches", "mxps",
        "pending_launch", "prunes", "rels", "running", "seq", "sharing", "solo_limit",
        "span_ends", "span_forced", "span_starts", "span_subjects", "span_workers", "spans",
        "unvacuumed", "wake", "xps",
    )  # fmt: skip

    def __init__(
        self, launcher: Launcher, end: float, rels: list[_Rel], buckets: dict[int, list[_Rel]]
    ) -> None:
        self.end = end
        self.xps, self.mxps = launcher.xids_per_second, launcher.mxids_per_second
        self.every, self.cost_limit = launcher.launch_every_s, launcher.cost_limit
        self.advances = launcher.normal_advances
        self.prunes = launcher.prunes_during
        self.wake, self.danger_at = launcher.wake_s, launcher.danger_at_s
        cost_limit = launcher.cost_limit
        self.solo_limit = 1.0 if cost_limit < 1.0 else cost_limit  # one balanced vacuum's limit
        # (at, seq, the relation whose vacuum ends or None for a launch). An end is in force
        # while its seq is the relation's v_version: a seq is never reused, so an end that was
        # moved, or that belongs to an earlier vacuum of the relation, is passed over.
        self.events: list[tuple[float, int, _Rel | None]] = []
        self.buckets = buckets  # launch interval -> relations passing then
        self.drained = 0  # buckets below this one are empty
        self.rels = rels
        self.seq = len(rels)
        self.current = 0  # the sequence number of the event being handled
        self.due: list[_Rel] = []  # the relations that need a vacuum, in pg_class order
        self.free = list(range(launcher.workers - 1, -1, -1))
        # When every slot is busy, as steps: from full_at[i] on, full_sum[i] seconds with every
        # slot busy so far, and still full if full_now[i] (see busy_until()).
        self.full_at, self.full_sum, self.full_now = [0.0], [0.0], [False]
        self.running: list[_Rel] = []  # by start: the order in which a rebalance moves their ends
        self.spans = spans = Spans()
        self.span_workers, self.span_subjects, self.span_starts = (
            spans.workers, spans.subjects, spans.starts
        )  # fmt: skip
        self.span_ends, self.span_forced = spans.ends, spans.forced
        self.sharing = 0  # running vacuums that share the cost limit
        self.launches = 0  # workers started
        self.pending_launch = False
        self.unvacuumed = len(rels)  # relations in the loop without a finished vacuum yet
        first = launcher.first_launch_s
        self.seq += 1
        heappush(self.events, (self.every / 2 if first is None else first, self.seq, None))

    def run(self, *, first_starts: bool) -> None:
        """Handle the events in order to the end of the window; with ``first_starts``, only
        until every relation has finished a vacuum."""
        events, end, launch, finish = self.events, self.end, self.launch, self.finish
        while events and not (first_starts and self.unvacuumed == 0):
            at, current, rel = heappop(events)
            if at > end:
                break
            self.current = current
            if rel is None:
                launch(at)
            elif rel.running and rel.v_version == current:  # else superseded or stale
                finish(rel, at)

    def slots_changed(self, at: float) -> None:
        """A slot was taken or given back: note when the pool turns full or not."""
        full = not self.free
        full_at, full_sum, full_now = self.full_at, self.full_sum, self.full_now
        if full != full_now[-1]:
            before = full_sum[-1] + (at - full_at[-1] if full_now[-1] else 0.0)
            full_at.append(at)
            full_sum.append(before)
            full_now.append(full)

    def busy_until(self, at: float) -> float:
        """Seconds from the start of the window to ``at`` with every slot busy."""
        full_at = self.full_at
        i = bisect.bisect_right(full_at, at) - 1
        return self.full_sum[i] + (at - full_at[i] if self.full_now[i] else 0.0)

    def mark_due(self, r: _Rel) -> None:
        """It passed a threshold at ``next_due``: the launcher lists it from now on."""
        r.due_at = r.next_due
        r.next_bucket = -1
        if not r.listed:
            r.listed = True
            bisect.insort(self.due, r, key=_INDEX)

    def launch(self, at: float) -> None:
        """The launcher sends a worker: it lists the relations due now and takes the first."""
        free = self.free
        if not free:
            self.pending_launch = True  # the next worker to exit wakes the launcher
            return
        self.launches += 1
        kept = self.listed_now(at)
        todo = [r for r in kept if not r.running]
        if todo:  # else the worker finds nothing to do and exits at once
            worker = _Worker(free.pop(), todo)
            self.slots_changed(at)
            self.next_table(worker, at)
        self.seq += 1
        # In danger (past its freeze limit by now), this database gets a worker at every
        # wake-up of the launcher; until then once per round of the databases. The
        # buckets keep the width of the first interval: they only index the crossings.
        step = self.wake if at >= self.danger_at else self.every
        heappush(self.events, (at + step, self.seq, None))

    def listed_now(self, at: float) -> list[_Rel]:
        """The relations a worker starting at ``at`` lists: those due now, the others taken
        off the list of the due."""
        self.note_passed(at)
        kept = []
        for r in self.due:
            if r.due_at is None:
                r.listed = False
            else:
                kept.append(r)
        self.due = kept
        return kept

    def note_passed(self, at: float) -> None:
        """Mark due what passed a threshold before this moment, in earlier buckets and this
        one."""
        buckets, drained, mark_due = self.buckets, self.drained, self.mark_due
        last = int(at / self.every)
        passed: Iterable[int] = range(drained, last)
        if last - drained > len(buckets):  # a long wait for a slot: fewer buckets than steps
            passed = sorted(k for k in buckets if k < last)
        for k in passed:
            for r in buckets.pop(k, ()):
                if r.next_bucket == k:
                    mark_due(r)
        self.drained = last
        this = buckets.get(last)
        if this:
            current = self.current
            later = []
            for r in this:
                if r.next_bucket == last:
                    when = r.next_due
                    if when < at or (when == at and r.next_seq < current):
                        mark_due(r)
                    else:
                        later.append(r)
            buckets[last] = later

    def next_table(self, worker: _Worker, at: float) -> None:
        """The worker rechecks the relations left on its list and vacuums the first that
        still needs it; with none left it exits, and wakes a launcher that waited for a slot."""
        todo, position = worker.todo, worker.position
        while position < len(todo):
            r = todo[position]
            position += 1
            if r.running:
                continue  # table_recheck_autovac(): taken by another worker
            if r.due_at is None:
                if r.next_bucket < 0:
                    continue  # done already
                when = r.next_due
                if when > at or (when == at and r.next_seq > self.current):
                    continue  # done already, and not yet due again
                self.mark_due(r)
            worker.position = position
            self.start_vacuum(worker, r, at)
            return
        self.free.append(worker.slot)
        self.slots_changed(at)
        if self.pending_launch:
            self.pending_launch = False
            self.launch(at)

    def start_vacuum(self, worker: _Worker, r: _Rel, at: float) -> None:
        """A vacuum of ``r`` starts: its wait, its cost, and its end as the balance gives it."""
        elapsed = at - r.since  # the counters brought forward (_Rel.advance, written out)
        if elapsed > 0:
            r.dead += r.dead_per_second * elapsed
            r.inserted += r.inserts_per_second * elapsed
            r.changes += r.changes_per_second * elapsed
            r.xid_age += self.xps * elapsed
            r.mxid_age += self.mxps * elapsed
            if r.live_per_second:
                reltuples = r.reltuples + r.live_per_second * elapsed
                r.reltuples = 0.0 if reltuples < 0.0 else reltuples
            r.since = at
        assert r.due_at is not None
        wait = at - r.due_at
        r.waited += wait
        if wait > r.max_wait:
            r.max_wait = wait
        if wait > 0 and len(self.full_at) > 1:  # else no slot has been busy yet
            r.waited_full += self.busy_until(at) - self.busy_until(r.due_at)
        xid_age, mxid_age = r.xid_age, r.mxid_age
        r.v_forced = xid_age > r.xid_limit or mxid_age > r.mxid_limit
        # lazy_check_wraparound_failsafe(): either counter strictly past its failsafe age
        # (TransactionIdPrecedes() in vacuum_xid_failsafe_check(), vacuum.c).
        r.v_nosleep = nosleep = (
            xid_age > r.failsafe_age or mxid_age > r.mxid_failsafe_age or not r.delay_ms > 0
        )
        aggressive = xid_age >= r.aggressive_age or mxid_age >= r.mxid_aggressive_age
        r.v_work, r.v_cost = work, cost = _vacuum_cost(r, at, aggressive=aggressive)
        # heap_vacuum_rel() (vacuumlazy.c): an aggressive vacuum always sets a new
        # relfrozenxid; since 15 a normal one does unless it skipped an all-visible page
        # that was not all-frozen (vacrel->skippedallvis).
        # Only asked where an advance would move an age (most relations of a fleet are
        # younger than the freeze min ages): skips_unfrozen() is most of a start's time.
        r.v_advances = aggressive or (
            self.advances
            and (xid_age > r.freeze_min_age or mxid_age > r.mxid_freeze_min_age)
            and not skips_unfrozen(r)
        )
        r.v_start = r.v_at = at
        r.v_done = r.v_speed = 0.0
        r.v_worker = worker
        r.running = True
        self.running.append(r)
        if r.balanced:
            self.sharing += 1
            if self.sharing > 1:
                self.rebalance(at)  # the others' ends move too
                return
            limit = self.solo_limit
        else:
            limit = r.own_limit
        # Alone in the balance, or out of it: the end as reschedule() gives it, none of the
        # vacuum done yet.
        length = work + 0.0 if nosleep else work + cost / limit * r.delay_ms / 1000.0
        r.v_speed = 1.0 / length if length > 0 else math.inf
        self.seq += 1
        r.v_version = self.seq
        heappush(self.events, (at + length, self.seq, r))

    def reschedule(self, r: _Rel, at: float, limit: float) -> None:
        """Bank the progress made at the old speed and schedule the end at the new one."""
        done = r.v_done + r.v_speed * (at - r.v_at)
        if done > 1.0:
            done = 1.0
        r.v_done = done
        r.v_at = at
        if r.v_nosleep:  # lazy_check_wraparound_failsafe(): no more cost-based sleeps
            length = r.v_work + 0.0
        else:
            length = r.v_work + r.v_cost / limit * r.delay_ms / 1000.0
        r.v_speed = 1.0 / length if length > 0 else math.inf
        self.seq += 1
        r.v_version = self.seq
        heappush(self.events, (at + (1.0 - done) * length, self.seq, r))

    def rebalance(self, at: float) -> None:
        """Re-split the cost limit among the balanced workers and move their ends."""
        sharing, cost_limit = self.sharing, self.cost_limit
        limit = cost_limit / sharing if sharing > 1 else cost_limit
        if limit < 1.0:
            limit = 1.0
        reschedule = self.reschedule
        for r in self.running:
            if r.balanced:
                reschedule(r, at, limit)

    def finish(self, r: _Rel, at: float) -> None:
        """A vacuum of ``r`` ends: its counters as the vacuum leaves them, the moment it
        passes a threshold next, and the worker goes on to its next relation."""
        self.running.remove(r)
        elapsed = at - r.since  # the counters brought forward (_Rel.advance, written out)
        if elapsed > 0:
            r.dead += r.dead_per_second * elapsed
            r.inserted += r.inserts_per_second * elapsed
            r.changes += r.changes_per_second * elapsed
            r.xid_age += self.xps * elapsed
            r.mxid_age += self.mxps * elapsed
            if r.live_per_second:
                reltuples = r.reltuples + r.live_per_second * elapsed
                r.reltuples = 0.0 if reltuples < 0.0 else reltuples
            r.since = at
        if r.dead > r.peak_dead:
            r.peak_dead = r.dead
        start, worker = r.v_start, r.v_worker
        assert worker is not None
        if not r.vacuums:
            self.unvacuumed -= 1
        r.vacuums += 1
        r.forced += r.v_forced
        r.starts.append(start)
        r.durations.append(at - start)
        self.span_workers.append(worker.slot)
        self.span_subjects.append(r.index)
        self.span_starts.append(start)
        self.span_ends.append(at)
        self.span_forced.append(r.v_forced)
        r.dead = dead_after_vacuum(r.dead_per_second, at - start, prunes=self.prunes)
        r.inserted = 0.0
        # Vacuum sets every page it leaves clean all-visible; what changed meanwhile is not.
        # It is taken to freeze no page that was not all-frozen already: it freezes only
        # tuples older than vacuum_freeze_min_age (heap_prepare_freeze_tuple() in
        # heapam.c), and from 16 whole pages opportunistically, which is not modelled.
        pages = r.pages()
        if r.frozen > 0.0:
            r.frozen = min(r.frozen * math.exp(-r.changes / pages), pages)
        r.visible = r.counted = pages
        r.changes = r.changes_per_second * (at - start)
        # The new relfrozenxid is the oldest xid left unfrozen, no older than the freeze
        # cutoff: its age is taken as vacuum_freeze_min_age, the most it can be (a table
        # whose rows are all younger gets a younger one).
        if r.v_advances:  # relminmxid advances with relfrozenxid (NewRelminMxid)
            if r.freeze_min_age < r.xid_age:
                r.xid_age = r.freeze_min_age
            if r.mxid_freeze_min_age < r.mxid_age:
                r.mxid_age = r.mxid_freeze_min_age
        r.running = False
        r.due_at = None
        r.last_end = at
        self.note_next(r, at)
        if r.balanced:
            self.sharing -= 1
            if self.running:
                self.rebalance(at)
        self.next_table(worker, at)

    def note_next(self, r: _Rel, at: float) -> None:
        """Note when ``r``, just vacuumed, passes a threshold again, if within the window."""
        when = _crossing(r, r.since, self.xps, self.mxps)
        if when <= self.end:
            self.seq += 1
            r.next_due = when = when if when > at else at
            r.next_seq = self.seq
            r.next_bucket = k = int(when / self.every)
            bucket = self.buckets.get(k)
            if bucket is None:
                self.buckets[k] = [r]
            else:
                bucket.append(r)
        else:
            r.next_bucket = -1
