"""Wraparound: transaction-id and multixact ages against the limits that force vacuums.

- above ``autovacuum_freeze_max_age`` (or a table's own, lower one) autovacuum forces an
  aggressive, anti-wraparound vacuum, even where autovacuum is off for the table;
- above ``vacuum_failsafe_age`` (14+, default 1.6 billion) vacuum drops its throttling and
  index cleanup to finish in time;
- at about 2^31 (2.1 billion, less a few million kept in reserve) the server stops assigning
  transaction ids. Docs: "Preventing Transaction ID Wraparound Failures".
"""

from __future__ import annotations

from vacuumlab.advise.context import Context, label
from vacuumlab.records.advice import Finding, Severity

#: Ages a server cannot pass: 2^31 ids, less the 3 million the server keeps in reserve (PG14+
#: xidStopLimit; GetNewTransactionId in varsup.c).
HARD_LIMIT = 2**31 - 3_000_000


def findings(ctx: Context, *, warn_share: float = 0.75) -> list[Finding]:
    """``warn_share``: warn once an age passes this share of its freeze_max_age (the docs'
    advice: watch tables approaching it, not only past it)."""
    rate = _xid_rate(ctx)
    found: list[Finding] = []
    found.extend(_databases(ctx, rate))
    for table in ctx.now.tables:
        for rel in (table.heap, table.toast):
            if rel is None:
                continue
            options = rel.reloptions or (table.heap.reloptions if rel.kind == "t" else {})
            limit = float(options.get("autovacuum_freeze_max_age", 0)) or ctx.setting(
                "autovacuum_freeze_max_age", 200_000_000
            )
            finding = _age(
                ctx,
                label(rel, table.heap),
                rel.frozenxid_age,
                limit,
                rate,
                warn_share,
                "transaction id",
            )
            if finding is not None:
                found.append(finding)
            mlimit = ctx.setting("autovacuum_multixact_freeze_max_age", 400_000_000)
            mfinding = _age(
                ctx, label(rel, table.heap), rel.minmxid_age, mlimit, None, warn_share, "multixact"
            )
            if mfinding is not None:
                found.append(mfinding)
    return found


def _xid_rate(ctx: Context) -> float | None:
    """Transaction ids consumed per second, from two snapshots."""
    if ctx.later is None or ctx.snapshot.xids is None or ctx.later.xids is None:
        return None
    seconds = ctx.seconds or 0
    used = ctx.later.xids.next_xid - ctx.snapshot.xids.next_xid
    return used / seconds if seconds > 0 else None


def _databases(ctx: Context, rate: float | None) -> list[Finding]:
    limit = ctx.setting("autovacuum_freeze_max_age", 200_000_000)
    found = []
    for db in ctx.now.databases:
        finding = _age(
            ctx, f"database {db.name}", db.frozenxid_age, limit, rate, 0.75, "transaction id"
        )
        if finding is not None:
            found.append(finding)
    return found


def _age(
    ctx: Context,
    name: str,
    age: int | None,
    limit: float,
    rate: float | None,
    warn_share: float,
    kind: str,
) -> Finding | None:
    if age is None or age < warn_share * limit:
        return None
    failsafe = ctx.setting("vacuum_failsafe_age", 1_600_000_000)
    severity: Severity = "critical" if age >= failsafe or age >= HARD_LIMIT * 0.5 else "warning"
    left = HARD_LIMIT - age
    when = ""
    if rate and rate > 0:
        when = f" At the measured {rate:,.0f} ids/s that is {_duration(left / rate)}."
    state = (
        "past autovacuum_freeze_max_age: an anti-wraparound vacuum is due"
        if age >= limit
        else f"at {age / limit:.0%} of its freeze_max_age"
    )
    return Finding(
        question="wraparound",
        severity=severity,
        relation=name,
        title=f"{kind} age {age:,}: {state}",
        detail=(
            f"{left:,} {kind}s left before the server stops assigning them.{when} A forced "
            "vacuum must visit every page not yet all-frozen; if it cannot finish, look at what "
            "holds the xmin horizon and at the cost settings."
        ),
        evidence={
            "age": age,
            "freeze_max_age": limit,
            "failsafe_age": failsafe,
            "left": left,
            "ids_per_second": rate,
        },
    )


def _duration(seconds: float) -> str:
    days = seconds / 86400
    if days >= 2:
        return f"{days:,.0f} days"
    return f"{seconds / 3600:,.1f} hours"
