"""What the fillfactor study measures and stores: the contract between the run and its report.

The study reproduces "What is fillfactor and how does it affect PostgreSQL performance?"
(CYBERTEC blog, 2020): pgbench's built-in TPC-B at three data sizes relative to memory × fillfactor
70/80/90/100, with the UPDATE of pgbench_accounts timed by pg_stat_statements.

"Memory" is mapped to ``shared_buffers``: a data size is a multiple of it, turned into a pgbench
scale with :data:`BYTES_PER_SCALE`. The OS page cache is not part of the mapping (see the
report's memory note).
"""

from __future__ import annotations

from vacuumlab.records.fillfactor import (
    FILLFACTOR_MAX,
    FILLFACTOR_MIN,
    SIZES,
    FillfactorPoint,
    Size,
)
from vacuumlab.records.publication import Publication

STUDY = "fillfactor"
#: The published work this study reproduces.
PUBLICATION = Publication(
    title="What is fillfactor and how does it affect PostgreSQL performance?",
    site="CYBERTEC blog",
    year=2020,
)

__all__ = ["FILLFACTOR_MAX", "FILLFACTOR_MIN", "SIZES", "Size"]

#: Data size (pgbench_accounts and its primary key at fillfactor 100) per shared_buffers.
#: "fits" is half of it, so the table still fits after it grows and beside the small tables.
SIZE_FACTORS: dict[Size, float] = {"fits": 0.5, "2x": 2.0, "10x": 10.0}
SIZE_LABELS: dict[Size, str] = {
    "fits": "fits in memory",
    "2x": "2× memory",
    "10x": "10× memory",
}

#: pgbench_accounts heap + primary key per unit of scale at fillfactor 100, in bytes.
#: Measured on PostgreSQL 18.6 after ``pgbench -i -s 10``: 134,299,648 + 22,487,040 bytes.
BYTES_PER_SCALE = 15_678_669

#: What every other fillfactor is compared with: PostgreSQL's default, the post's baseline.
REFERENCE_FILLFACTOR = 100


#: The post, PostgreSQL 12.2: UPDATE pgbench_accounts mean (ms) and TPS, by size and fillfactor.
PUBLISHED: dict[Size, dict[int, tuple[float, float]]] = {
    "fits": {100: (5.01, 374), 90: (4.80, 389), 80: (4.89, 382), 70: (4.98, 376)},
    "2x": {100: (5.31, 363), 90: (5.33, 359), 80: (5.38, 357), 70: (5.42, 353)},
    "10x": {100: (6.45, 249), 90: (5.67, 282), 80: (5.61, 284), 70: (5.72, 279)},
}
PUBLISHED_SETUP = (
    "PostgreSQL 12.2, 4 CPU, 16 GB RAM, SATA SSD, shared_buffers 4 GB, pgbench scales "
    "1000/2500/10000, 12 h per combination, 2 sessions"
)


def scale_for(size: Size, memory_bytes: int) -> int:
    """The pgbench scale whose accounts table (at fillfactor 100) is ``size`` × memory."""
    return max(1, round(SIZE_FACTORS[size] * memory_bytes / BYTES_PER_SCALE))


def point_params(size: Size, fillfactor: int, scale: int) -> dict[str, object]:
    """A point's parameters as stored (``points.params``)."""
    return FillfactorPoint(size, fillfactor, scale).params()


def reference(fillfactors: tuple[int, ...] | list[int]) -> int:
    """The fillfactor the others are compared with: 100 when measured, else the largest."""
    return REFERENCE_FILLFACTOR if REFERENCE_FILLFACTOR in fillfactors else max(fillfactors)


#: Per-point metrics (``points.metrics``). Counters are deltas over the measured window (after
#: the warm-up) on pgbench_accounts; sizes in bytes; times in ms; None where the server lacks
#: the source (pg_stat_statements not loaded, n_tup_newpage_upd before 16).
METRICS: tuple[str, ...] = (
    "tps", "transactions", "latency_mean_ms", "measured_s", "warmup_s",
    "update_calls", "update_mean_ms", "update_stddev_ms",
    "n_tup_upd", "n_tup_hot_upd", "n_tup_newpage_upd", "hot_share", "newpage_share",
    "autovacuum_count",
    "heap_blks_hit", "heap_blks_read", "idx_blks_hit", "idx_blks_read", "hit_ratio",
    "table_bytes_init", "table_bytes_end", "index_bytes_init", "index_bytes_end",
    "table_growth", "index_growth",
    "shared_buffers_bytes", "init_s",
)  # fmt: skip
