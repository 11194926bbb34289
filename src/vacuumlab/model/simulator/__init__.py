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

Analyze-only visits, horizon holders and other databases' work are not simulated.

The package: ``records`` (what goes in and comes out), ``relation`` (a relation inside the
loop), ``cost`` (one vacuum's cost), ``loop`` (the events and their handlers).
"""

from __future__ import annotations

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
    Launcher,
    Outcome,
    Span,
    Spans,
    Subject,
    Tally,
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
    "Launcher",
    "Outcome",
    "Simulator",
    "Span",
    "Spans",
    "Subject",
    "Tally",
    "clean_share",
    "dead_after_vacuum",
    "first_starts",
    "simulate",
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
