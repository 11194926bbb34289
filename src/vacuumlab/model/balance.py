"""Workers and cost balancing: how many autovacuum workers can run, and how many share the
cost limit.

- On PostgreSQL 18 the launcher keeps ``autovacuum_worker_slots - autovacuum_max_workers``
  slots in reserve (av_worker_available() in autovacuum.c): at most
  ``min(autovacuum_max_workers, autovacuum_worker_slots)`` workers run.
- A worker whose table has a cost limit (> 0) or delay (>= 0) of its own keeps it and is left
  out of the balance (``at_dobalance`` in table_recheck_autovac(); av_nworkersForBalance in
  autovac_recalculate_workers_for_balance()); the others split the limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from vacuumlab.model.cost import CostSettings
from vacuumlab.records.snapshot import AutovacuumWorker, VacuumProgress


def available_workers(server: Mapping[str, str], version_num: int) -> int:
    """The autovacuum workers that can run at once."""
    workers = _int(server, "autovacuum_max_workers", 3)
    if version_num >= 180000:
        workers = min(workers, _int(server, "autovacuum_worker_slots", workers))
    return max(workers, 1)


def own_cost(base: CostSettings, options: Mapping[str, str]) -> tuple[CostSettings, bool]:
    """The cost settings a relation's vacuum runs with, and whether it joins the balance."""
    limit = _float(options.get("autovacuum_vacuum_cost_limit"))
    delay = _float(options.get("autovacuum_vacuum_cost_delay"))
    own_limit = limit is not None and limit > 0 and limit.is_integer()
    own_delay = delay is not None and delay >= 0
    if not (own_limit or own_delay):
        return base, True  # most relations: no copy of the server's settings needed
    settings = replace(
        base,
        limit=int(limit) if own_limit and limit is not None else base.limit,
        delay_ms=delay if own_delay and delay is not None else base.delay_ms,
    )
    return settings, not (own_limit or own_delay)


def has_own_cost(options: Mapping[str, str]) -> bool:
    limit = _float(options.get("autovacuum_vacuum_cost_limit"))
    delay = _float(options.get("autovacuum_vacuum_cost_delay"))
    return (limit is not None and limit > 0) or (delay is not None and delay >= 0)


def busy_workers(
    workers: Iterable[AutovacuumWorker] | None, vacuums: Iterable[VacuumProgress]
) -> int:
    """Worker slots in use: every autovacuum worker alive, whether it vacuums, analyzes or is
    between two relations. A snapshot saved before the workers were collected has only
    pg_stat_progress_vacuum, which leaves out the workers running ANALYZE."""
    if workers is not None:
        return sum(1 for _ in workers)
    return sum(1 for v in vacuums if v.is_autovacuum)


def balanced_workers(
    vacuums: Iterable[VacuumProgress],
    unbalanced: set[int],
    workers: Iterable[AutovacuumWorker] | None = None,
) -> int:
    """Running autovacuum workers that share the limit (av_nworkersForBalance): every worker
    with wi_dobalance, which table_recheck_autovac() sets for a relation without cost settings
    of its own, ANALYZE or VACUUM, and do_autovacuum() sets again between two relations.
    Relations of other databases are counted: their options are unknown. Without the workers
    (an older snapshot), the vacuums in progress."""
    if workers is not None:
        return sum(1 for w in workers if w.relid is None or w.relid not in unbalanced)
    return sum(1 for v in vacuums if v.is_autovacuum and v.relid not in unbalanced)


def _int(server: Mapping[str, str], name: str, default: int) -> int:
    value = _float(server.get(name))
    return int(value) if value is not None else default


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
