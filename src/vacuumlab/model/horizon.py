"""Who holds the xmin horizon back, and whose tables they hold: pure rules on snapshot records.

Vacuum keeps every dead tuple that a snapshot may still see (GetOldestNonRemovableTransactionId
in procarray.c). ComputeXidHorizons() there decides whose horizon each holder lowers: a backend
or a prepared transaction holds back the user tables of its own database only; a walsender
relaying a standby's feedback (PROC_AFFECTS_ALL_HORIZONS) holds every database; a replication
slot's ``xmin`` holds every table, its ``catalog_xmin`` only the system catalogs.
"""

from __future__ import annotations

from vacuumlab.records.snapshot import Backend, PreparedXact, ReplicationSlot

WALSENDER = "standby feedback (walsender)"
IDLE = "idle in transaction"
LONG = "long transaction"


def backend_kind(b: Backend) -> str:
    """A backend's kind of holder: standby feedback, idle in a transaction, or at work."""
    if b.backend_type == "walsender":
        return WALSENDER
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


def vacuuming(b: Backend, vacuum_pids: set[int]) -> bool:
    """A backend running a lazy VACUUM (a worker's or a manual one) holds nobody back: other
    backends leave PROC_IN_VACUUM out of their horizon (ComputeXidHorizons() in procarray.c)."""
    return b.pid in vacuum_pids
