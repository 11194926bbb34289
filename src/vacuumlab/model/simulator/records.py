"""What the simulation takes and gives: a relation as it sees it (:class:`Subject`), the
server's side (:class:`Launcher`), and what happened (:class:`Tally`, :class:`Span`,
:class:`Outcome`); for several databases at once, each with its relations
(:class:`ClusterDatabase`), and what happened across them (:class:`Visit`,
:class:`Waited`, :class:`Cluster`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

#: The launcher's shortest sleep (MIN_AUTOVAC_SLEEPTIME, 100 ms, in autovacuum.c).
MIN_SLEEP_S: Final = 0.1
#: Before PostgreSQL 14, of the tuples that die while a vacuum runs, the share its final report
#: counts: those on pages it had not reached yet, dead after its OldestXmin, which it finds
#: recently dead. Those on pages already behind it are reported by the backends, and
#: pgstat_report_vacuum() overwrites what they reported meanwhile.
COUNTED_DURING: Final = 0.5
#: From 14 a vacuum prunes with GlobalVisState (heap_page_prune_and_freeze() in pruneheap.c),
#: which moves on while it runs: what dies meanwhile on pages ahead of it is removed too, and
#: its report overwrites what the backends counted meanwhile. n_dead_tup then starts again
#: from the backends' changes that reach the statistics after the report: those not flushed
#: yet, up to a second of them (PGSTAT_MIN_INTERVAL), half a second on average. Measured on
#: PostgreSQL 18: 0.15 to 0.4 s of the table's rate after autovacuums of 1.3 to 23 s (a
#: 100,000-row table updated 4,112 times a second held 1,604 dead tuples a second after its
#: 23-s vacuum ended, not half of the 96,000 that died), 0.85 s after a manual one
#: (tests/test_rates_hot.py).
FLUSHED_AFTER_S: Final = 0.5


def dead_after_vacuum(rate: float, seconds: float, *, prunes: bool = True) -> float:
    """``n_dead_tup`` as a vacuum of ``seconds`` leaves it, for a relation whose dead tuples
    come at ``rate`` a second: from 14 (``prunes``) what the backends flush after its report,
    before 14 the share of those that died meanwhile it found recently dead."""
    if prunes:
        return rate * min(FLUSHED_AFTER_S, seconds)
    return COUNTED_DURING * rate * seconds


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
    #: (model.pages.page_changes()); ``tuples_per_page`` places the inserts.
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
    prunes_during: bool = True  # 14+: a vacuum removes what dies while it runs (dead_after_vacuum)
    # Read by simulate_cluster() only, which takes each database's ages instead of the three
    # fields above that describe one database (databases, in_danger, danger_in_s): a
    # database whose datfrozenxid age is past autovacuum_freeze_max_age, or its datminmxid
    # age past MultiXactMemberFreezeThreshold() (the multixact setting, lower under member
    # space pressure), is chosen ahead of its turn (do_start_worker()).
    freeze_max_age: float = 200_000_000.0
    multixact_freeze_max_age: float = 400_000_000.0

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


def vacuum_threshold(subject: Subject, reltuples: float) -> float:
    threshold = subject.vacuum_base + subject.vacuum_scale * max(reltuples, 0.0)
    return threshold if subject.vacuum_cap is None else min(threshold, subject.vacuum_cap)


@dataclass(frozen=True, slots=True)
class ClusterDatabase:
    """One database of the server and its relations, for simulate_cluster(). Give every
    database the launcher visits, one with nothing to vacuum too (``postgres``, ``template1``
    with ``datallowconn``): each takes its turn in the launcher's round."""

    name: str
    subjects: Sequence[Subject]
    frozenxid_age: float = 0.0  # age(datfrozenxid)
    minmxid_age: float = 0.0  # mxid_age(datminmxid)


class Visit(NamedTuple):
    """A worker the launcher started: when, in which database, whether that database was
    chosen ahead of its turn for being past a freeze limit, and whether the worker found a
    relation to vacuum (else it exits at once and holds no slot)."""

    at: float
    database: str
    wraparound: bool
    worked: bool


class Waited(NamedTuple):
    """One relation's waits for a worker over the window, and, of the seconds it waited with
    every worker slot busy, the slot-seconds each database's workers held then (they add up
    to ``waited_full`` × the slots)."""

    database: str
    label: str
    subject: int  # its index into Cluster.outcome.subjects
    vacuums: int
    waited: float
    waited_full: float
    max_wait: float
    held_by: dict[str, float]


@dataclass(slots=True)
class Cluster:
    """What happened in every database over the window. ``outcome`` holds every database's
    relations as one run (its tallies, spans and launches count all of them), grouped by
    database in the order given, each group in its workers' list order."""

    outcome: Outcome
    names: list[str]  # the databases, in the order given (pg_database's)
    placed: list[int]  # by subject index: its database, an index into names
    visits: list[Visit]
    # By subject index, for the relations that waited with every slot busy: the slot-seconds
    # each database (by index into names) held meanwhile.
    held: dict[int, list[float]]

    def database(self, index: int) -> str:
        """The database of ``outcome.subjects[index]``."""
        return self.names[self.placed[index]]

    def find(self, database: str, label: str) -> int | None:
        """The subject index of ``label`` in ``database``; None if not there."""
        for index, s in enumerate(self.outcome.subjects):
            if s.label == label and self.database(index) == database:
                return index
        return None

    def waited(self, index: int) -> Waited:
        """How long ``outcome.subjects[index]`` waited for a worker, and who held the slots."""
        tally = self.outcome.tally(index)
        held = self.held.get(index)
        held_by = {} if held is None else {n: s for n, s in zip(self.names, held, strict=True) if s}
        return Waited(
            self.database(index), self.outcome.subjects[index].label, index, tally.vacuums,
            tally.waited, tally.waited_full, tally.max_wait, held_by,
        )  # fmt: skip

    def waits(self) -> list[Waited]:
        """Every relation that passed a threshold in the window, longest wait first."""
        found = [self.waited(index) for index in self.outcome.active]
        return sorted(found, key=lambda w: (-w.waited, w.subject))

    def slot_seconds(self) -> dict[str, float]:
        """Worker-seconds each database's vacuums took over the window: a worker holds its
        slot while it works through its list, one vacuum straight after the other."""
        taken = dict.fromkeys(self.names, 0.0)
        seconds, columns = self.outcome.seconds, self.outcome.columns
        for subject, start, end in zip(columns.subjects, columns.starts, columns.ends, strict=True):
            taken[self.database(subject)] += min(end, seconds) - start
        return taken
