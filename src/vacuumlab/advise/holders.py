"""Evidence that a horizon holder matters: it holds the SAME horizon in both snapshots, and
for longer than a vacuum cycle.

A busy client sits "idle in transaction" for a moment between two statements, and a query
at work holds a snapshot while it runs: both pin the horizon for far less than the time
autovacuum takes to come back to a table, so no vacuum is held back by them. Only a holder
seen holding the same horizon (same pid and backend_xmin/xid, same prepared gid and xid, same
slot xmin) in both snapshots, for longer than a vacuum cycle, is evidence.
"""

from __future__ import annotations

from collections.abc import Hashable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import datetime

from vacuumlab.advise.context import Context
from vacuumlab.records.snapshot import Backend, PreparedXact, ReplicationSlot


@dataclass(frozen=True, slots=True)
class Held:
    """How long a holder has held one horizon, as far as the snapshots tell."""

    since: datetime | None  # when it began holding it, when known
    seconds: float | None  # how long it has held it, at the later snapshot
    persisted: bool | None  # the same horizon in both snapshots; None with one snapshot

    def counts(self, cycle: float) -> bool:
        """Evidence enough: seen in both snapshots, held for longer than a vacuum cycle."""
        return bool(self.persisted) and (self.seconds or 0.0) > cycle


def vacuum_cycle(ctx: Context) -> float:
    """The shortest time in which autovacuum comes back to a table: the launcher visits each
    database once per naptime (launcher_determine_sleep() in autovacuum.c). A holder for less
    than that has not kept any vacuum from its dead tuples."""
    return ctx.setting("autovacuum_naptime", 60.0)


def backend(ctx: Context, b: Backend) -> Held:
    key = _backend_key(b)
    return _held(ctx, b.xact_start, key, {_backend_key(x) for x in ctx.snapshot.backends})


def prepared(ctx: Context, p: PreparedXact) -> Held:
    key = (p.gid, p.xid)
    return _held(ctx, p.prepared, key, {(x.gid, x.xid) for x in ctx.snapshot.prepared})


def slot(ctx: Context, s: ReplicationSlot) -> Held:
    """A slot carries no timestamp: it has held its horizon since the first snapshot at least."""
    key = (s.slot_name, s.xmin, s.catalog_xmin)
    earlier = {(x.slot_name, x.xmin, x.catalog_xmin) for x in ctx.snapshot.slots}
    since = ctx.snapshot.taken_at if ctx.later is not None and key in earlier else None
    return _held(ctx, since, key, earlier)


def _backend_key(b: Backend) -> Hashable:
    return (b.pid, b.backend_xmin, b.backend_xid, b.xact_start)


def _held(
    ctx: Context, since: datetime | None, key: Hashable, earlier: AbstractSet[Hashable]
) -> Held:
    seconds = None if since is None else max(0.0, (ctx.now.taken_at - since).total_seconds())
    persisted = None if ctx.later is None else key in earlier
    return Held(since=since, seconds=seconds, persisted=persisted)


def missing(held: Held, cycle: float) -> str:
    """What evidence is missing before this holder can be blamed, or "" when none is."""
    if held.persisted is None:
        return (
            "One snapshot cannot tell a holder from a client caught between two statements: "
            "advise with --interval to see whether it holds the same horizon for longer than "
            f"a vacuum cycle (autovacuum_naptime, {cycle:g} s)."
        )
    if not held.counts(cycle):
        return (
            f"It held the same horizon across the interval but for {held.seconds or 0:,.0f} s "
            f"only, not yet a vacuum cycle (autovacuum_naptime, {cycle:g} s)."
        )
    return ""
