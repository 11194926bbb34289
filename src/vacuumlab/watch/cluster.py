"""The server-wide parts of a refresh: workers and their cost limit, who holds the horizon
back, and the oldest ages against the wraparound limits. Pure: records and model only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from vacuumlab.errors import VacuumlabError
from vacuumlab.model import balance, forcing
from vacuumlab.model import cost as cm
from vacuumlab.model import horizon as hm
from vacuumlab.model.thresholds import options_of
from vacuumlab.records.live import Holder, Workers, Wraparound
from vacuumlab.records.snapshot import Database, Relation, Snapshot

Counter = Literal["xid", "mxid"]


#: Transactions younger than this are left out of the holders (see _momentary).
MOMENTARY_S: Final = 1.0


def sharing(snapshot: Snapshot) -> int:
    """Running autovacuums that split the cost limit (av_nworkersForBalance): all but those
    on relations with cost settings of their own."""
    if not balance.busy_workers(snapshot.workers, snapshot.vacuums):
        return 0  # nothing running: no need to read every relation's options
    own = {
        rel.oid
        for table in snapshot.tables
        for rel in (table.heap, table.toast)
        if rel is not None and balance.has_own_cost(options_of(table, rel))
    }
    return balance.balanced_workers(snapshot.vacuums, own, snapshot.workers)


def workers(snapshot: Snapshot, server: Mapping[str, str], shared: int) -> Workers:
    """Busy, available, and the share of the cost limit each balanced worker gets."""
    try:
        base: cm.CostSettings | None = cm.CostSettings.for_autovacuum(server)
    except VacuumlabError:
        base = None  # the snapshot lacks the cost settings
    return Workers(
        busy=balance.busy_workers(snapshot.workers, snapshot.vacuums),
        available=balance.available_workers(server, snapshot.server.version_num),
        sharing=shared,
        cost_limit=base.limit if base else None,
        cost_limit_each=cm.worker_limit(base, max(shared, 1)) if base else None,
        cost_delay_ms=base.delay_ms if base else None,
    )


def holders(snapshot: Snapshot) -> list[Holder]:
    """Backends, slots and prepared transactions that pin a horizon (model/horizon.py decides
    which), oldest first."""
    here, now = snapshot.server.database, snapshot.taken_at
    held = hm.holding(snapshot)
    found = [
        Holder(
            kind=hm.backend_kind(b),
            name=f"pid {b.pid}",
            database=b.database,
            user_name=b.user_name,
            age_s=_since(b.xact_start, now),
            xid_age=b.xmin_age,
            holds_here=hm.holds_here(b, here),
        )
        for b in held.backends
        if not _momentary(b.xact_start, now)
    ]
    found += [
        Holder(
            kind=hm.slot_kind(s),
            name=s.slot_name,
            database=s.database,
            xid_age=max(s.xmin_age or 0, s.catalog_xmin_age or 0) or None,
            holds_here=hm.holds_here(s, here),
        )
        for s in held.slots
    ]
    found += [
        Holder(
            kind="prepared transaction",
            name=p.gid,
            database=p.database,
            user_name=p.owner,
            age_s=_since(p.prepared, now),
            xid_age=p.xid_age,
            holds_here=hm.holds_here(p, here),
        )
        for p in held.prepared
    ]
    return sorted(found, key=lambda h: (-(h.xid_age or -1), -(h.age_s or 0.0), h.name))


@dataclass(frozen=True, slots=True)
class Oldest:
    """This database's relation with the oldest age of one counter: it, its label and the
    freeze limits autovacuum applies to it."""

    relation: Relation
    label: str
    freeze: forcing.FreezeLimits


def wraparound(
    snapshot: Snapshot, server: Mapping[str, str], oldest: Mapping[Counter, Oldest | None]
) -> list[Wraparound]:
    """Both counters: the cluster's oldest database and this database's ``oldest`` relation
    (the first of the oldest in the snapshot's order; None without relations) against their
    limits."""
    return [_counter(snapshot, server, oldest.get(c), c) for c in ("xid", "mxid")]


def _counter(
    snapshot: Snapshot, server: Mapping[str, str], oldest: Oldest | None, counter: Counter
) -> Wraparound:
    age = forcing.oldest_age(snapshot.databases, counter)
    oldest_db = next((db.name for db in snapshot.databases if _db_age(db, counter) == age), None)
    limits = forcing.freeze_limits(server, {})
    failsafe = forcing.failsafe_age(
        server, multixact=counter == "mxid", version_num=snapshot.server.version_num
    )
    found = Wraparound(
        counter=counter,
        age=age,
        database=oldest_db,
        forcing_age=limits.xid if counter == "xid" else limits.mxid,
        failsafe_age=None if failsafe == float("inf") else failsafe,
    )
    if oldest is None:
        return found
    rel, freeze = oldest.relation, oldest.freeze
    own = freeze.xid_own if counter == "xid" else freeze.mxid_own
    limit = freeze.xid if counter == "xid" else freeze.mxid
    return found.model_copy(
        update={
            "table": oldest.label,
            "table_age": (rel.frozenxid_age if counter == "xid" else rel.minmxid_age) or 0,
            "table_forcing_age": limit if own else None,
        }
    )


def _db_age(db: Database, counter: Counter) -> int:
    return db.frozenxid_age if counter == "xid" else db.minmxid_age


def _momentary(started: datetime | None, now: datetime) -> bool:
    """A backend whose transaction began under MOMENTARY_S ago: a busy client between two
    statements, or mid-statement, holds the horizon for less than any vacuum takes; a busy
    server has many of those at every refresh, and listing them would hide the one that
    matters. One that stays shows from the next refresh on."""
    since = _since(started, now)
    return since is not None and since < MOMENTARY_S


def _since(moment: datetime | None, now: datetime) -> float | None:
    return None if moment is None else max(0.0, (now - moment).total_seconds())
