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
- **Wraparound**: a relation's xid age grows with the server's transaction rate, its
  multixact age with the multixact rate; past either freeze limit it is forced
  (``model.forcing``) even with autovacuum off, and past either failsafe age its vacuum runs
  unthrottled. An aggressive vacuum
  brings its age back to ``vacuum_freeze_min_age``. Since PostgreSQL 15 a normal one does too,
  unless it skipped an all-visible page that was not all-frozen (:func:`skips_unfrozen`).

Analyze-only visits, horizon holders and other databases' work are not simulated.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Final, NamedTuple, Protocol

from vacuumlab.model import cost, duration

#: The launcher's shortest sleep (MIN_AUTOVAC_SLEEPTIME, 100 ms, in autovacuum.c).
MIN_SLEEP_S: Final = 0.1
#: Of the tuples that die while a vacuum runs, the share its final report counts: those on pages
#: it had not reached yet, which it finds recently dead. Those on pages already behind it are
#: reported by the backends, and pgstat_report_vacuum() overwrites what they reported meanwhile.
COUNTED_DURING: Final = 0.5
#: Unthrottled work, as the advisor takes it: model/cost.py (work_seconds()).
FIXED_S: Final = cost.WORK_FIXED_S
PAGE_S: Final = cost.PAGE_S
#: checkpoint_timeout's default. Vacuum pays vacuum_cost_page_dirty only for a buffer that was
#: clean (MarkBufferDirty() in bufmgr.c charges it when BM_DIRTY was not set): a page the
#: workload changed is still dirty unless a checkpoint wrote it since, which for a change t
#: seconds old happens with a chance of about t / CHECKPOINT_S.
CHECKPOINT_S: Final = 300.0
_CLEAN_AFTER_S: Final = 2.0 * CHECKPOINT_S  # changes spread over this long: all found clean


@dataclass(frozen=True, slots=True)
class Subject:
    """One relation as the simulation sees it: its thresholds, rates, size and costs."""

    label: str
    is_toast: bool
    order: int  # its oid: the key of first_starts(), and the order where position is None
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
    all_frozen: float = 0.0  # relallfrozen (18+); before 18 unknown, taken as none
    # Multixacts, as the xids above: mxid_age(relminmxid), forced past Min(reloption,
    # MultiXactMemberFreezeThreshold()), aggressive past Min(multixact_freeze_table_age,
    # 0.95 × that), brought back to vacuum_multixact_freeze_min_age, failsafe past
    # Max(vacuum_multixact_failsafe_age, 1.05 × autovacuum_multixact_freeze_max_age).
    mxid_age: float = 0.0
    mxid_limit: float = math.inf
    mxid_aggressive_age: float = math.inf
    mxid_freeze_min_age: float = 5_000_000.0
    mxid_failsafe_age: float = math.inf
    # Its pg_class row's place (Relation.catalog_position): a worker lists heaps, then TOAST
    # relations, in the order its scan of pg_class meets them (do_autovacuum()), not by oid.
    position: int | None = None
    #: The visibility map as relallvisible counted it: on ``counted_pages`` pages (None: all
    #: of ``pages``), and ``touched`` rows updated or deleted on them since, before the window
    #: (model.duration.page_changes()); ``tuples_per_page`` places the inserts.
    counted_pages: float | None = None
    touched: float = 0.0
    tuples_per_page: float = 1.0

    @property
    def balanced(self) -> bool:
        return self.own_limit is None and self.own_delay_ms is None


@dataclass(frozen=True, slots=True)
class Launcher:
    """The server's side: naptime, databases, worker slots, cost limit and the xid rate."""

    naptime_s: float
    workers: int
    databases: int = 1
    in_danger: bool = False  # this database is past autovacuum_freeze_max_age (or mxid's)
    # Seconds until it is, at the measured rates (None: not within them). From then on the
    # launcher's do_start_worker() picks it at every wake-up.
    danger_in_s: float | None = None
    cost_limit: float = 200.0
    cost_delay_ms: float = 2.0
    xids_per_second: float = 0.0
    mxids_per_second: float = 0.0
    first_launch_s: float | None = None  # None: half a launch interval in
    normal_advances: bool = True  # 15+: a normal vacuum can advance relfrozenxid

    @property
    def launch_every_s(self) -> float:
        """How often a worker comes to this database at the start of the window."""
        return self.wake_s if self.in_danger else self.wake_s * max(self.databases, 1)

    @property
    def wake_s(self) -> float:
        """How often the launcher wakes: naptime / databases, never under 100 ms."""
        return max(self.naptime_s / max(self.databases, 1), MIN_SLEEP_S)

    @property
    def danger_at_s(self) -> float:
        """When this database is past its freeze limit: 0 if it is now, inf if never."""
        if self.in_danger:
            return 0.0
        return math.inf if self.danger_in_s is None else max(self.danger_in_s, 0.0)


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
    # Of ``waited``, the seconds during which every worker slot was busy: only those would a
    # larger autovacuum_max_workers shorten. The rest it waited with a slot free, for the
    # launcher's next worker or behind other relations in a worker's list.
    waited_full: float = 0.0

    @property
    def mean_interval(self) -> float | None:
        """Seconds between the starts of its vacuums; None below two."""
        starts = self.starts
        return (starts[-1] - starts[0]) / (len(starts) - 1) if len(starts) > 1 else None


class Span(NamedTuple):
    """One vacuum."""

    worker: int
    subject: int
    start: float
    end: float
    forced: bool


@dataclass(frozen=True, slots=True)
class Spans:
    """Every vacuum, column by column, in the order they ended. Columns of numbers rather than
    a tuple each: a day of a large fleet holds tens of thousands, and tuples kept alive by the
    thousand make the garbage collector walk every live object again and again."""

    workers: list[int] = field(default_factory=list)
    subjects: list[int] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    forced: list[bool] = field(default_factory=list)

    def rows(self) -> list[Span]:
        columns = zip(self.workers, self.subjects, self.starts, self.ends, self.forced, strict=True)
        return list(map(Span._make, columns))


@dataclass(slots=True)
class Outcome:
    subjects: list[Subject]
    active: dict[int, Tally]  # by index into subjects: those that passed a threshold in the window
    columns: Spans
    launches: int
    seconds: float
    _tallies: list[Tally] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def tallies(self) -> list[Tally]:
        """One per subject, in order; built on first use, as most relations of a large fleet
        never pass a threshold and a forecast's record leaves those out."""
        if self._tallies is None:
            self._tallies = [self.tally(index) for index in range(len(self.subjects))]
        return self._tallies

    def tally(self, index: int) -> Tally:
        """The tally of ``subjects[index]``."""
        if self._tallies is not None:
            return self._tallies[index]
        found = self.active.get(index)
        if found is not None:
            return found
        # Never vacuumed: its dead tuples grew at their rate to the end of the window.
        s, end = self.subjects[index], self.seconds
        dead = s.dead + s.dead_per_second * end if end > 0 else s.dead
        return Tally(peak_dead=max(s.dead, dead))

    @property
    def spans(self) -> list[Span]:
        """Every vacuum, in the order they ended (built on each call: the columns are kept)."""
        return self.columns.rows()

    def busy_share(self, workers: int) -> float:
        """Worker-seconds spent vacuuming over those the window offers."""
        seconds = self.seconds
        busy = sum(
            min(end, seconds) - start
            for start, end in zip(self.columns.starts, self.columns.ends, strict=True)
        )
        return busy / (seconds * workers) if seconds > 0 and workers > 0 else 0.0


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


_INDEX = attrgetter("index")


def _listed_order(s: Subject) -> tuple[bool, int, int]:
    """Heaps before TOAST relations, each in pg_class's physical order (by oid for
    subjects without a position)."""
    return s.is_toast, s.order if s.position is None else s.position, s.order


class _Worker:
    __slots__ = ("position", "slot", "todo")

    def __init__(self, slot: int, todo: list[_Rel]) -> None:
        self.slot = slot
        self.todo = todo  # the relations that needed a vacuum when it started, in order
        self.position = 0


class Simulator:
    """Runs ``subjects`` under ``launcher`` for ``seconds``; :meth:`run` returns the outcome.

    The loop is written for speed (a simulated day of a large fleet holds tens of thousands of
    vacuums): the handlers are closures over local state, each relation's fixed values are read
    once into a :class:`_Rel`, and the records are built at the end.

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
        rels, spans, launches = self._loop(first_starts=False)
        return Outcome(self.subjects, self._tallies(rels), spans, launches, self.end)

    def first_starts(self) -> dict[int, float]:
        """The start of each relation's first vacuum that ends within the window, by its
        subject's ``order``; the relations with none are left out. The loop stops once every
        relation in it has had one: events are handled in time order, so nothing later moves
        a first start (run()'s tallies give the same starts, at the cost of the whole window:
        at 10,000 tables a live view's simulation of the hour ahead took a tenth of what
        that did, 200 relations vacuumed 19 times each)."""
        rels, _, _ = self._loop(first_starts=True)
        subjects = self.subjects
        return {subjects[r.index].order: r.starts[0] for r in rels if r.starts}

    def _loop(self, *, first_starts: bool) -> tuple[list[_Rel], Spans, int]:
        """The events of the window, in order; with ``first_starts``, only until every
        relation in the loop has finished a vacuum."""
        launcher, end = self.launcher, self.end
        xps, every, cost_limit = (
            launcher.xids_per_second, launcher.launch_every_s, launcher.cost_limit
        )  # fmt: skip
        advances = launcher.normal_advances
        wake, danger_at = launcher.wake_s, launcher.danger_at_s
        mxps = launcher.mxids_per_second
        solo_limit = 1.0 if cost_limit < 1.0 else cost_limit  # one balanced vacuum's limit
        # (at, seq, the relation whose vacuum ends or None for a launch). An end is in force
        # while its seq is the relation's v_version: a seq is never reused, so an end that was
        # moved, or that belongs to an earlier vacuum of the relation, is passed over.
        events: list[tuple[float, int, _Rel | None]] = []
        push, pop = heapq.heappush, heapq.heappop
        buckets: dict[int, list[_Rel]] = {}  # launch interval -> relations passing then
        drained = 0  # buckets below this one are empty
        rels = self._relations(buckets, every)
        seq = len(rels)
        current = 0  # the sequence number of the event being handled
        due: list[_Rel] = []  # the relations that need a vacuum, in pg_class order
        free = list(range(launcher.workers - 1, -1, -1))
        # When every slot is busy, as steps: from full_at[i] on, full_sum[i] seconds with every
        # slot busy so far, and still full if full_now[i] (see busy_until()).
        full_at, full_sum, full_now = [0.0], [0.0], [False]
        running: list[_Rel] = []  # by start: the order in which a rebalance moves their ends
        spans = Spans()
        span_workers, span_subjects, span_starts, span_ends, span_forced = (
            spans.workers, spans.subjects, spans.starts, spans.ends, spans.forced
        )  # fmt: skip
        sharing = launches = 0  # running vacuums that share the cost limit; workers started
        pending_launch = False
        unvacuumed = len(rels)  # relations in the loop without a finished vacuum yet

        def slots_changed(at: float) -> None:
            """A slot was taken or given back: note when the pool turns full or not."""
            full = not free
            if full != full_now[-1]:
                before = full_sum[-1] + (at - full_at[-1] if full_now[-1] else 0.0)
                full_at.append(at)
                full_sum.append(before)
                full_now.append(full)

        def busy_until(at: float) -> float:
            """Seconds from the start of the window to ``at`` with every slot busy."""
            i = bisect.bisect_right(full_at, at) - 1
            return full_sum[i] + (at - full_at[i] if full_now[i] else 0.0)

        def mark_due(r: _Rel) -> None:
            """It passed a threshold at ``next_due``: the launcher lists it from now on."""
            r.due_at = r.next_due
            r.next_bucket = -1
            if not r.listed:
                r.listed = True
                bisect.insort(due, r, key=_INDEX)

        def launch(at: float) -> None:
            nonlocal pending_launch, launches, due, seq, drained
            if not free:
                pending_launch = True  # the next worker to exit wakes the launcher
                return
            launches += 1
            # What passed a threshold before this moment, in earlier buckets and this one.
            last = int(at / every)
            passed: Iterable[int] = range(drained, last)
            if last - drained > len(buckets):  # a long wait for a slot: fewer buckets than steps
                passed = sorted(k for k in buckets if k < last)
            for k in passed:
                for r in buckets.pop(k, ()):
                    if r.next_bucket == k:
                        mark_due(r)
            drained = last
            this = buckets.get(last)
            if this:
                later = []
                for r in this:
                    if r.next_bucket == last:
                        when = r.next_due
                        if when < at or (when == at and r.next_seq < current):
                            mark_due(r)
                        else:
                            later.append(r)
                buckets[last] = later
            kept = []
            for r in due:
                if r.due_at is None:
                    r.listed = False
                else:
                    kept.append(r)
            due = kept
            todo = [r for r in kept if not r.running]
            if todo:  # else the worker finds nothing to do and exits at once
                worker = _Worker(free.pop(), todo)
                slots_changed(at)
                next_table(worker, at)
            seq += 1
            # In danger (past its freeze limit by now), this database gets a worker at every
            # wake-up of the launcher; until then once per round of the databases. The
            # buckets keep the width of the first interval: they only index the crossings.
            push(events, (at + (wake if at >= danger_at else every), seq, None))

        def next_table(worker: _Worker, at: float) -> None:
            nonlocal pending_launch
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
                    if when > at or (when == at and r.next_seq > current):
                        continue  # done already, and not yet due again
                    mark_due(r)
                worker.position = position
                start_vacuum(worker, r, at)
                return
            free.append(worker.slot)
            slots_changed(at)
            if pending_launch:
                pending_launch = False
                launch(at)

        def start_vacuum(worker: _Worker, r: _Rel, at: float) -> None:
            nonlocal sharing, seq
            elapsed = at - r.since  # the counters brought forward (_Rel.advance, written out)
            if elapsed > 0:
                r.dead += r.dead_per_second * elapsed
                r.inserted += r.inserts_per_second * elapsed
                r.changes += r.changes_per_second * elapsed
                r.xid_age += xps * elapsed
                r.mxid_age += mxps * elapsed
                if r.live_per_second:
                    reltuples = r.reltuples + r.live_per_second * elapsed
                    r.reltuples = 0.0 if reltuples < 0.0 else reltuples
                r.since = at
            assert r.due_at is not None
            wait = at - r.due_at
            r.waited += wait
            if wait > r.max_wait:
                r.max_wait = wait
            if wait > 0 and len(full_at) > 1:  # else no slot has been busy yet
                r.waited_full += busy_until(at) - busy_until(r.due_at)
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
                advances
                and (xid_age > r.freeze_min_age or mxid_age > r.mxid_freeze_min_age)
                and not skips_unfrozen(r)
            )
            r.v_start = r.v_at = at
            r.v_done = r.v_speed = 0.0
            r.v_worker = worker
            r.running = True
            running.append(r)
            if r.balanced:
                sharing += 1
                if sharing > 1:
                    rebalance(at)  # the others' ends move too
                    return
                limit = solo_limit
            else:
                limit = r.own_limit
            # Alone in the balance, or out of it: the end as reschedule() gives it, none of the
            # vacuum done yet.
            length = work + 0.0 if nosleep else work + cost / limit * r.delay_ms / 1000.0
            r.v_speed = 1.0 / length if length > 0 else math.inf
            seq += 1
            r.v_version = seq
            push(events, (at + length, seq, r))

        def reschedule(r: _Rel, at: float, limit: float) -> None:
            """Bank the progress made at the old speed and schedule the end at the new one."""
            nonlocal seq
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
            seq += 1
            r.v_version = seq
            push(events, (at + (1.0 - done) * length, seq, r))

        def rebalance(at: float) -> None:
            """Re-split the cost limit among the balanced workers and move their ends."""
            limit = cost_limit / sharing if sharing > 1 else cost_limit
            if limit < 1.0:
                limit = 1.0
            for r in running:
                if r.balanced:
                    reschedule(r, at, limit)

        def finish(r: _Rel, at: float) -> None:
            nonlocal sharing, seq, unvacuumed
            running.remove(r)
            elapsed = at - r.since  # the counters brought forward (_Rel.advance, written out)
            if elapsed > 0:
                r.dead += r.dead_per_second * elapsed
                r.inserted += r.inserts_per_second * elapsed
                r.changes += r.changes_per_second * elapsed
                r.xid_age += xps * elapsed
                r.mxid_age += mxps * elapsed
                if r.live_per_second:
                    reltuples = r.reltuples + r.live_per_second * elapsed
                    r.reltuples = 0.0 if reltuples < 0.0 else reltuples
                r.since = at
            if r.dead > r.peak_dead:
                r.peak_dead = r.dead
            start, worker = r.v_start, r.v_worker
            assert worker is not None
            if not r.vacuums:
                unvacuumed -= 1
            r.vacuums += 1
            r.forced += r.v_forced
            r.starts.append(start)
            r.durations.append(at - start)
            span_workers.append(worker.slot)
            span_subjects.append(r.index)
            span_starts.append(start)
            span_ends.append(at)
            span_forced.append(r.v_forced)
            r.dead = COUNTED_DURING * r.dead_per_second * (at - start)
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
            when = _crossing(r, r.since, xps, mxps)
            if when <= end:
                seq += 1
                r.next_due = when = when if when > at else at
                r.next_seq = seq
                r.next_bucket = k = int(when / every)
                bucket = buckets.get(k)
                if bucket is None:
                    buckets[k] = [r]
                else:
                    bucket.append(r)
            else:
                r.next_bucket = -1
            if r.balanced:
                sharing -= 1
                if running:
                    rebalance(at)
            next_table(worker, at)

        first = launcher.first_launch_s
        seq += 1
        push(events, (every / 2 if first is None else first, seq, None))
        while events and not (first_starts and unvacuumed == 0):
            at, current, rel = pop(events)
            if at > end:
                break
            if rel is None:
                launch(at)
            elif rel.running and rel.v_version == current:  # else superseded or stale
                finish(rel, at)
        return rels, spans, launches

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


def simulate(subjects: list[Subject], launcher: Launcher, seconds: float) -> Outcome:
    """The autovacuums of ``subjects`` over ``seconds``."""
    return Simulator(subjects, launcher, seconds).run()


def first_starts(subjects: list[Subject], launcher: Launcher, seconds: float) -> dict[int, float]:
    """When each of ``subjects`` is first vacuumed within ``seconds``, by its ``order``: the
    first starts of simulate()'s tallies, in less time (Simulator.first_starts())."""
    return Simulator(subjects, launcher, seconds).first_starts()


def vacuum_threshold(subject: Subject, reltuples: float) -> float:
    threshold = subject.vacuum_base + subject.vacuum_scale * max(reltuples, 0.0)
    return threshold if subject.vacuum_cap is None else min(threshold, subject.vacuum_cap)


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


def skips_unfrozen(r: _Rel) -> bool:
    """Whether a normal vacuum starting now is expected to skip an all-visible page that is
    not all-frozen, which keeps relfrozenxid where it was (vacrel->skippedallvis).

    The pages still all-visible are those it left so, thinned by the changes since, taken as
    spread at random (as in :func:`_vacuum_cost`); of those, the all-frozen ones likewise. With
    a share p of pages all-visible, runs of SKIP_PAGES_THRESHOLD or more start at the first
    page with chance p^L and after each page that is not all-visible with chance (1 − p)·p^L;
    a run holds an unfrozen page unless its first L pages are all frozen, (f / p)^L. It is
    taken to skip one when at least half a run is expected. PostgreSQL 18's eager scanning
    of some all-visible pages is left out: it can only make advancing more likely."""
    pages = r.pages()
    eligible = pages - 1.0  # the last page is always read
    if eligible < duration.SKIP_PAGES_THRESHOLD:
        return False
    thinning = math.exp(-r.changes / pages)
    p = min(r.visible * thinning / pages, 1.0)
    if p <= 0.0:
        return False
    f = min(r.frozen * thinning / pages, p)
    runs = p**duration.SKIP_PAGES_THRESHOLD * (
        1.0 + (eligible - duration.SKIP_PAGES_THRESHOLD) * (1.0 - p)
    )
    return runs * (1.0 - (f / p) ** duration.SKIP_PAGES_THRESHOLD) >= 0.5


def clean_share(age_s: float) -> float:
    """The share of the pages a vacuum dirties that were clean when it reached them, for
    changes spread evenly over the last ``age_s`` seconds."""
    return min(max(age_s, 0.0) / _CLEAN_AFTER_S, 1.0)


def _vacuum_cost(r: _Rel, at: float, *, aggressive: bool) -> tuple[float, float]:
    """The unthrottled seconds and the cost of one vacuum starting at ``at``.

    Heap pages: an aggressive vacuum reads them all; a normal one skips runs of at least 32
    all-visible pages (heap_vac_scan_next_block() in vacuumlazy.c). Those it left all-visible
    lose the bit as rows on them are updated or deleted, and the pages read follow from the
    changes since (before the window too) and where they sit: model.duration.pages_read(),
    the advisor's model, which costs them too (duration.heap_cost()): only changed pages are
    dirtied, the ``clean`` share paying for it (see CHECKPOINT_S): the changes it finds go
    back to its last vacuum's end, or,
    before the first, as long as the dead tuples took to accrue at their rate. Indexes: unless
    fewer than 2 % of the pages hold dead tuples (the bypass, 14+) every index page is read
    once and those holding dead entries dirtied; then the heap pages that held dead tuples are
    visited a second time to free their dead items (lazy_vacuum_heap_rel()), already dirty by
    then."""
    if r.last_end is not None:
        age = at - r.last_end
    elif r.dead_per_second > 0:
        age = r.dead / r.dead_per_second
    else:
        age = math.inf
    clean = (0.0 if age < 0.0 else age) / _CLEAN_AFTER_S  # clean_share(), written out
    if clean > 1.0:
        clean = 1.0
    pages, then, now = r.base_pages, r.reltuples_then, r.reltuples  # _Rel.pages(), written out
    if then > 0 and now != then and now > 0:
        pages = pages * now / then
        if pages < 1.0:
            pages = 1.0
    if aggressive:
        heap = pages
    else:
        touched, inserted = r.changes, r.inserted
        heap = duration.pages_read(
            pages,
            counted=r.counted,
            skippable=r.visible,
            touched=touched,
            inserted=inserted,
            tuples_per_page=r.per_page,
            spread=duration.spread_of(touched, inserted),
        )
    cost = duration.heap_cost(
        heap,
        pages,
        touched=max(r.changes, r.dead),
        inserted=r.inserted,
        tuples_per_page=r.per_page,
        page_hit=r.page_hit,
        page_miss=r.page_hit,
        page_dirty=r.page_dirty,
        clean=clean,
    )
    index_read = 0.0
    dead = r.dead
    if r.indexed and dead >= 0.02 * pages:
        index_read = r.index_pages
        dirtied = index_read * (1.0 - math.exp(-dead / index_read))
        cost += (
            index_read * r.page_hit
            + duration.clean_after(clean, dead, dirtied) * dirtied * r.page_dirty
        )
        second = pages * (1.0 - math.exp(-dead / pages))
        cost += second * r.page_hit
        index_read += second
    work = duration.heap_work(
        heap,
        pages,
        touched=max(r.changes, r.dead),
        inserted=r.inserted,
        tuples_per_page=r.per_page,
        clean=clean,
        index=index_read,
    )
    return work, cost
