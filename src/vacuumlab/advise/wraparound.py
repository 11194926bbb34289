"""Wraparound: transaction-id and multixact ages against the limits that force vacuums.

The limits come from the model (model/forcing.py): a relation is forced past
``Min(its own freeze_max_age, the server's)`` (relation_needs_vacanalyze() in autovacuum.c),
even where autovacuum is off for it; vacuum's failsafe drops throttling and index vacuuming
past ``Max(vacuum_failsafe_age, 1.05 × autovacuum_freeze_max_age)``; the server stops
assigning ids when the cluster's oldest ``datfrozenxid`` is about 2^31 old. Docs: "Preventing
Transaction ID Wraparound Failures".
"""

from __future__ import annotations

from dataclasses import dataclass

from vacuumlab.advise.context import Context
from vacuumlab.model import forcing
from vacuumlab.model.thresholds import Thresholds
from vacuumlab.records.advice import Finding, Severity

HARD_LIMIT = forcing.HARD_LIMIT
_KIND = {"xid": "transaction id", "mxid": "multixact"}
_SETTING = {"xid": "autovacuum_freeze_max_age", "mxid": "autovacuum_multixact_freeze_max_age"}


@dataclass(frozen=True, slots=True)
class _Age:
    """One age against its forcing limit."""

    name: str
    kind: str  # "xid" or "mxid"
    age: int | None
    limit: float
    own: bool = False  # the relation's own reloption lowered the server's limit
    table_off: bool = False  # autovacuum_enabled is off for the relation
    scanned: float | None = None  # a vacuum of it runs now: the share of its pages scanned
    launcher: bool = True  # a launcher or the postmaster's emergency workers will take it


def findings(ctx: Context, *, warn_share: float = 0.75) -> list[Finding]:
    """``warn_share``: warn once an age passes this share of its freeze_max_age (the docs'
    advice: watch tables approaching it, not only past it)."""
    rate = _xid_rate(ctx)
    ages = [a for t in ctx.thresholds if _near(t, warn_share) for a in _relation(ctx, t)]
    found = [_finding(ctx, a, rate if a.kind == "xid" else None, warn_share) for a in ages]
    found += [_cluster(ctx, kind, rate if kind == "xid" else None, warn_share) for kind in _KIND]
    return [f for f in found if f is not None]


def _near(t: Thresholds, warn_share: float) -> bool:
    """Whether either age could give a finding (_finding's own test): most relations are
    nowhere near, and need no name."""
    rel, limits = t.relation, t.effective.freeze
    return (rel.frozenxid_age is not None and rel.frozenxid_age >= warn_share * limits.xid) or (
        rel.minmxid_age is not None and rel.minmxid_age >= warn_share * limits.mxid
    )


def _relation(ctx: Context, t: Thresholds) -> list[_Age]:
    name = ctx.name_of(t.relation)
    limits, off = t.effective.freeze, not t.effective.table_enabled
    scanned = _scanned(ctx, t.relation.oid)
    launcher = t.effective.active or ctx.emergency
    return [
        _Age(name, "xid", t.relation.frozenxid_age, limits.xid, limits.xid_own, off, scanned,
             launcher),
        _Age(name, "mxid", t.relation.minmxid_age, limits.mxid, limits.mxid_own, off, scanned,
             launcher),
    ]  # fmt: skip


def _scanned(ctx: Context, oid: int) -> float | None:
    """The share of its pages a vacuum of the relation running now has scanned; None when
    none runs."""
    v = next((v for v in ctx.now.vacuums if v.relid == oid), None)
    if v is None:
        return None
    return v.heap_blks_scanned / v.heap_blks_total if v.heap_blks_total else 0.0


def _cluster(ctx: Context, kind: str, rate: float | None, warn_share: float) -> Finding | None:
    """One finding for every database past ``warn_share`` of the server's limit, naming them:
    a cluster's databases age together (template0 and template1 included), and one finding
    each would say the same thing as many times. Titled by the oldest."""
    server = forcing.freeze_limits(ctx.settings, {})
    limit = server.xid if kind == "xid" else server.mxid
    ages = sorted(
        (
            (db.frozenxid_age if kind == "xid" else db.minmxid_age, db.name)
            for db in ctx.now.databases
        ),
        key=lambda pair: -(pair[0] or 0),
    )
    near = [(age, name) for age, name in ages if age is not None and age >= warn_share * limit]
    if not near:
        return None
    oldest = near[0][0]
    names = ", ".join(f"{name} ({age:,})" for age, name in near)
    label = f"database {near[0][1]}" if len(near) == 1 else f"{len(near)} databases"
    found = _finding(ctx, _Age(label, kind, oldest, limit), rate, warn_share)
    assert found is not None  # the oldest passed warn_share
    return found.model_copy(
        update={
            "relation": None,
            "title": f"{found.title} ({label})",
            "detail": f"The databases past {warn_share:.0%} of {_SETTING[kind]}, with their "
            f"ages: {names}. {found.detail}",
            "evidence": {**found.evidence, "databases": len(near)},
        }
    )


def is_cluster(finding: Finding) -> bool:
    """Whether ``finding`` is the one about the cluster's databases (_cluster, the only
    wraparound finding with no relation): every database's advice has the same, so advising
    all databases of a server shows it once, for the server."""
    return finding.question == "wraparound" and finding.relation is None


def _xid_rate(ctx: Context) -> float | None:
    """Transaction ids consumed per second, from two snapshots."""
    if ctx.later is None or ctx.snapshot.xids is None or ctx.later.xids is None:
        return None
    seconds = ctx.seconds or 0
    used = ctx.later.xids.next_xid - ctx.snapshot.xids.next_xid
    return used / seconds if seconds > 0 else None


def oldest_age(ctx: Context, kind: str, fallback: int) -> int:
    """The cluster's oldest datfrozenxid (datminmxid) age: the server stops there, whatever
    one table's age (SetTransactionIdLimit() in varsup.c counts from the oldest database)."""
    oldest = forcing.oldest_age(ctx.now.databases, "xid" if kind == "xid" else "mxid")
    return fallback if oldest is None else max(fallback, oldest)


def _finding(ctx: Context, a: _Age, rate: float | None, warn_share: float) -> Finding | None:
    if a.age is None or a.age < warn_share * a.limit:
        return None
    failsafe = forcing.failsafe_age(
        ctx.settings, multixact=a.kind == "mxid", version_num=ctx.version
    )
    severity: Severity = "critical" if a.age >= failsafe or a.age >= HARD_LIMIT * 0.5 else "warning"
    left = HARD_LIMIT - oldest_age(ctx, a.kind, a.age)
    kind = _KIND[a.kind]
    return Finding(
        question="wraparound",
        severity=severity,
        relation=a.name,
        title=f"{kind} age {a.age:,}: {_state(a)}",
        detail=_detail(a, kind, left, rate),
        evidence={
            "age": a.age,
            "freeze_max_age": a.limit,
            "own_freeze_max_age": a.own,
            "failsafe_age": failsafe if failsafe != float("inf") else None,
            "left": left,
            "ids_per_second": rate,
        },
    )


def _state(a: _Age) -> str:
    if a.age is not None and a.age > a.limit:
        past = f"past {_SETTING[a.kind]}: "
        if a.scanned is not None:
            return past + f"a vacuum of it is running, {a.scanned:.0%} of its pages scanned"
        if not a.launcher:
            return past + (
                "no launcher runs with autovacuum off server-wide, and the postmaster's "
                "emergency workers come only once the database passes the server's limit"
            )
        return (
            past
            + "an anti-wraparound vacuum is due"
            + (", even with autovacuum off for it" if a.table_off else "")
        )
    return f"at {(a.age or 0) / a.limit:.0%} of its freeze_max_age" if a.limit else "due"


def _detail(a: _Age, kind: str, left: int, rate: float | None) -> str:
    when = ""
    if rate and rate > 0:
        when = f" At the measured {rate:,.0f} ids/s that is {_duration(left / rate)}."
    own = (
        f" Its own freeze_max_age lowers the server's to {a.limit:,.0f} (autovacuum takes the "
        "smaller of the two)."
        if a.own
        else ""
    )
    return (
        f"{left:,} {kind}s left before the server stops assigning them, counted from the "
        f"cluster's oldest database.{when}{own} A forced vacuum must visit every page not yet "
        "all-frozen; if it cannot finish, look at what holds the xmin horizon and at the cost "
        "settings."
    )


def _duration(seconds: float) -> str:
    days = seconds / 86400
    if days >= 2:
        return f"{days:,.0f} days"
    return f"{seconds / 3600:,.1f} hours"
