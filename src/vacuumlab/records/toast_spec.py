"""What the TOAST study measures and stores: the contract between the run and its report.

The study reproduces "Postgres Faster Vacuum-2 (TOAST impact on VACUUM)" (Medium, 2021): the same
wide, incompressible rows stored out of line (``extended``, ``external``) or in the heap
(``main``, ``plain``), an UPDATE of the narrow column, VACUUM and VACUUM FREEZE, and the two
sessions that vacuum a table and its TOAST relation at the same time.

Sizes assume 8 kB pages (the study checks ``block_size``); the limits below are PostgreSQL's
own for that page size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vacuumlab.records.publication import Publication
from vacuumlab.records.toast import (
    ARMS,
    DEFAULT_TOAST_TUPLE_TARGET,
    MAX_TOAST_TUPLE_TARGET,
    MAX_WIDTH,
    MIN_ROWS,
    MIN_TOAST_TUPLE_TARGET,
    MIN_WIDTH,
    PLAIN_MAX_WIDTH,
    STORAGES,
    Arm,
    ParallelPoint,
    Storage,
    StoragePoint,
)

STUDY = "toast"
#: The published work this study reproduces.
PUBLICATION = Publication(
    title="Postgres Faster Vacuum-2 (TOAST impact on VACUUM)",
    site="Medium",
    year=2021,
)

__all__ = [
    "ARMS",
    "DEFAULT_TOAST_TUPLE_TARGET",
    "MAX_TOAST_TUPLE_TARGET",
    "MAX_WIDTH",
    "MIN_ROWS",
    "MIN_TOAST_TUPLE_TARGET",
    "MIN_WIDTH",
    "PLAIN_MAX_WIDTH",
    "STORAGES",
    "Arm",
    "Storage",
]
PAGE_BYTES = 8192


@dataclass(frozen=True, slots=True)
class Published:
    """One figure of the post for extended and main storage (500,000 rows, one run each)."""

    label: str
    extended: float
    main: float
    unit: Literal["s", "MB"]


#: The post's figures, as printed by psql (\timing, pg_size_pretty: MB are MiB).
PUBLISHED: dict[str, Published] = {
    "update_s": Published("UPDATE age = age + 5", 2.061278, 80.259084, "s"),
    "vacuum_s": Published("VACUUM", 14.500174, 42.836927, "s"),
    "freeze_s": Published("VACUUM FREEZE (after the VACUUM)", 32.770891, 31.090077, "s"),
    "heap_mb_loaded": Published("heap, loaded", 29, 1302, "MB"),
    "toast_mb_loaded": Published("TOAST, loaded", 1302, 0, "MB"),
    "heap_mb_updated": Published("heap, after the UPDATE", 57, 2604, "MB"),
    "toast_mb_updated": Published("TOAST, after the UPDATE", 1302, 0, "MB"),
}
PUBLISHED_ROWS = 500_000


def storage_params(
    storage: Storage, toast_tuple_target: int, rows: int, width: int
) -> dict[str, object]:
    """A storage point's parameters as stored (``points.params``)."""
    return StoragePoint(storage, toast_tuple_target, rows, width).params()


def parallel_params(arm: Arm, rows: int, width: int) -> dict[str, object]:
    """A parallel-experiment point's parameters as stored."""
    return ParallelPoint(arm, rows, width).params()


def variant_label(storage: str, toast_tuple_target: int) -> str:
    """``extended``, or ``extended, toast_tuple_target 128`` when not the default."""
    if toast_tuple_target == DEFAULT_TOAST_TUPLE_TARGET:
        return storage
    return f"{storage}, toast_tuple_target {toast_tuple_target}"


# -- metric names --------------------------------------------------------------------------

#: The table (heap) and its TOAST relation, measured apart: autovacuum judges them apart.
PARTS = ("heap", "toast")
#: When a storage point reads both relations: after loading, after the UPDATE, after the
#: plain VACUUM, after the VACUUM FREEZE that follows it.
STAGES = ("loaded", "updated", "vacuumed", "frozen")
#: What is read of each relation at each stage (pg_class, pg_stat_all_tables, its size).
REL_FIELDS = (
    "bytes",
    "relpages",
    "relallvisible",
    "relallfrozen",
    "n_live_tup",
    "n_dead_tup",
    "frozenxid_age",
)
#: The three vacuums of a storage point: the plain VACUUM after the UPDATE, the FREEZE that
#: follows it (b), and the FREEZE of a rebuilt copy straight after its UPDATE (a).
VACUUM_STEPS = ("vacuum", "freeze_vacuumed", "freeze_updated")
#: What each vacuum's VERBOSE report gives per relation.
REPORT_FIELDS = (
    "elapsed_s",
    "cpu_s",  # user + system: the steadier clock on a shared machine
    "pages_scanned",
    "pages_removed",
    "tuples_removed",
    "frozen_pages",
    "vm_all_frozen",
    "buffer_hits",
    "buffer_reads",
    "buffer_dirtied",
    "wal_fpi",
    "wal_bytes",
)
#: The UPDATE's own account (EXPLAIN (ANALYZE, BUFFERS, WAL)) and the WAL position it moved.
UPDATE_METRICS = (
    "update_s",  # wall clock of the statement, commit included
    "update_exec_s",  # EXPLAIN's execution time
    "update_wal_records",
    "update_wal_fpi",
    "update_wal_bytes",
    "update_lsn_bytes",  # pg_current_wal_lsn() difference: the commit and anything else
    "update_buffers_hit",
    "update_buffers_read",
    "update_buffers_dirtied",
    "update_buffers_written",
)


def rel_metric(part: str, field: str, stage: str) -> str:
    return f"{part}_{field}_{stage}"


def vacuum_metric(step: str, part: str, field: str) -> str:
    return f"{step}_{part}_{field}"


STORAGE_METRICS: tuple[str, ...] = (
    "duration_wall_s",  # the whole point, loading and rebuilding included
    *(rel_metric(p, f, s) for s in STAGES for p in PARTS for f in REL_FIELDS),
    *UPDATE_METRICS,
    *(f"{step}_s" for step in VACUUM_STEPS),
    *(vacuum_metric(v, p, f) for v in VACUUM_STEPS for p in PARTS for f in REPORT_FIELDS),
    "compressed_values",  # rows whose value the toaster compressed: 0 for incompressible text
    "data_checksums",  # "on"/"off": with checksums, setting hint bits logs full-page images
    "default_toast_compression",  # pglz or lz4: what extended and main storage compress with
    "rebuilt_heap_bytes",  # the copy rebuilt for FREEZE (a), after its UPDATE
    "rebuilt_toast_bytes",
)

#: The sessions of the parallel experiment: one vacuums the TOAST relation by name, the other
#: the table (with or without its TOAST relation).
ROLES = ("toast", "table")

PARALLEL_METRICS: tuple[str, ...] = (
    "duration_wall_s",  # the whole point, loading included
    "wall_s",  # from the first VACUUM's start to the last one's end
    "toast_session_s",
    "table_session_s",
    "table_session_start_s",  # when the table session started, after the TOAST session
    "lock_waits",  # lock-wait spans in the timeline
    "lock_wait_table_s",  # sampled time the table session waited for a heavyweight lock
    "lock_wait_toast_s",
    "truncate_wait_s",  # sampled time in VacuumTruncate (retrying the truncation lock)
    "truncations",  # "truncated N to M pages" notices
    "truncate_suspended",  # "suspending truncate due to conflicting lock request"
    "truncate_skipped",  # "stopping truncate due to conflicting lock request"
    *(f"{p}_bytes_{s}" for p in PARTS for s in ("before", "after")),
    *(
        vacuum_metric(role, part, field)
        for role in ROLES
        for part in PARTS
        for field in ("elapsed_s", "pages_scanned", "pages_removed", "tuples_removed")
    ),
    "heap_vacuum_truncate",  # the vacuum_truncate reloption of each relation, or "default"
    "toast_vacuum_truncate",
    "samples",
    "sample_interval_ms",
    "timeline_json",  # sessions, spans and notices: see studies/toast.py, Timeline
)
