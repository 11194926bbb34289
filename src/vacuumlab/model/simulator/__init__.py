"""A discrete-event simulation of the autovacuum launcher and its workers, in one database
(:func:`simulate`) or in several at once (:func:`simulate_cluster`).

What it follows of PostgreSQL (src/backend/postmaster/autovacuum.c):

- **The launcher** sends a worker to each database once per ``autovacuum_naptime``; with
  several databases it wakes every ``naptime / databases``, never more often than every 100 ms
  (``MIN_AUTOVAC_SLEEPTIME``; launcher_determine_sleep(), rebuild_database_list()). A database
  whose ``datfrozenxid`` is past ``autovacuum_freeze_max_age`` is chosen first
  (do_start_worker()), so it gets a worker at every wake-up. With every slot busy the launcher
  waits; a worker that exits wakes it (FreeWorkerInfo() signals it), and the schedule goes on
  from that launch. :func:`simulate` follows one database, the others a count that spaces
  its visits and takes no slot; :func:`simulate_cluster` follows every database given, each
  with its relations, through the launcher's database list and do_start_worker()'s choice
  (``cluster``): their workers share the slots and the cost balance, so one database's
  relations wait on slots another database's vacuums hold.
- **Worker slots**: ``model.balance.available_workers``, the server's, for every database.
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
  holds what the backends flush after its report (from 14, ``dead_after_vacuum()``: the vacuum
  removed what died while it ran) or what it found recently dead (before 14,
  ``COUNTED_DURING``), and the insert counter restarts (pgstat_report_vacuum()).
  ``reltuples`` follows the live-tuple rate, so thresholds move as a table grows.
- **Wraparound**: a relation's xid age grows with the server's transaction rate, its
  multixact age with the multixact rate; past either freeze limit it is forced
  (``model.forcing``) even with autovacuum off, and past either failsafe age its vacuum runs
  unthrottled. An aggressive vacuum
  brings its age back to ``vacuum_freeze_min_age``. Since PostgreSQL 15 a normal one does too,
  unless it skipped an all-visible page that was not all-frozen (:func:`skips_unfrozen`).

Analyze-only visits and horizon holders are not simulated, nor a vacuum moving a database's
``datfrozenxid`` back (once past its freeze limit it stays so); other databases' work is
when they are given to :func:`simulate_cluster`.

The package: ``records`` (what goes in and comes out), ``relation`` (a relation inside the
loop), ``cost`` (one vacuum's cost), ``loop`` (the events and their handlers), ``cluster``
(the launcher's round of several databases).
"""

from __future__ import annotations

from collections.abc import Sequence

from vacuumlab.model.simulator.cluster import ClusterSimulator
from vacuumlab.model.simulator.cost import (
    CHECKPOINT_S,
    FIXED_S,
    PAGE_S,
    clean_share,
    skips_unfrozen,
)
from vacuumlab.model.simulator.loop import Simulator
from vacuumlab.model.simulator.records import (
    COUNTED_DURING,
    FLUSHED_AFTER_S,
    MIN_SLEEP_S,
    Cluster,
    ClusterDatabase,
    Launcher,
    Outcome,
    Span,
    Spans,
    Subject,
    Tally,
    Visit,
    Waited,
    dead_after_vacuum,
    vacuum_threshold,
)

__all__ = [
    "CHECKPOINT_S",
    "COUNTED_DURING",
    "FIXED_S",
    "FLUSHED_AFTER_S",
    "MIN_SLEEP_S",
    "PAGE_S",
    "Cluster",
    "ClusterDatabase",
    "Launcher",
    "Outcome",
    "Simulator",
    "Span",
    "Spans",
    "Subject",
    "Tally",
    "Visit",
    "Waited",
    "clean_share",
    "dead_after_vacuum",
    "first_starts",
    "simulate",
    "simulate_cluster",
    "skips_unfrozen",
    "vacuum_threshold",
]


def simulate(subjects: list[Subject], launcher: Launcher, seconds: float) -> Outcome:
    """The autovacuums of ``subjects`` over ``seconds``."""
    return Simulator(subjects, launcher, seconds).run()


def first_starts(subjects: list[Subject], launcher: Launcher, seconds: float) -> dict[int, float]:
    """When each of ``subjects`` is first vacuumed within ``seconds``, by its ``order``: the
    first starts of simulate()'s tallies, in less time (Simulator.first_starts())."""
    return Simulator(subjects, launcher, seconds).first_starts()


def simulate_cluster(
    databases: Sequence[ClusterDatabase], launcher: Launcher, seconds: float
) -> Cluster:
    """The autovacuums of every database's relations over ``seconds``, one launcher and one
    set of worker slots for them all. ``databases`` in pg_database's order (the launcher's
    first round follows it); ``launcher`` is the server's, its ``databases``, ``in_danger``
    and ``danger_in_s`` left unread (each database's ages and the launcher's freeze limits
    say when it is in danger)."""
    return ClusterSimulator(databases, launcher, seconds).run_cluster()
