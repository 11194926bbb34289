"""Several databases in one simulation: the launcher's round of the databases, and the worker
slots and cost limit their workers share.

:class:`ClusterSimulator` runs the relations of every database through the loop of
``loop.py``; :class:`_ClusterLoop` replaces its launch (one database, on a fixed schedule)
with the launcher of autovacuum.c, which keeps a time per database for its next worker:

- **The database list** (rebuild_database_list()): the databases spread evenly over one
  naptime, ``naptime / databases`` apart, or 110 ms apart when that would be 100 ms or less.
  The list runs from the latest time (head) to the earliest (tail). Rebuilt when the launcher
  finds its tail's time past with a slot free (launcher_determine_sleep()): the databases get
  new times in the list's order from its head, so the one it visited last comes first.
- **The launcher** sleeps until the tail's time, never under 100 ms (MIN_AUTOVAC_SLEEPTIME);
  with every slot busy until a worker exits. Woken with the tail's time come and a slot free,
  it starts a worker (launch_worker()) in the database do_start_worker() chooses: one past
  autovacuum_freeze_max_age, the oldest datfrozenxid first, ahead of any other; else one past
  the multixact limit, the oldest datminmxid first; else, of the databases whose next time is
  not in the naptime ahead, the one visited least recently. That database's next time becomes
  a naptime from now, at the head of the list.
- **A worker** lists the relations of its own database only (do_autovacuum()) and exits when
  its list is done; its slot, the cost balance and the xid and multixact rates are the
  server's, shared by every database.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import replace
from heapq import heappush

from vacuumlab.model.simulator.loop import Simulator, _listed_order, _Loop
from vacuumlab.model.simulator.records import (
    MIN_SLEEP_S,
    Cluster,
    ClusterDatabase,
    Launcher,
    Outcome,
    Subject,
    Visit,
)
from vacuumlab.model.simulator.relation import _Rel, _Worker


def spacing(naptime_s: float, databases: int) -> float:
    """Seconds between two databases' times in a rebuilt list: naptime / databases in whole
    milliseconds (``int millis_increment``), 110 ms (MIN_AUTOVAC_SLEEPTIME × 1.1) when that
    is 100 ms or less (rebuild_database_list())."""
    millis = math.floor(1000.0 * naptime_s / max(databases, 1))
    return 1.1 * MIN_SLEEP_S if millis <= 1000.0 * MIN_SLEEP_S else millis / 1000.0


def _past_at(age: float, limit: float, per_second: float) -> float:
    """When an age growing at ``per_second`` is past ``limit``: −inf if it is already, inf if
    never. The database's age is taken to stay its oldest relation's: a vacuum that moves
    datfrozenxid back is not followed."""
    if age > limit:
        return -math.inf
    return (limit - age) / per_second if per_second > 0 else math.inf


class ClusterSimulator(Simulator):
    """Runs the relations of ``databases`` (in pg_database's order) under ``launcher`` for
    ``seconds``; :meth:`run_cluster` says what happened in each. The relations are placed
    database by database, each database's in its workers' list order; :meth:`run` gives the
    outcome alone (:meth:`first_starts` keys by oid, which can repeat across databases)."""

    def __init__(
        self, databases: Sequence[ClusterDatabase], launcher: Launcher, seconds: float
    ) -> None:
        if not databases:
            raise ValueError("a cluster needs at least one database")
        placed = sorted(
            ((d, s) for d, db in enumerate(databases) for s in db.subjects),
            key=lambda pair: (pair[0], *_listed_order(pair[1])),
        )
        self.databases = list(databases)
        self.placed = [d for d, _ in placed]
        self.step = spacing(launcher.naptime_s, len(databases))
        first = launcher.first_launch_s
        self.first = self.step / 2 if first is None else first
        self.server = launcher
        # The loop's own schedule (one database, a worker every naptime) is replaced by the
        # launcher's round; it keeps the first wake-up, and a bucket per naptime.
        self.subjects: list[Subject] = [s for _, s in placed]
        self.launcher = replace(
            launcher, databases=1, in_danger=False, danger_in_s=None, first_launch_s=self.first
        )
        self.end = seconds

    def run_cluster(self) -> Cluster:
        loop = self._loop(first_starts=False)
        tallies = self._tallies(loop.rels)
        outcome = Outcome(self.subjects, tallies, loop.spans, loop.launches, self.end)
        names = [db.name for db in self.databases]
        visits = [Visit(at, names[d], wrap, worked) for at, d, wrap, worked in loop.visits]
        return Cluster(outcome, names, self.placed, visits, loop.held)

    def _loop(self, *, first_starts: bool) -> _ClusterLoop:
        buckets: dict[int, list[_Rel]] = {}
        rels = self._relations(buckets, self.launcher.launch_every_s)
        loop = _ClusterLoop(self, rels, buckets)
        loop.run(first_starts=first_starts)
        return loop


class _ClusterLoop(_Loop):
    """The loop with the launcher's round of the databases (:meth:`launch` is its wake-up)
    and an account of the slots each database's workers hold while every slot is busy."""

    __slots__ = (
        "db_of", "frozen", "held", "held_at", "held_now", "held_sum", "last_visit", "minmxid",
        "mxid_past_at", "naptime", "next_worker", "order", "slot_db", "step", "visits",
        "xid_past_at",
    )  # fmt: skip

    def __init__(
        self, sim: ClusterSimulator, rels: list[_Rel], buckets: dict[int, list[_Rel]]
    ) -> None:
        super().__init__(sim.launcher, sim.end, rels, buckets)  # its first wake-up: sim.first
        server, databases, count = sim.server, sim.databases, len(sim.databases)
        self.naptime, self.step = server.naptime_s, sim.step
        self.db_of = sim.placed  # by relation index: its database
        # The list as rebuilt at the start of the window, databases in pg_database's order,
        # the first due at the first wake-up; each last visited a naptime before its time.
        self.next_worker = [sim.first + d * sim.step for d in range(count)]
        self.last_visit = [at - self.naptime for at in self.next_worker]
        self.order = list(range(count - 1, -1, -1))  # head (latest time) to tail
        xps, mxps = server.xids_per_second, server.mxids_per_second
        self.frozen = [db.frozenxid_age for db in databases]
        self.minmxid = [db.minmxid_age for db in databases]
        self.xid_past_at = [_past_at(a, server.freeze_max_age, xps) for a in self.frozen]
        limit = server.multixact_freeze_max_age
        self.mxid_past_at = [_past_at(a, limit, mxps) for a in self.minmxid]
        self.visits: list[tuple[float, int, bool, bool]] = []
        self.slot_db = [0] * server.workers  # the database of the worker in each slot
        # While every slot is busy, the slots each database holds, as steps: from held_at[i]
        # on, held_sum[i] slot-seconds so far, held_now[i] slots (None: one is free).
        self.held_at: list[float] = [0.0]
        self.held_sum: list[list[float]] = [[0.0] * count]
        self.held_now: list[list[int] | None] = [None]
        self.held: dict[int, list[float]] = {}  # by relation index (Cluster.held)

    def launch(self, at: float) -> None:
        """The launcher wakes: its sleep is over, or a worker exited while it waited for a
        slot. With the tail's time come and a slot free it starts a worker, then sleeps."""
        if not self.free:
            self.pending_launch = True  # the next worker to exit wakes it
            return
        if self.next_worker[self.order[-1]] <= at:
            self.launch_worker(at)
        self.sleep(at)

    def launch_worker(self, at: float) -> None:
        """launch_worker(): a worker for the database do_start_worker() picks, whose next
        time becomes a naptime from now, at the head of the list."""
        d, wraparound = self.choose(at)
        self.launches += 1
        self.last_visit[d] = at  # the worker reports it on connecting (pgstat_report_autovac())
        self.visits.append((at, d, wraparound, self.start_worker(d, at)))
        self.next_worker[d] = at + self.naptime
        self.order.remove(d)
        self.order.insert(0, d)

    def choose(self, at: float) -> tuple[int, bool]:
        """do_start_worker(): the database past autovacuum_freeze_max_age with the oldest
        datfrozenxid; else the one past the multixact limit with the oldest datminmxid; else,
        skipping those whose next time falls within the naptime ahead, the one visited least
        recently. The second value says whether it was chosen for wraparound."""
        for past_at, ages in ((self.xid_past_at, self.frozen), (self.mxid_past_at, self.minmxid)):
            oldest = -1
            for d, when in enumerate(past_at):
                if at > when and (oldest < 0 or ages[d] > ages[oldest]):
                    oldest = d  # ages grow alike: the oldest now was the oldest at the start
            if oldest >= 0:
                return oldest, True
        naptime, last_visit, chosen = self.naptime, self.last_visit, -1
        for d, when in enumerate(self.next_worker):
            if at < when and when - at < naptime:
                continue  # visited within the last naptime
            if chosen < 0 or last_visit[d] < last_visit[chosen]:
                chosen = d
        assert chosen >= 0  # the tail's time has come: it is never skipped
        return chosen, False

    def start_worker(self, d: int, at: float) -> bool:
        """A worker in database ``d`` lists its relations that need a vacuum now and takes
        the first; False if it finds none and exits at once, holding no slot."""
        kept = self.listed_now(at)
        db_of = self.db_of
        todo = [r for r in kept if not r.running and db_of[r.index] == d]
        if not todo:
            return False
        slot = self.free.pop()
        self.slot_db[slot] = d
        self.slots_changed(at)
        self.next_table(_Worker(slot, todo), at)
        return True

    def sleep(self, at: float) -> None:
        """launcher_determine_sleep(): until the tail's time, never under 100 ms. A time
        already past, with a slot free, rebuilds the list first; with every slot busy the
        launcher waits for a worker to exit."""
        when = self.next_worker[self.order[-1]]
        if when <= at:
            if not self.free:
                self.pending_launch = True
                return
            self.rebuild(at)
            when = self.next_worker[self.order[-1]]
        if when - at <= MIN_SLEEP_S:
            when = at + MIN_SLEEP_S
        self.seq += 1
        heappush(self.events, (when, self.seq, None))

    def rebuild(self, at: float) -> None:
        """rebuild_database_list(): new times ``step`` apart from now, given in the list's
        order from its head (the lowest score, the earliest time), which turns it around."""
        step, when = self.step, at
        for d in self.order:
            when += step
            self.next_worker[d] = when
        self.order.reverse()

    def slots_changed(self, at: float) -> None:
        """A slot was taken or given back: note, while every slot is busy, which databases
        hold them."""
        super().slots_changed(at)
        now = self.held_now[-1]
        total = self.held_sum[-1]
        if now is not None:
            elapsed = at - self.held_at[-1]
            total = [held + elapsed * slots for held, slots in zip(total, now, strict=True)]
        busy: list[int] | None = None
        if not self.free:
            busy = [0] * len(total)
            for d in self.slot_db:
                busy[d] += 1
        if now is None and busy is None:
            return  # a slot free before and after: nothing to count
        self.held_at.append(at)
        self.held_sum.append(total)
        self.held_now.append(busy)

    def held_until(self, at: float) -> list[float]:
        """Per database, the slot-seconds its workers held while every slot was busy, from the
        start of the window to ``at``."""
        i = bisect.bisect_right(self.held_at, at) - 1
        total, now = self.held_sum[i], self.held_now[i]
        if now is None:
            return total
        elapsed = at - self.held_at[i]
        return [held + elapsed * slots for held, slots in zip(total, now, strict=True)]

    def start_vacuum(self, worker: _Worker, r: _Rel, at: float) -> None:
        """As the loop's, and, for a relation that waited, whose workers held the slots."""
        due = r.due_at
        if due is not None and at > due and len(self.held_at) > 1:
            before, after = self.held_until(due), self.held_until(at)
            gained = [a - b for a, b in zip(after, before, strict=True)]
            if any(gained):
                held = self.held.get(r.index)
                if held is None:
                    self.held[r.index] = gained
                else:
                    for d, seconds in enumerate(gained):
                        held[d] += seconds
        super().start_vacuum(worker, r, at)
