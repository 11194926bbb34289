"""What differs between the PostgreSQL versions vacuumlab supports, in one place.

The supported majors (:data:`SUPPORTED`), the oldest one a connection accepts
(:data:`MIN_MAJOR`), and the changes between majors that matter to vacuum and to what
vacuumlab measures (:data:`CHANGES`), each with the major that brought it. Reports read the
changes between two runs' versions from :func:`changes_between`.

Below them, the facts those changes come down to, as tables that tests check against real
servers of every supported major (``tests/helpers/version_facts.py``):

- :data:`SETTINGS`: every server setting vacuumlab reads or sets, the majors that have it and
  its compiled-in default (``pg_settings.boot_val``) in each;
- :data:`COLUMNS`: the columns of the statistics views and catalogs that only some majors
  have, each with the queries (``pg/queries/<name>_post_NNNNNN.sql``, or a fragment) whose
  version split it explains;
- :data:`BEHAVIOURS`: what a query's split rests on where no column or setting shows it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from vacuumlab.errors import VacuumlabError

#: The majors vacuumlab is tested on, oldest first.
SUPPORTED: tuple[int, ...] = (13, 14, 15, 16, 17, 18)
#: The oldest major a connection accepts.
MIN_MAJOR = SUPPORTED[0]
#: The newest major the PostgreSQL project no longer supports (13 ended in November 2025).
OUT_OF_SUPPORT: frozenset[int] = frozenset({13})


@dataclass(frozen=True, slots=True)
class Change:
    """A change in PostgreSQL that vacuum's work, or what vacuumlab reads of it, shows."""

    since: int  # the major that brought it
    what: str  # one sentence
    studies: tuple[str, ...] = ()  # the studies whose figures it can move


CHANGES: tuple[Change, ...] = (
    Change(
        14,
        "VACUUM skips the index passes when fewer than 2 % of the table's pages hold dead "
        "items (the index-cleanup bypass), and vacuum_cost_page_miss falls from 10 to 2.",
        ("cost-driver",),
    ),
    Change(
        16,
        "pg_stat_io counts reads, writes and extends per backend type and context, "
        "autovacuum workers and VACUUM included.",
        ("cost-driver",),
    ),
    Change(
        17,
        "VACUUM keeps dead tuple ids in a TID store instead of an array of 6 bytes each: "
        "the same memory holds many more of them, so large vacuums run fewer index passes "
        "and use less memory, and pg_stat_progress_vacuum reports bytes "
        "(max_dead_tuple_bytes, dead_tuple_bytes) instead of tuple counts.",
        ("cost-driver",),
    ),
    Change(
        18,
        "VACUUM freezes all-visible pages eagerly on normal vacuums "
        "(vacuum_max_eager_freeze_failure_rate), and reads through asynchronous I/O "
        "(io_method, worker by default).",
        ("cost-driver",),
    ),
    Change(
        18,
        "initdb turns data checksums on by default: the first hint bit set on a page after "
        "a checkpoint then logs the whole page (FPI_FOR_HINT), so a vacuum of a cluster made "
        "by 18's initdb writes more WAL than one made by an older initdb (vacuumlab's "
        "sandboxes have checksums on every major).",
        ("cost-driver", "toast"),
    ),
)


def major_of(version: str) -> int | None:
    """The PostgreSQL major of a recorded server version ("18.6", "PostgreSQL 16.14 on
    x86_64-pc-linux-gnu, …", "18beta1"); None when it names none."""
    found = re.search(r"\d+", version)
    return int(found.group()) if found else None


def changes_between(older: int, newer: int, study: str | None = None) -> list[Change]:
    """The changes a server of major ``newer`` has that one of ``older`` lacks (in either
    order of the arguments), oldest first; with ``study``, only those that can move its
    figures."""
    low, high = sorted((older, newer))
    return [c for c in CHANGES if low < c.since <= high and (study is None or study in c.studies)]


@dataclass(frozen=True, slots=True)
class Setting:
    """A server setting (GUC) vacuumlab reads or sets, as ``pg_settings`` shows it.

    ``default`` is its ``boot_val`` (the compiled-in default, in the setting's base unit: what
    ``pg_settings.setting`` reads on a server nobody tuned) from ``since`` on, and ``changes``
    the majors where that default changed, with the new one. None: a default that depends on
    the build or the platform, not checked.
    """

    name: str
    default: str | None
    since: int = MIN_MAJOR  # the first major that has it; MIN_MAJOR for an older setting
    until: int | None = None  # the last major that has it, if a supported one dropped it
    changes: tuple[tuple[int, str], ...] = ()  # (major, new boot_val), ascending
    queries: tuple[str, ...] = ()  # the pg/queries files whose version split it explains

    def exists_in(self, major: int) -> bool:
        return self.since <= major and (self.until is None or major <= self.until)

    def default_in(self, major: int) -> str | None:
        """Its boot_val on a server of ``major`` (which must have it)."""
        if not self.exists_in(major):
            raise VacuumlabError(f"PostgreSQL {major} has no setting {self.name}")
        default = self.default
        for since, value in self.changes:
            if since <= major:
                default = value
        return default


@dataclass(frozen=True, slots=True)
class Column:
    """A column of a view or catalog that only some supported majors have."""

    relation: str  # in pg_catalog, or in the schema of ``extension``
    name: str
    since: int  # the first major that has it
    until: int | None = None  # the last major that has it, if a supported one dropped it
    queries: tuple[str, ...] = ()  # the pg/queries files whose version split it explains
    extension: str | None = None  # the (optional) extension whose view it is

    def exists_in(self, major: int) -> bool:
        return self.since <= major and (self.until is None or major <= self.until)


@dataclass(frozen=True, slots=True)
class Behaviour:
    """A difference between majors that no column or setting shows, named so that a test can
    probe it on a server (``tests/helpers/version_facts.py`` has a probe for each name)."""

    name: str
    since: int
    what: str
    queries: tuple[str, ...] = ()


#: Every server setting vacuumlab reads or sets: the knobs it recommends (model/knobs.py), the
#: stock settings the simulator assumes, the cost settings the cost-driver study records, the
#: settings the sandbox writes (pg/sandbox.py), every setting pg/queries/settings.sql reads
#: (all whose name has "vacuum") and every current_setting() of pg/queries. Checked against
#: pg_settings of each major: 13.23, 14.23, 15.20, 16.14, 17.10 and 18.6.
SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        # Autovacuum's launcher, workers and thresholds (autovacuum.c).
        Setting("autovacuum", "on"),
        Setting("track_counts", "on"),
        Setting("autovacuum_naptime", "60"),
        Setting("autovacuum_max_workers", "3"),  # no restart needed from 18
        Setting("autovacuum_worker_slots", "16", since=18),
        Setting("autovacuum_vacuum_threshold", "50"),
        Setting("autovacuum_vacuum_scale_factor", "0.2"),
        Setting("autovacuum_vacuum_max_threshold", "100000000", since=18),
        Setting("autovacuum_vacuum_insert_threshold", "1000", since=13),
        Setting("autovacuum_vacuum_insert_scale_factor", "0.2", since=13),
        Setting("autovacuum_analyze_threshold", "50"),
        Setting("autovacuum_analyze_scale_factor", "0.1"),
        Setting("autovacuum_freeze_max_age", "200000000"),
        Setting("autovacuum_multixact_freeze_max_age", "400000000"),
        Setting("autovacuum_vacuum_cost_delay", "2"),  # ms; 20 before 12
        Setting("autovacuum_vacuum_cost_limit", "-1"),
        Setting("autovacuum_work_mem", "-1"),
        Setting("log_autovacuum_min_duration", "-1", changes=((15, "600000"),)),
        # Vacuum's cost accounting (vacuum.c): a page miss costs 2 from 14, 10 before.
        Setting("vacuum_cost_delay", "0"),
        Setting("vacuum_cost_limit", "200"),
        Setting("vacuum_cost_page_hit", "1"),
        Setting("vacuum_cost_page_miss", "10", changes=((14, "2"),)),
        Setting("vacuum_cost_page_dirty", "20"),
        Setting("track_cost_delay_timing", "off", since=18),
        # Freezing, the failsafe and what a vacuum may use (vacuumlazy.c).
        Setting("vacuum_freeze_min_age", "50000000"),
        Setting("vacuum_freeze_table_age", "150000000"),
        Setting("vacuum_multixact_freeze_min_age", "5000000"),
        Setting("vacuum_multixact_freeze_table_age", "150000000"),
        Setting("vacuum_failsafe_age", "1600000000", since=14),
        Setting("vacuum_multixact_failsafe_age", "1600000000", since=14),
        Setting("vacuum_max_eager_freeze_failure_rate", "0.03", since=18),
        Setting("vacuum_buffer_usage_limit", "256", since=16, changes=((17, "2048"),)),
        Setting("vacuum_truncate", "on", since=18),  # the GUC; the reloption is older (12)
        Setting("vacuum_cleanup_index_scale_factor", "0.1", until=13),
        Setting("vacuum_defer_cleanup_age", "0", until=15),
        Setting("maintenance_work_mem", "65536"),  # kB
        Setting("max_parallel_maintenance_workers", "2"),
        Setting("max_worker_processes", "8"),
        # I/O: 17 adds io_combine_limit, 18 asynchronous I/O and higher prefetch depths.
        Setting("io_method", "worker", since=18),
        Setting("io_combine_limit", "16", since=17),  # blocks
        # Where posix_fadvise() exists (Linux); 0 elsewhere.
        Setting("effective_io_concurrency", "1", changes=((18, "16"),)),
        Setting("maintenance_io_concurrency", "10", changes=((18, "16"),)),
        Setting("shared_buffers", "1024", changes=((15, "16384"),)),  # 8 kB blocks
        Setting("effective_cache_size", "524288"),  # 8 kB blocks
        Setting("bgwriter_delay", "200"),
        Setting("bgwriter_lru_maxpages", "100"),
        Setting("bgwriter_lru_multiplier", "2"),
        # WAL and checkpoints.
        Setting("wal_level", "replica"),
        Setting("full_page_writes", "on"),
        Setting("wal_compression", "off"),  # an enum from 15 (pglz, lz4, zstd), a bool before
        Setting("checkpoint_timeout", "300"),
        Setting("max_wal_size", "1024"),  # MB
        Setting("log_checkpoints", "off", changes=((15, "on"),)),
        Setting("track_io_timing", "off"),
        Setting("track_wal_io_timing", "off", since=14),
        # What holds the xmin horizon back, and the timeouts that bound it.
        Setting("hot_standby_feedback", "off"),
        Setting("max_standby_streaming_delay", "30000"),
        Setting("old_snapshot_threshold", "-1", until=16),
        Setting("idle_in_transaction_session_timeout", "0"),
        Setting("transaction_timeout", "0", since=17),
        Setting("statement_timeout", "0"),
        Setting("lock_timeout", "0"),
        Setting("deadlock_timeout", "1000"),
        Setting("max_prepared_transactions", "0"),
        Setting("max_connections", "100"),
        Setting("default_statistics_target", "100"),
        Setting("stats_fetch_consistency", "cache", since=15),
        # What the server is and how it stores pages and values (server_info, server_facts).
        Setting("server_version_num", None),  # the minor release's
        Setting("block_size", "8192"),
        Setting("segment_size", "131072"),  # blocks: 1 GB
        Setting("data_checksums", "off"),  # initdb chooses (on by default from 18)
        Setting("default_toast_compression", "pglz", since=14, queries=("server_facts",)),
        # What the sandbox and the sessions set (pg/sandbox.py, pg/connect.py).
        Setting("listen_addresses", "localhost"),
        Setting("unix_socket_directories", None),  # the build's (Debian: /var/run/postgresql)
        Setting("shared_preload_libraries", ""),
        Setting("lc_messages", ""),
        Setting("log_line_prefix", "%m [%p] "),
        Setting("application_name", ""),
        Setting("default_transaction_read_only", "off"),
    )
}


def _columns(
    relation: str,
    names: Iterable[str],
    since: int,
    until: int | None = None,
    queries: tuple[str, ...] = (),
    extension: str | None = None,
) -> tuple[Column, ...]:
    return tuple(Column(relation, n, since, until, queries, extension) for n in names)


_STATEMENTS = "pg_stat_statements"

#: The columns of the views and catalogs vacuumlab reads that only some supported majors have
#: (and a few more of the same views, for what they tell of a version). ``queries`` names the
#: files (``pg/queries``, or fragments) whose ``_post_`` split the column explains. Checked
#: against pg_attribute of each major; pg_stat_statements in its default version for the
#: major (1.8 in 13, 1.9, 1.10 in 15 and 16, 1.11, 1.12 in 18).
COLUMNS: tuple[Column, ...] = (
    # 17 keeps dead item ids in a TID store (vacuumlazy.c): bytes, not a tuple count and cap.
    *_columns("pg_stat_progress_vacuum", ("num_dead_tuples", "max_dead_tuples"), 13, 16,
              ("vacuums",)),
    *_columns("pg_stat_progress_vacuum",
              ("num_dead_item_ids", "dead_tuple_bytes", "max_dead_tuple_bytes", "indexes_total",
               "indexes_processed"), 17, None, ("vacuums",)),
    # 18 counts the time vacuum slept in cost delays (with track_cost_delay_timing).
    Column("pg_stat_progress_vacuum", "delay_time", 18, None, ("vacuums",)),
    Column("pg_stat_progress_analyze", "delay_time", 18),
    # 17 moves the checkpointer's counters to pg_stat_checkpointer, and drops the backends'
    # own writes from pg_stat_bgwriter (pg_stat_io counts them).
    *_columns("pg_stat_bgwriter",
              ("checkpoints_timed", "checkpoints_req", "checkpoint_write_time",
               "checkpoint_sync_time", "buffers_checkpoint"), 13, 16, ("checkpointer",)),
    Column("pg_stat_bgwriter", "buffers_backend", 13, 16, ("bgwriter",)),
    Column("pg_stat_bgwriter", "buffers_backend_fsync", 13, 16),
    *_columns("pg_stat_checkpointer",
              ("num_timed", "num_requested", "write_time", "sync_time", "buffers_written"), 17,
              None, ("checkpointer",)),
    # 14 adds pg_stat_wal; 18 moves its write and sync counts to pg_stat_io.
    *_columns("pg_stat_wal", ("wal_records", "wal_fpi", "wal_bytes", "wal_buffers_full"), 14,
              None, ("wal",)),
    *_columns("pg_stat_wal", ("wal_write", "wal_sync", "wal_write_time", "wal_sync_time"), 14,
              17),
    # 16 adds pg_stat_io; 18 counts its reads and writes in bytes (operations combine several
    # blocks) and drops op_bytes.
    *_columns("pg_stat_io", ("backend_type", "reads", "writes"), 16, None,
              ("io", "autovacuum_io")),
    *_columns("pg_stat_io",
              ("object", "context", "read_time", "write_time", "writebacks", "extends", "hits",
               "evictions", "reuses", "fsyncs"), 16, None, ("io",)),
    Column("pg_stat_io", "op_bytes", 16, 17, ("io", "autovacuum_io")),
    *_columns("pg_stat_io", ("read_bytes", "write_bytes"), 18, None, ("io", "autovacuum_io")),
    Column("pg_stat_io", "extend_bytes", 18, None, ("io",)),
    # The cumulative statistics of tables: 16 adds updates to a new page and the last scans,
    # 18 the time spent in (auto)vacuum and (auto)analyze.
    Column("pg_stat_all_tables", "n_tup_newpage_upd", 16, None, ("newpage_updated",)),
    *_columns("pg_stat_all_tables", ("last_seq_scan", "last_idx_scan"), 16),
    *_columns("pg_stat_all_tables",
              ("total_vacuum_time", "total_analyze_time", "total_autoanalyze_time"), 18, None,
              ("vacuum_times",)),
    Column("pg_stat_all_tables", "total_autovacuum_time", 18, None,
           ("vacuum_times", "autovacuum_time", "schedule_sample")),
    # 18 counts the all-frozen pages in pg_class (the insert threshold's scale term uses it).
    Column("pg_class", "relallfrozen", 18, None, ("relallfrozen", "toast_relations")),
    # 14 adds per-column TOAST compression (lz4).
    Column("pg_attribute", "attcompression", 14, None, ("compression",)),
    # pg_stat_statements: 13 splits planning from execution time (total_time before), 14 adds
    # toplevel, 15 temp file and JIT timings, 17 renames the block timings shared_*, 18 adds
    # parallel workers and WAL buffers full.
    *_columns(_STATEMENTS, ("total_exec_time", "stddev_exec_time"), 13, None, (), _STATEMENTS),
    Column(_STATEMENTS, "toplevel", 14, None, ("statements",), _STATEMENTS),
    *_columns(_STATEMENTS, ("temp_blk_read_time", "temp_blk_write_time", "jit_functions"), 15,
              None, (), _STATEMENTS),
    *_columns(_STATEMENTS, ("blk_read_time", "blk_write_time"), 13, 16, (), _STATEMENTS),
    *_columns(_STATEMENTS,
              ("shared_blk_read_time", "shared_blk_write_time", "local_blk_read_time",
               "local_blk_write_time", "stats_since"), 17, None, (), _STATEMENTS),
    *_columns(_STATEMENTS,
              ("parallel_workers_to_launch", "parallel_workers_launched", "wal_buffers_full"),
              18, None, (), _STATEMENTS),
)  # fmt: skip

#: Differences no column or setting shows.
BEHAVIOURS: tuple[Behaviour, ...] = (
    Behaviour(
        "reltuples_unknown",
        14,
        "pg_class.reltuples is -1 until a relation's first vacuum or analyze (0 before), and "
        "ANALYZE of a partitioned table sets its reltuples and last_analyze (analyze.c): "
        "before 14 an analyzed partitioned table looks like one never analyzed.",
        ("partitioned",),
    ),
    Behaviour(
        "io_counts_wal",
        18,
        "pg_stat_io counts WAL reads and writes too (object 'wal'), so a backend type's writes "
        "summed over every object include the WAL it wrote: what a vacuum wrote of tables and "
        "indexes is the rows of the other objects.",
        ("autovacuum_io", "io"),
    ),
)


def setting(name: str) -> Setting:
    try:
        return SETTINGS[name]
    except KeyError:
        raise VacuumlabError(f"internal: no version facts for setting {name!r}") from None


def boot_value(name: str, major: int) -> str:
    """The compiled-in default of setting ``name`` on a server of ``major`` (a major newer than
    the table knows has the newest one)."""
    value = setting(name).default_in(major)
    if value is None:
        raise VacuumlabError(f"internal: the default of {name} depends on the build")
    return value
