"""What holds vacuum back: whatever pins the xmin horizon keeps every dead tuple newer than it.

Vacuum removes a dead tuple only once no snapshot can still see it (the horizon of
``GetOldestNonRemovableTransactionId`` in procarray.c). Holders, classified: a long
transaction, a session idle in a transaction, a replication slot's xmin (a standby with
hot_standby_feedback) or catalog_xmin (logical decoding), a prepared transaction, a walsender
relaying standby feedback.

Each holder is matched to what it holds (ComputeXidHorizons() in procarray.c): a backend or a
prepared transaction holds back the user tables of its own database only (a walsender's
standby feedback holds every database); a slot's xmin holds every table, its catalog_xmin only
the system catalogs.
"""

from __future__ import annotations

from datetime import datetime

from psycopg import sql

from vacuumlab.advise import holders
from vacuumlab.advise.context import Context, alter_system
from vacuumlab.advise.holders import Held
from vacuumlab.model import horizon as hm
from vacuumlab.records.advice import Finding, Recommendation, Severity
from vacuumlab.records.snapshot import Backend, PreparedXact, ReplicationSlot

#: What ends a long query for good; no setting is recommended: a server-wide statement or
#: transaction timeout would end every long query, the legitimate ones too.
LONG_QUERY = (
    "An idle-session timeout never ends a query at work. For reports, a statement_timeout (or "
    "from PostgreSQL 17 a transaction_timeout) on the reporting role, or a standby to run "
    "them on, keeps it from coming back."
)
#: The idle_in_transaction_session_timeout recommended where there is none: 10 minutes.
IDLE_TIMEOUT_MS = 600_000


def findings(
    ctx: Context,
    *,
    warn_seconds: float = 300.0,
    critical_seconds: float = 3600.0,
    warn_age: int = 1_000_000,
) -> list[Finding]:
    """Limits: a holder is worth a warning past ``warn_seconds`` or ``warn_age`` xids, and
    critical past ``critical_seconds`` (see the docs' "Routine Vacuuming")."""
    dead = sum((t.heap.n_dead_tup or 0) for t in ctx.now.tables)
    limits = (warn_seconds, critical_seconds, warn_age)
    here, now = ctx.now.server.database, hm.holding(ctx.now)
    found = [_backend(ctx, b, dead, limits) for b in now.backends if hm.holds_here(b, here)]
    found += [_slot(ctx, s, dead, limits) for s in now.slots]  # catalog-only ones said so
    found += [_prepared(ctx, p, dead, limits) for p in now.prepared if hm.holds_here(p, here)]
    return [f for f in found if f is not None]


def oldest_holder(ctx: Context) -> datetime | None:
    """Since when the oldest holder that counts (:mod:`vacuumlab.advise.holders`) has held
    this database's user tables back; None when none counts."""
    cycle = holders.vacuum_cycle(ctx)
    here, now = ctx.now.server.database, hm.holding(ctx.now)
    held = [holders.backend(ctx, b) for b in now.backends if hm.holds_here(b, here)]
    held += [holders.slot(ctx, s) for s in now.slots if hm.holds_here(s, here)]
    held += [holders.prepared(ctx, p) for p in now.prepared if hm.holds_here(p, here)]
    starts = [h.since for h in held if h.counts(cycle) and h.since is not None]
    return min(starts, default=None)


#: What the questions whose advice cannot help while the horizon is held say instead.
HELD_BACK = (
    "Held back: a holder keeps the xmin horizon (see What holds vacuum back), so neither "
    "vacuum nor pruning on the page can remove the dead tuples made since it began; end the "
    "holder first, then advise again."
)


def held(ctx: Context) -> bool:
    """Whether a holder that counts keeps this database's dead tuples: then the interval's
    dead tuples are all newer than it, and no vacuum setting or free space removes them."""
    return oldest_holder(ctx) is not None


def _weigh(ctx: Context, held: Held, severity: Severity, dead: int) -> tuple[Severity, str]:
    """The severity the evidence supports, and what evidence is missing: a holder that does
    not count is never at warning or above; one that counts while dead tuples wait is."""
    missing = holders.missing(held, holders.vacuum_cycle(ctx))
    if missing:
        return "info", missing
    if severity == "info" and dead > 0:
        return "warning", ""
    return severity, ""


def _severity(seconds: float | None, age: int | None, limits: tuple[float, float, int]) -> Severity:
    warn_seconds, critical_seconds, warn_age = limits
    if (seconds or 0) >= critical_seconds:
        return "critical"
    if (seconds or 0) >= warn_seconds or (age or 0) >= warn_age:
        return "warning"
    return "info"


def _age_of(moment: datetime | None, now: datetime) -> float | None:
    return None if moment is None else max(0.0, (now - moment).total_seconds())


def _backend(
    ctx: Context, b: Backend, dead: int, limits: tuple[float, float, int]
) -> Finding | None:
    seconds = _age_of(b.xact_start, ctx.now.taken_at)
    evidence = holders.backend(ctx, b)
    if evidence.persisted is False:
        return None  # not the same horizon as before: held for a moment, between statements
    kind = hm.backend_kind(b)
    severity, missing = _weigh(ctx, evidence, _severity(seconds, b.xmin_age, limits), dead)
    if missing and (seconds or 0) < 60 and kind in (hm.LONG, hm.ANALYZE):
        return None  # a query at work holds the horizon for a moment; that is not news
    idle = kind == hm.IDLE and not missing
    recommendations = _idle_timeout(ctx) if idle else []
    held = f"{seconds:,.0f} s" if seconds is not None else "an unknown time"
    return Finding(
        question="horizon",
        severity=severity,
        relation=None,
        title=f"pid {b.pid}: {kind}, holding the horizon for {held}",
        detail=(
            f"User {b.user_name or '?'}, application {b.application_name or '?'}, state "
            f"{b.state or '?'}; xmin age {b.xmin_age or 0:,}. Up to {dead:,} dead tuples across "
            f"the tables here cannot be removed while it holds. {_ending(kind, b.pid)}"
            + (f" {missing}" if missing else "")
        ),
        evidence={
            "pid": b.pid,
            "kind": kind,
            "seconds": seconds,
            "same_horizon_in_both_snapshots": evidence.persisted,
            "xmin_age": b.xmin_age,
            "dead_tuples_in_database": dead,
            "query": b.query,
        },
        recommendations=recommendations,
    )


def _ending(kind: str, pid: int) -> str:
    """What ends a holding backend of ``kind``, and what it costs. Never a lazy VACUUM: those
    hold nobody back and are not holders (model/horizon.py)."""
    if kind == hm.ANALYZE:
        return (
            "An autovacuum worker's ANALYZE holds the horizon while it reads its sample (only a "
            "lazy VACUUM is left out of the horizon); it ends by itself, and ending it would "
            "only bring it back."
        )
    if kind == hm.REWRITE:
        cancel = sql.SQL("SELECT pg_cancel_backend({});").format(sql.Literal(pid))
        return (
            "A VACUUM FULL or CLUSTER holds the horizon until it ends: unlike a lazy VACUUM, it "
            f"is not left out of it. Cancelling it ({cancel.as_string(None)}) throws its "
            "rewrite away."
        )
    end = sql.SQL("SELECT pg_terminate_backend({});").format(sql.Literal(pid)).as_string(None)
    return f"To end it: {end}" + (f" {LONG_QUERY}" if kind == hm.LONG else "")


def _idle_timeout(ctx: Context) -> list[Recommendation]:
    """A timeout for sessions idle in a transaction, where the server has none."""
    if ctx.setting("idle_in_transaction_session_timeout") != 0:
        return []
    reason = (
        "sessions left idle in a transaction hold the horizon for as long as they stay; a "
        "timeout of 10 minutes ends them (the application must reconnect)"
    )
    setting, timeout = "idle_in_transaction_session_timeout", str(IDLE_TIMEOUT_MS)
    return [alter_system(setting, timeout, version=ctx.version, impact=0.7, reason=reason)]


def _slot(
    ctx: Context, s: ReplicationSlot, dead: int, limits: tuple[float, float, int]
) -> Finding | None:
    age = max(s.xmin_age or 0, s.catalog_xmin_age or 0)
    evidence = holders.slot(ctx, s)
    if not age or evidence.persisted is False:
        return None
    which = "xmin (standby feedback)" if s.xmin_age else "catalog_xmin (logical decoding)"
    holds = (
        f"pins the horizon; up to {dead:,} dead tuples here wait for it"
        if s.xmin_age
        else "holds back the system catalogs only: dead catalog rows (pg_class, pg_attribute "
        "…) wait for it, user tables are not held"
    )
    severity = _severity(None, age, limits)
    if not s.active and severity == "info":
        severity = "warning"  # an inactive slot holds the horizon forever
    severity, missing = _weigh(ctx, evidence, severity, dead if s.xmin_age else 0)
    drop = sql.SQL("SELECT pg_drop_replication_slot({});").format(sql.Literal(s.slot_name))
    return Finding(
        question="horizon",
        severity=severity,
        relation=None,
        title=f"replication slot {s.slot_name}: {which} age {age:,}"
        + ("" if s.active else ", inactive"),
        detail=(
            f"A {s.slot_type} slot{' nobody is using' if not s.active else ''} {holds}. If "
            "its consumer is gone: " + drop.as_string(None) + (f" {missing}" if missing else "")
        ),
        evidence={
            "slot": s.slot_name,
            "type": s.slot_type,
            "active": s.active,
            "xmin_age": s.xmin_age,
            "catalog_xmin_age": s.catalog_xmin_age,
            "holds": "all" if s.xmin_age else "catalogs",
        },
    )


def _prepared(
    ctx: Context, p: PreparedXact, dead: int, limits: tuple[float, float, int]
) -> Finding | None:
    seconds = _age_of(p.prepared, ctx.now.taken_at)
    evidence = holders.prepared(ctx, p)
    if evidence.persisted is False:
        return None  # prepared since the first snapshot: its manager may yet resolve it
    severity = _severity(seconds, p.xid_age, limits)
    if severity == "info":
        severity = "warning"  # nothing ends a prepared transaction but COMMIT/ROLLBACK PREPARED
    severity, missing = _weigh(ctx, evidence, severity, dead)
    rollback = sql.SQL("ROLLBACK PREPARED {};").format(sql.Literal(p.gid))
    return Finding(
        question="horizon",
        severity=severity,
        relation=None,
        title=f"prepared transaction {p.gid!r}: xid age {p.xid_age:,}",
        detail=(
            f"Prepared by {p.owner} in database {p.database} {seconds or 0:,.0f} s ago; it "
            f"survives restarts and holds the horizon until its transaction manager resolves it "
            f"(up to {dead:,} dead tuples here wait). If that manager is gone: "
            + rollback.as_string(None)
            + (f" {missing}" if missing else "")
        ),
        evidence={
            "gid": p.gid,
            "xid_age": p.xid_age,
            "seconds": seconds,
            "database": p.database,
            "owner": p.owner,
        },
    )
