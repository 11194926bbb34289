"""A discrete-event simulation of the autovacuum launcher and its workers in one database.

What it follows of PostgreSQL (src/backend/postmaster/autovacuum.c):

- **The launcher** sends a worker to each database once per ``autovacuum_naptime``; with
  several databases it wakes every ``naptime / databases``, never more often than every 100 ms
  (``MIN_AUTOVAC_SLEEPTIME``; launcher_determine_sleep(), rebuild_database_list()). A database
  whose ``datfrozenxid`` is past ``autovacuum_freeze_max_age`` is chosen first
  (do_start_worker()), so it gets a worker at every wake-up. With every slot busy the launcher
  waits; a worker that exits wakes it (FreeWorkerInfo() signals it), and the schedule goes on
  from that launch.
- **Worker slots**: ``model.balance.available_workers``.
- **A worker** builds its list of relations once, when it starts: those that need a vacuum then
  (relation_needs_vacanalyze()), heaps in ``pg_class`` order, then TOAST relations
  (do_autovacuum()). Before each one it checks again (table_recheck_autovac()): a relation
  another worker is vacuuming, or that no longer needs it, is skipped. A relation that passes
  its threshold after the list was built waits for the next worker.
- **Cost balancing** while several workers run: those without cost settings of their own share
  the limit (``model.balance``), re-split whenever one starts or ends
  (autovac_recalculate_workers_for_balance()). A vacuum progresses through its work and its
  cost-based sleeps; its remaining sleep stretches or shrinks as the share changes.
- **Counters**: ``n_dead_tup`` and ``n_ins_since_vacuum`` grow at the rates measured between two
  snapshots. A vacuum removes the dead tuples present when it starts; when it ends the counter
  holds what it found recently dead (``COUNTED_DURING``, see below) and the insert counter
  restarts (pgstat_report_vacuum()). ``reltuples`` follows the live-tuple rate, so thresholds
  move as a table grows.
- **Wraparound**: a relation's xid age grows with the server's transaction rate; past its
  freeze limit it is forced (``model.forcing``) even with autovacuum off. An aggressive vacuum
  brings its age back to ``vacuum_freeze_min_age``; a normal one is taken to leave it.

Analyze-only visits, horizon holders and other databases' work are not simulated.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field
from typing import Final, NamedTuple

#: The launcher's shortest sleep (MIN_AUTOVAC_SLEEPTIME, 100 ms, in autovacuum.c).
MIN_SLEEP_S: Final = 0.1
#: Of the tuples that die while a vacuum runs, the share its final report counts: those on pages
#: it had not reached yet, which it finds recently dead. Those on pages already behind it are
#: reported by the backends, and pgstat_report_vacuum() overwrites what they reported meanwhile.
COUNTED_DURING: Final = 0.5
#: Unthrottled work: a fixed cost per vacuum (catalog lookups, truncation check, statistics)
#: and the time to process one page found in shared buffers.
#: The scheduling study measured 5 ms for a whole vacuum of a 5,000-row table at the default
#: cost settings, of which the cost-based sleep is under 1 ms.
FIXED_S: Final = 0.003
PAGE_S: Final = 2e-5
#: checkpoint_timeout's default. Vacuum pays vacuum_cost_page_dirty only for a buffer that was
#: clean (MarkBufferDirty() in bufmgr.c charges it when BM_DIRTY was not set): a page the
#: workload changed is still dirty unless a checkpoint wrote it since, which for a change t
#: seconds old happens with a chance of about t / CHECKPOINT_S.
CHECKPOINT_S: Final = 300.0

_LAUNCH, _END, _DUE = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Subject:
    """One relation as the simulation sees it: its thresholds, rates, size and costs."""

    label: str
    is_toast: bool
    order: int  # its place in pg_class: heaps by oid, then TOAST relations by oid
    enabled: bool  # the thresholds apply (autovacuum on and the relation's switch on)
    vacuum_base: float
    vacuum_scale: float
    vacuum_cap: float | None
    insert_base: float | None  # None: no insert-triggered vacuum
    insert_scale: float
    unfrozen: float  # 18+: the share of pages not all-frozen scales the insert threshold
    reltuples: float
    live_per_second: float
    dead: float
    dead_per_second: float
    inserted: float
    inserts_per_second: float
    xid_age: float
    xid_limit: float  # forced past this age
    aggressive_age: float  # Min(freeze_table_age, 0.95 × autovacuum_freeze_max_age)
    freeze_min_age: float
    failsafe_age: float  # Max(vacuum_failsafe_age, 1.05 × autovacuum_freeze_max_age)
    pages: float
    all_visible: float  # relallvisible: pages a normal vacuum skips until they change
    index_pages: float
    n_indexes: int
    page_hit: float
    page_dirty: float
    own_limit: float | None = None  # own cost settings: left out of the balance
    own_delay_ms: float | None = None

    @property
    def balanced(self) -> bool:
        return self.own_limit is None and self.own_delay_ms is None


@dataclass(frozen=True, slots=True)
class Launcher:
    """The server's side: naptime, databases, worker slots, cost limit and the xid rate."""

    naptime_s: float
    workers: int
    databases: int = 1
    in_danger: bool = False  # this database is past autovacuum_freeze_max_age
    cost_limit: float = 200.0
    cost_delay_ms: float = 2.0
    xids_per_second: float = 0.0
    first_launch_s: float | None = None  # None: half a launch interval in

    @property
    def launch_every_s(self) -> float:
        spacing = max(self.naptime_s / max(self.databases, 1), MIN_SLEEP_S)
        return spacing if self.in_danger else spacing * max(self.databases, 1)


@dataclass(slots=True)
class Tally:
    """What happened to one relation over the window."""

    vacuums: int = 0
    forced: int = 0
    starts: list[float] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    peak_dead: float = 0.0
    waited: float = 0.0
    max_wait: float = 0.0

    @property
    def mean_interval(self) -> float | None:
        """Seconds between the starts of its vacuums; None below two."""
        starts = self.starts
        return (starts[-1] - starts[0]) / (len(starts) - 1) if len(starts) > 1 else None


class Span(NamedTuple):
    """One vacuum (a tuple: the simulation makes tens of thousands)."""

    worker: int
    subject: int
    start: float
    end: float
    forced: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    subjects: list[Subject]
    tallies: list[Tally]
    spans: list[Span]
    launches: int
    seconds: float

    def busy_share(self, workers: int) -> float:
        """Worker-seconds spent vacuuming over those the window offers."""
        busy = sum(min(s.end, self.seconds) - s.start for s in self.spans)
        return busy / (self.seconds * workers) if self.seconds > 0 and workers > 0 else 0.0


@dataclass(slots=True)
class _State:
    """A relation's counters, as of ``since``."""

    dead: float
    inserted: float
    xid_age: float
    reltuples: float
    visible: float  # all-visible pages when ``changes`` started counting
    changes: float = 0.0  # dead tuples and inserts since then
    since: float = 0.0
    due_at: float | None = None  # when it passed a threshold; None while it needs nothing
    last_end: float | None = None  # when its last simulated vacuum ended
    running: bool = False
    version: int = 0


@dataclass(slots=True)
class _Vacuum:
    subject: int
    worker: int
    start: float
    work_s: float  # unthrottled
    sleep_cost: float  # cost units that throttling turns into sleep
    done: float = 0.0  # share of the vacuum completed, as of ``at``
    at: float = 0.0
    speed: float = 0.0  # share per second
    forced: bool = False
    version: int = 0


@dataclass(slots=True)
class _Worker:
    slot: int
    todo: list[int]
    position: int = 0
    vacuum: _Vacuum | None = None


class Simulator:
    """Runs ``subjects`` under ``launcher`` for ``seconds``; :meth:`run` returns the outcome."""

    def __init__(self, subjects: list[Subject], launcher: Launcher, seconds: float) -> None:
        self.subjects = sorted(subjects, key=lambda s: (s.is_toast, s.order))
        self.launcher = launcher
        self.end = seconds
        self.states = [
            _State(s.dead, s.inserted, s.xid_age, s.reltuples, s.all_visible) for s in self.subjects
        ]
        self.tallies = [Tally(peak_dead=s.dead) for s in self.subjects]
        self.events: list[tuple[float, int, int, int, int]] = []
        self.sequence = 0
        self.due: list[int] = []  # indices of relations that need a vacuum, in pg_class order
        self.listed: set[int] = set()  # the indices in ``due``, which may be done by now
        self.free = list(range(launcher.workers - 1, -1, -1))
        self.workers: dict[int, _Worker] = {}
        self.vacuuming: dict[int, _Worker] = {}  # relation index -> the worker on it
        self.sharing = 0  # running vacuums that share the cost limit
        self.spans: list[Span] = []
        self.launches = 0
        self.pending_launch = False

    # -- the event loop ---------------------------------------------------------------------

    def run(self) -> Outcome:
        for index in range(len(self.subjects)):
            self._schedule_due(index, 0.0)
        first = self.launcher.first_launch_s
        self._push(self.launcher.launch_every_s / 2 if first is None else first, _LAUNCH, 0, 0)
        while self.events:
            at, _, kind, target, version = heapq.heappop(self.events)
            if at > self.end:
                break
            if kind == _LAUNCH:
                self._launch(at)
            elif kind == _DUE:
                self._mark_due(target, version, at)
            else:
                self._finish(target, version, at)
        for index, state in enumerate(self.states):
            self._close_peak(index, state)
        return Outcome(self.subjects, self.tallies, self.spans, self.launches, self.end)

    def _push(self, at: float, kind: int, target: int, version: int) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (at, self.sequence, kind, target, version))

    # -- the launcher ------------------------------------------------------------------------

    def _launch(self, at: float) -> None:
        if not self.free:
            self.pending_launch = True  # the next worker to exit wakes the launcher
            return
        self._start_worker(at)
        self._push(at + self.launcher.launch_every_s, _LAUNCH, 0, 0)

    def _start_worker(self, at: float) -> None:
        self.launches += 1
        states = self.states
        self.due = [i for i in self.due if states[i].due_at is not None]
        self.listed = set(self.due)
        todo = [i for i in self.due if not states[i].running]
        if not todo:
            return  # the worker finds nothing to do and exits at once
        worker = _Worker(self.free.pop(), todo)
        self.workers[worker.slot] = worker
        self._next_table(worker, at)

    # -- workers -----------------------------------------------------------------------------

    def _next_table(self, worker: _Worker, at: float) -> None:
        while worker.position < len(worker.todo):
            index = worker.todo[worker.position]
            worker.position += 1
            state = self.states[index]
            if state.running or state.due_at is None:
                continue  # table_recheck_autovac(): taken by another worker, or done already
            self._start_vacuum(worker, index, at)
            return
        del self.workers[worker.slot]
        self.free.append(worker.slot)
        if self.pending_launch:
            self.pending_launch = False
            self._launch(at)

    def _start_vacuum(self, worker: _Worker, index: int, at: float) -> None:
        subject, state = self.subjects[index], self.states[index]
        self._advance(index, at)
        tally = self.tallies[index]
        assert state.due_at is not None
        wait = at - state.due_at
        tally.waited += wait
        if wait > tally.max_wait:
            tally.max_wait = wait
        forced = state.xid_age > subject.xid_limit
        aggressive = state.xid_age >= subject.aggressive_age
        # Changes since the last vacuum: before the first, the dead tuples and inserts found.
        changes = state.changes if state.last_end is not None else state.dead + state.inserted
        clean = clean_share(_changes_age(subject, state, at), changes / _pages(subject, state))
        work_s, cost = _vacuum_cost(subject, state, aggressive=aggressive, clean=clean)
        vacuum = _Vacuum(index, worker.slot, at, work_s, cost, at=at, forced=forced)
        state.running = True
        worker.vacuum = vacuum
        self.vacuuming[index] = worker
        if subject.balanced:
            self.sharing += 1
            self._rebalance(at)
        else:
            self._reschedule(vacuum, at)

    def _finish(self, index: int, version: int, at: float) -> None:
        state = self.states[index]
        worker = self.vacuuming.get(index)
        if worker is None or worker.vacuum is None or worker.vacuum.version != version:
            return  # superseded: the share changed and the end moved
        vacuum = worker.vacuum
        worker.vacuum = None
        del self.vacuuming[index]
        subject, tally = self.subjects[index], self.tallies[index]
        self._advance(index, at)
        if state.dead > tally.peak_dead:
            tally.peak_dead = state.dead
        tally.vacuums += 1
        tally.forced += vacuum.forced
        tally.starts.append(vacuum.start)
        tally.durations.append(at - vacuum.start)
        self.spans.append(Span(vacuum.worker, index, vacuum.start, at, vacuum.forced))
        state.dead = COUNTED_DURING * subject.dead_per_second * (at - vacuum.start)
        state.inserted = 0.0
        # Vacuum sets every page it leaves clean all-visible; what changed meanwhile is not.
        state.visible = _pages(subject, state)
        state.changes = (subject.dead_per_second + subject.inserts_per_second) * (at - vacuum.start)
        if state.xid_age >= subject.aggressive_age:
            state.xid_age = min(state.xid_age, subject.freeze_min_age)
        state.running = False
        state.due_at = None
        state.last_end = at
        state.version += 1
        self._schedule_due(index, at)
        if subject.balanced:
            self.sharing -= 1
            self._rebalance(at)
        self._next_table(worker, at)

    # -- counters and thresholds -------------------------------------------------------------

    def _advance(self, index: int, at: float) -> None:
        """Bring a relation's counters forward to ``at``."""
        subject, state = self.subjects[index], self.states[index]
        elapsed = at - state.since
        if elapsed <= 0:
            return
        state.dead += subject.dead_per_second * elapsed
        state.inserted += subject.inserts_per_second * elapsed
        state.changes += (subject.dead_per_second + subject.inserts_per_second) * elapsed
        state.xid_age += self.launcher.xids_per_second * elapsed
        if subject.live_per_second:
            state.reltuples = max(state.reltuples + subject.live_per_second * elapsed, 0.0)
        state.since = at

    def _schedule_due(self, index: int, at: float) -> None:
        """When the relation next needs a vacuum, as an event (now, if it already does)."""
        subject, state = self.subjects[index], self.states[index]
        when = _crossing(subject, state, self.launcher.xids_per_second)
        if when <= self.end:
            self._push(when if when > at else at, _DUE, index, state.version)

    def _mark_due(self, index: int, version: int, at: float) -> None:
        state = self.states[index]
        if state.version != version or state.due_at is not None:
            return
        state.due_at = at
        if index not in self.listed:
            self.listed.add(index)
            bisect.insort(self.due, index)

    def _close_peak(self, index: int, state: _State) -> None:
        self._advance(index, self.end)
        tally = self.tallies[index]
        tally.peak_dead = max(tally.peak_dead, state.dead)

    # -- cost balancing ----------------------------------------------------------------------

    def _rebalance(self, at: float) -> None:
        """Re-split the cost limit among the balanced workers and move their vacuums' ends."""
        for worker in self.vacuuming.values():
            vacuum = worker.vacuum
            if vacuum is not None and self.subjects[vacuum.subject].balanced:
                self._reschedule(vacuum, at)

    def _reschedule(self, vacuum: _Vacuum, at: float) -> None:
        """Bank the progress made at the old speed and schedule the end at the new one."""
        vacuum.done = min(vacuum.done + vacuum.speed * (at - vacuum.at), 1.0)
        vacuum.at = at
        length = vacuum.work_s + self._sleep_s(vacuum, self.sharing)
        vacuum.speed = 1.0 / length if length > 0 else math.inf
        vacuum.version += 1
        self._push(at + (1.0 - vacuum.done) * length, _END, vacuum.subject, vacuum.version)

    def _sleep_s(self, vacuum: _Vacuum, sharing: int) -> float:
        subject, launcher = self.subjects[vacuum.subject], self.launcher
        if self.states[vacuum.subject].xid_age >= subject.failsafe_age:
            return 0.0  # lazy_check_wraparound_failsafe(): no more cost-based sleeps
        delay = launcher.cost_delay_ms if subject.own_delay_ms is None else subject.own_delay_ms
        if subject.balanced:
            limit = launcher.cost_limit / sharing if sharing > 1 else launcher.cost_limit
            if limit < 1.0:
                limit = 1.0
        else:
            limit = subject.own_limit or launcher.cost_limit
        return vacuum.sleep_cost / limit * delay / 1000.0 if delay > 0 else 0.0


def simulate(subjects: list[Subject], launcher: Launcher, seconds: float) -> Outcome:
    """The autovacuums of ``subjects`` over ``seconds``."""
    return Simulator(subjects, launcher, seconds).run()


def vacuum_threshold(subject: Subject, reltuples: float) -> float:
    threshold = subject.vacuum_base + subject.vacuum_scale * max(reltuples, 0.0)
    return threshold if subject.vacuum_cap is None else min(threshold, subject.vacuum_cap)


def _crossing(subject: Subject, state: _State, xids_per_second: float) -> float:
    """The moment the relation next needs a vacuum (relation_needs_vacanalyze()): past its
    vacuum or insert threshold while they apply, or past its freeze limit; inf if never.
    Written out: it runs once per simulated vacuum."""
    since = state.since
    if state.xid_age > subject.xid_limit:
        return since
    when = math.inf
    if xids_per_second > 0:
        when = since + (subject.xid_limit - state.xid_age) / xids_per_second
    if subject.enabled:
        threshold = subject.vacuum_base + subject.vacuum_scale * state.reltuples
        if subject.vacuum_cap is not None and subject.vacuum_cap < threshold:
            threshold = subject.vacuum_cap
        if state.dead > threshold:
            return since
        if subject.dead_per_second > 0:
            at = since + (threshold - state.dead) / subject.dead_per_second
            if at < when:
                when = at
        if subject.insert_base is not None:
            limit = subject.insert_base + subject.insert_scale * state.reltuples * subject.unfrozen
            if state.inserted > limit:
                return since
            if subject.inserts_per_second > 0:
                at = since + (limit - state.inserted) / subject.inserts_per_second
                if at < when:
                    when = at
    return when


def _pages(subject: Subject, state: _State) -> float:
    """Heap pages now: the table grows and shrinks with reltuples."""
    pages = subject.pages if subject.pages > 1.0 else 1.0
    if subject.reltuples > 0 and state.reltuples != subject.reltuples and state.reltuples > 0:
        pages = max(pages * state.reltuples / subject.reltuples, 1.0)
    return pages


class Clean(NamedTuple):
    """Of the pages a vacuum reads: the share the changes since its last vacuum touched, and
    the chance that a page is clean when vacuum reaches it, touched or not."""

    touched: float
    if_touched: float
    if_untouched: float


def clean_share(age_s: float, changes_per_page: float) -> Clean:
    """How many pages are clean for ``changes_per_page`` changes spread at random over the
    pages and evenly over the last ``age_s`` seconds.

    What keeps a page dirty is its latest change, and a checkpoint came after a change ``t``
    seconds old with a chance of about t / CHECKPOINT_S. Of the pages, 1 − e^(−m) took at
    least one of the m changes a page; of k changes spread evenly over ``age_s`` the latest is
    on average ``age_s / (k + 1)`` old. The other pages last changed before the window, at
    least ``age_s`` ago. So a hot table whose every page changed many times since its last
    vacuum is still dirty when vacuum reaches it and vacuum pays for none of its pages, while
    a page changed once, long ago, has most likely been written out since."""
    age = max(age_s, 0.0)
    changes = max(changes_per_page, 0.0)
    touched = -math.expm1(-changes)  # 1 − e^(−m), exact for small m
    untouched = min(age / CHECKPOINT_S, 1.0)
    if touched <= 0.0:
        return Clean(0.0, untouched, untouched)
    latest = age / (changes / touched + 1.0)
    return Clean(touched, min(latest / CHECKPOINT_S, 1.0), untouched)


def _changes_age(subject: Subject, state: _State, at: float) -> float:
    """How far back the changes a vacuum now finds go: to its last vacuum's end, or, before
    the first, as long as the dead tuples took to accrue at their rate."""
    if state.last_end is not None:
        return at - state.last_end
    if subject.dead_per_second > 0:
        return state.dead / subject.dead_per_second
    return math.inf


def _vacuum_cost(
    subject: Subject, state: _State, *, aggressive: bool, clean: Clean
) -> tuple[float, float]:
    """The unthrottled seconds and the cost of one vacuum from the relation's state now.

    Heap pages: an aggressive vacuum reads them all; a normal one skips the all-visible pages
    (the visibility map; heap_vac_scan_next_block() in vacuumlazy.c). Those it left all-visible
    lose the bit as changes reach them, taken as spread at random: ``visible ×
    e^(−changes/pages)`` stay. Each page read is dirtied, but vacuum pays
    vacuum_cost_page_dirty only for those still clean (MarkBufferDirty() in bufmgr.c):
    ``clean``, the touched pages first among those read. Indexes: unless fewer than 2 % of the
    pages hold dead tuples (the bypass, 14+) every index page is read once and those holding
    dead entries dirtied, clean as often as touched heap pages; then the heap pages that held
    dead tuples are visited a second time to free their dead items (lazy_vacuum_heap_rel()),
    already dirty by then."""
    pages = _pages(subject, state)
    visible = min(state.visible, pages) * math.exp(-state.changes / pages)
    heap = pages if aggressive else pages - visible
    touched = min(clean.touched * pages, heap)
    paid = touched * clean.if_touched + (heap - touched) * clean.if_untouched
    cost = heap * subject.page_hit + paid * subject.page_dirty
    index_read = 0.0
    if subject.n_indexes and state.dead >= 0.02 * pages and subject.index_pages > 0:
        index_read = subject.index_pages
        dirtied = subject.index_pages * (1.0 - math.exp(-state.dead / subject.index_pages))
        cost += index_read * subject.page_hit + clean.if_touched * dirtied * subject.page_dirty
        second = pages * (1.0 - math.exp(-state.dead / pages))
        cost += second * subject.page_hit
        index_read += second
    work = FIXED_S + (heap + index_read) * PAGE_S
    return work, cost
