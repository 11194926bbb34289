"""Who holds the xmin horizon back, and whose tables they hold: pure rules on snapshot records.
The advisor and the live view both ask :func:`holding` and :func:`holds_here`, so they cannot
disagree on who holds.

Vacuum keeps every dead tuple that a snapshot may still see (GetOldestNonRemovableTransactionId
in procarray.c). ComputeXidHorizons() there decides whose horizon each holder lowers:

- a process running a lazy VACUUM (PROC_IN_VACUUM: an autovacuum worker's vacuum or a manual
  VACUUM) is left out of every horizon, although pg_stat_activity shows its backend_xmin;
  VACUUM FULL and CLUSTER do not set that flag, nor does an autovacuum worker's ANALYZE, so
  they hold (vacuum_rel() in vacuum.c sets it for lazy vacuums only);
- a backend or a prepared transaction holds back the user tables of its own database only; a
  walsender relaying a standby's feedback (PROC_AFFECTS_ALL_HORIZONS) holds every database;
- a replication slot's ``xmin`` holds every table, its ``catalog_xmin`` only the system
  catalogs.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from vacuumlab.records.snapshot import Backend, PreparedXact, ReplicationSlot, Snapshot

WALSENDER = "standby feedback (walsender)"
IDLE = "idle in transaction"
LONG = "long transaction"
ANALYZE = "autovacuum ANALYZE"
REWRITE = "table rewrite"


@dataclass(frozen=True, slots=True)
class Holding:
    """What pins a horizon somewhere in one snapshot: backends (no lazy vacuum among them),
    slots with an ``xmin`` or a ``catalog_xmin``, prepared transactions."""

    backends: tuple[Backend, ...]
    slots: tuple[ReplicationSlot, ...]
    prepared: tuple[PreparedXact, ...]


def holding(snapshot: Snapshot) -> Holding:
    """Everything in ``snapshot`` that holds back some horizon; :func:`holds_here` says whose."""
    vacuum_pids = {v.pid for v in snapshot.vacuums}
    return Holding(
        backends=tuple(b for b in snapshot.backends if not in_lazy_vacuum(b, vacuum_pids)),
        slots=tuple(s for s in snapshot.slots if s.xmin_age or s.catalog_xmin_age),
        prepared=tuple(snapshot.prepared),
    )


def holds_here(holder: Backend | ReplicationSlot | PreparedXact, database: str) -> bool:
    """Whether ``holder`` holds back the user tables of ``database``."""
    if isinstance(holder, Backend):
        return holds_database(holder, database)
    if isinstance(holder, ReplicationSlot):
        return slot_holds_tables(holder)
    return prepared_holds(holder, database)


def in_lazy_vacuum(b: Backend, vacuum_pids: AbstractSet[int]) -> bool:
    """Whether a backend runs a lazy VACUUM, and so holds nobody back. The backends query
    says so itself; a snapshot saved before it did falls back on the pids of
    ``pg_stat_progress_vacuum``, read by another statement."""
    if b.in_lazy_vacuum is not None:
        return b.in_lazy_vacuum
    return b.pid in vacuum_pids


def backend_kind(b: Backend) -> str:
    """A holding backend's kind: standby feedback, a table rewrite, an autovacuum worker's
    ANALYZE, idle in a transaction, or at work."""
    if b.backend_type == "walsender":
        return WALSENDER
    if b.rewriting:
        return REWRITE
    if b.backend_type == "autovacuum worker":
        return ANALYZE  # a worker not in a lazy vacuum is analysing (or between tables)
    if b.state and b.state.startswith("idle in transaction"):
        return IDLE
    return LONG


def holds_database(b: Backend, database: str) -> bool:
    """Whether a backend holds back ``database``'s user tables: those of its own database, or
    all of them when it has none or relays standby feedback."""
    return b.database is None or b.database == database or b.backend_type == "walsender"


def slot_kind(s: ReplicationSlot) -> str:
    """What a slot pins: ``xmin`` (standby feedback, every table) or ``catalog_xmin``
    (logical decoding, the catalogs only)."""
    return "replication slot xmin" if s.xmin_age else "replication slot catalog_xmin"


def slot_holds_tables(s: ReplicationSlot) -> bool:
    """A slot holds user tables back through its ``xmin`` only."""
    return bool(s.xmin_age)


def prepared_holds(p: PreparedXact, database: str) -> bool:
    """A prepared transaction holds back the user tables of its own database."""
    return p.database == database
