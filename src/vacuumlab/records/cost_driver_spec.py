"""What the cost-driver study measures and stores: the contract between the run and its report.

The study reproduces the benchmark of "PostgreSQL autovacuum internals, with a benchmark of dead
tuples against dirty pages" (Percona Community blog, 2026): a frozen table, dead tuples deleted
either compactly (the first pages) or spread over every page, 0 to 5 redundant B-tree indexes, and
one autovacuum measured per point."""

from __future__ import annotations

from vacuumlab.records.cost_driver import CostDriverPoint, Distribution, Mode
from vacuumlab.records.publication import Publication

STUDY = "cost-driver"
#: The published work this study reproduces.
PUBLICATION = Publication(
    title="PostgreSQL autovacuum internals, with a benchmark of dead tuples against dirty pages",
    site="Percona Community blog",
    year=2026,
)

#: The post, 0 indexes, 10M rows, PG 18.4, medians of 10: dead % -> (compact s, spread s).
PUBLISHED_ZERO_INDEX: dict[int, tuple[float, float]] = {
    10: (5.0, 43.6),
    25: (11.5, 43.6),
    50: (21.8, 43.4),
}
#: The post, compact 50 %, 0..5 indexes: median seconds ("around 5 s per index").
PUBLISHED_COMPACT_50_BY_INDEXES: tuple[float, ...] = (21.8, 28.1, 32.6, 37.6, 42.3, 47.4)


def point_params(
    distribution: Distribution, dead_pct: int, indexes: int, rows: int, mode: Mode
) -> dict[str, object]:
    """A point's parameters as stored (``points.params``)."""
    return CostDriverPoint(distribution, dead_pct, indexes, rows, mode).params()


#: Per-point metrics (``points.metrics``). Pages are 8 kB blocks; times in seconds; None where
#: the source was not available (the server log on a named server, pg_stat_io before 16,
#: total_autovacuum_time before 18, delay time without track_cost_delay_timing).
METRICS: tuple[str, ...] = (
    # time
    "duration_wall_s",        # clock from enabling autovacuum to seeing it finished (polling)
    "duration_stats_s",       # total_autovacuum_time delta (18+), or VACUUM's own elapsed time
    "duration_log_s",         # "elapsed" of the autovacuum log line
    "delay_time_s",           # time spent sleeping in cost-based delay (18, log or progress)
    # the table and what the DELETE did
    "heap_pages", "dead_tuples", "dirty_pages", "dirty_pct",
    "vm_all_visible_before", "vm_all_frozen_before", "vm_all_visible_after", "vm_all_frozen_after",
    "freeze_attempts",
    # what vacuum did (its log line / VERBOSE output)
    "pages_scanned", "pages_removed", "tuples_removed", "index_scans",
    "index_pages_total", "index_pages_newly_deleted",
    "buffer_hits", "buffer_reads", "buffer_dirtied",
    "wal_records", "wal_fpi", "wal_bytes",
    # I/O seen by the server's statistics
    "worker_read_pages", "worker_hits", "worker_write_pages",   # pg_stat_io, autovacuum worker
    "heap_blks_read", "heap_blks_hit", "idx_blks_read", "idx_blks_hit",  # pg_statio_user_tables
    "writes_worker_pages", "writes_checkpointer_pages", "writes_bgwriter_pages",
    "writes_other_pages",
    # the cost model
    "cost_page_hit", "cost_page_miss", "cost_page_dirty", "cost_limit", "cost_delay_ms",
    "predicted_cost", "predicted_delay_s",
)  # fmt: skip
