"""Wraparound forcing: when autovacuum vacuums a relation whatever its thresholds and switches.

- ``relation_needs_vacanalyze()`` (autovacuum.c) forces a vacuum once ``age(relfrozenxid)``
  passes ``Min(reloption autovacuum_freeze_max_age, GUC)``, or ``mxid_age(relminmxid)`` passes
  ``Min(reloption autovacuum_multixact_freeze_max_age, MultiXactMemberFreezeThreshold())``; a
  table with ``autovacuum_enabled = off`` is still vacuumed then, and so is every table when
  autovacuum is off server-wide or ``track_counts`` is off (AutoVacuumingActive() false: only
  forced vacuums run).
- ``MultiXactMemberFreezeThreshold()`` (multixact.c) lowers the multixact limit towards 0 once
  member space passes half of its 2^32 offsets. PostgreSQL 13–18 expose no member count to
  SQL (pg_get_multixact_members() lists one multixact's members; pg_get_multixact_stats()
  arrives in 19; reading pg_multixact/members needs superuser), so without ``members`` this
  model assumes no member-space pressure: the GUC applies.
- With ``autovacuum`` or ``track_counts`` off no launcher runs. Once the next xid passes the
  cluster's oldest ``datfrozenxid`` plus the server's ``autovacuum_freeze_max_age``
  (``xidVacLimit``, SetTransactionIdLimit() in varsup.c; the same for multixacts,
  SetMultiXactIdLimit() in multixact.c), backends signal the postmaster, which starts the
  launcher for one worker (AutoVacLauncherMain(): do_start_worker() then exit), sent to the
  database most at risk; there it vacuums the relations past their own limits
  (:func:`emergency`).
- ``vacuum_xid_failsafe_check()`` (vacuum.c) turns throttling and index vacuuming off past
  ``Max(vacuum_failsafe_age, 1.05 × autovacuum_freeze_max_age)``, and the same for
  multixacts with ``vacuum_multixact_failsafe_age``; PostgreSQL 13 has no failsafe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from vacuumlab.records.snapshot import Database

#: Ages a server cannot pass: 2^31 ids, less the 3 million it keeps in reserve (PG14+
#: xidStopLimit; GetNewTransactionId in varsup.c).
HARD_LIMIT: Final = 2**31 - 3_000_000
#: MaxMultiXactOffset + 1 member slots; MULTIXACT_MEMBER_SAFE/DANGER_THRESHOLD (multixact.c).
_MEMBER_SPACE: Final = 2**32
MEMBER_SAFE: Final = _MEMBER_SPACE // 2
MEMBER_DANGER: Final = (_MEMBER_SPACE // 4) * 3
_DEFAULTS: Final = {
    "autovacuum_freeze_max_age": 200_000_000,
    "autovacuum_multixact_freeze_max_age": 400_000_000,
    "vacuum_failsafe_age": 1_600_000_000,
    "vacuum_multixact_failsafe_age": 1_600_000_000,
}


@dataclass(frozen=True, slots=True)
class FreezeLimits:
    """The ages past which autovacuum forces a vacuum of one relation."""

    xid: float
    mxid: float
    xid_own: bool  # the relation's own reloption lowered the server's value
    mxid_own: bool


def member_freeze_threshold(
    guc: float, multixacts: int | None = None, members: int | None = None
) -> float:
    """The effective autovacuum_multixact_freeze_max_age (MultiXactMemberFreezeThreshold()):
    the GUC while member space is at most half used, then falling to 0 at three quarters."""
    if multixacts is None or members is None or members <= MEMBER_SAFE:
        return guc
    fraction = (members - MEMBER_SAFE) / (MEMBER_DANGER - MEMBER_SAFE)
    victims = multixacts * fraction
    if victims > multixacts:
        return 0.0
    return min(multixacts - victims, guc)


def freeze_limits(
    server: Mapping[str, str],
    options: Mapping[str, str],
    *,
    members: int | None = None,
    multixacts: int | None = None,
) -> FreezeLimits:
    """``Min(reloption, server)`` for both ages, as relation_needs_vacanalyze() takes them; a
    negative reloption (-1) means unset."""
    xid_guc = setting(server, "autovacuum_freeze_max_age")
    mxid_guc = member_freeze_threshold(
        setting(server, "autovacuum_multixact_freeze_max_age"), multixacts, members
    )
    xid_own = _own(options, "autovacuum_freeze_max_age")
    mxid_own = _own(options, "autovacuum_multixact_freeze_max_age")
    return FreezeLimits(
        xid=min(xid_guc, xid_own) if xid_own is not None else xid_guc,
        mxid=min(mxid_guc, mxid_own) if mxid_own is not None else mxid_guc,
        xid_own=xid_own is not None and xid_own < xid_guc,
        mxid_own=mxid_own is not None and mxid_own < mxid_guc,
    )


def forced(limits: FreezeLimits, xid_age: int | None, mxid_age: int | None) -> str | None:
    """Why autovacuum forces a vacuum ("xid" or "mxid"), or None. Ages are strictly past the
    limit (TransactionIdPrecedes(relfrozenxid, recentXid - freeze_max_age))."""
    if xid_age is not None and xid_age > limits.xid:
        return "xid"
    if mxid_age is not None and mxid_age > limits.mxid:
        return "mxid"
    return None


def emergency(
    database: Database | None, server: Mapping[str, str]
) -> Literal["xid", "mxid"] | None:
    """Whether, with autovacuum off, the postmaster sends emergency workers to ``database``:
    its ``datfrozenxid`` age past the server's autovacuum_freeze_max_age ("xid"), or its
    ``datminmxid`` age past the multixact one ("mxid"; member space not collected, the
    setting), the reloptions of no table counting. None when neither, or unknown."""
    if database is None:
        return None
    if database.frozenxid_age > setting(server, "autovacuum_freeze_max_age"):
        return "xid"
    if database.minmxid_age > member_freeze_threshold(
        setting(server, "autovacuum_multixact_freeze_max_age")
    ):
        return "mxid"
    return None


def failsafe_age(
    server: Mapping[str, str], *, multixact: bool = False, version_num: int = 140000
) -> float:
    """The age at which vacuum's failsafe triggers: ``Max(failsafe_age, 1.05 × freeze_max_age)``
    of the server (vacuum_xid_failsafe_check() in vacuum.c); never before 14."""
    if version_num < 140000:
        return float("inf")
    if multixact:
        failsafe = setting(server, "vacuum_multixact_failsafe_age")
        return max(failsafe, 1.05 * setting(server, "autovacuum_multixact_freeze_max_age"))
    return max(
        setting(server, "vacuum_failsafe_age"), 1.05 * setting(server, "autovacuum_freeze_max_age")
    )


def oldest_age(databases: Iterable[Database], kind: Literal["xid", "mxid"]) -> int | None:
    """The cluster's oldest ``datfrozenxid`` (or ``datminmxid``) age: the server stops assigning
    ids counted from there, whatever one table's age (SetTransactionIdLimit() in varsup.c)."""
    ages = [db.frozenxid_age if kind == "xid" else db.minmxid_age for db in databases]
    return max(ages, default=None)


def setting(server: Mapping[str, str], name: str) -> float:
    """A numeric server setting, with PostgreSQL's default when the snapshot lacks it."""
    try:
        return float(server[name])
    except (KeyError, ValueError):
        return float(_DEFAULTS[name])


def _own(options: Mapping[str, str], name: str) -> float | None:
    try:
        value = float(options[name])
    except (KeyError, ValueError):
        return None
    return value if value >= 0 else None
