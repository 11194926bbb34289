"""Tests of the vacuum report parser on texts captured from real servers.

Unless marked "constructed", every fixture is verbatim PostgreSQL output: the server log's
continuation lines start with a TAB (written here as \\t), long lines are split with a
backslash-newline, which Python removes.
"""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from vacuumlab.collect.vacuum_log import IndexReport, VacuumReport, parse_report, reports_in_log
from vacuumlab.errors import VacuumlabError

BENCH = "postgres.vacuumlab.bench_table"
TWO_INDEXES = (
    IndexReport("bench_table_id_idx", 276, 0, 0, 0),
    IndexReport("bench_table_id_idx1", 276, 0, 0, 0),
)

# PostgreSQL 18.6, log_line_prefix '%m [%p] ', track_cost_delay_timing and track_io_timing on.
PG18_LOG = """\
2026-11-21 20:39:47.472 UTC [27786] LOG:  automatic vacuum of table \
"postgres.vacuumlab.bench_table": index scans: 1
\tpages: 0 removed, 1725 remain, 1725 scanned (100.00% of total), 0 eagerly scanned
\ttuples: 10000 removed, 90000 remain, 0 are dead but not yet removable
\tremovable cutoff: 769, which was 0 XIDs old when operation ended
\tnew relfrozenxid: 769, which is 14 XIDs ahead of previous value
\tfrozen: 0 pages from table (0.00% of total) had 0 tuples frozen
\tvisibility map: 1725 pages set all-visible, 1725 pages set all-frozen (0 were all-visible)
\tindex scan needed: 1725 pages from table (100.00% of total) had 10000 dead item \
identifiers removed
\tindex "bench_table_id_idx": pages: 276 in total, 0 newly deleted, 0 currently deleted, \
0 reusable
\tindex "bench_table_id_idx1": pages: 276 in total, 0 newly deleted, 0 currently deleted, \
0 reusable
\tdelay time: 180.077 ms
\tI/O timings: read: 0.025 ms, write: 0.556 ms
\tavg read rate: 21.489 MB/s, avg write rate: 21.411 MB/s
\tbuffer usage: 5255 hits, 550 reads, 548 dirtied
\tWAL usage: 5726 records, 0 full page images, 389470 bytes, 0 buffers full
\tsystem usage: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.20 s
2026-11-21 20:39:47.527 UTC [27786] LOG:  automatic analyze of table \
"postgres.vacuumlab.bench_table"
\tdelay time: 20.587 ms
"""

# PostgreSQL 18.6, VACUUM (VERBOSE): the INFO notice's message.
PG18_VERBOSE = """\
finished vacuuming "postgres.vacuumlab.bench_table": index scans: 1
pages: 0 removed, 1725 remain, 1725 scanned (100.00% of total), 0 eagerly scanned
tuples: 10000 removed, 80000 remain, 0 are dead but not yet removable
removable cutoff: 771, which was 0 XIDs old when operation ended
new relfrozenxid: 771, which is 2 XIDs ahead of previous value
frozen: 0 pages from table (0.00% of total) had 0 tuples frozen
visibility map: 1724 pages set all-visible, 1724 pages set all-frozen (0 were all-visible)
index scan needed: 1724 pages from table (99.94% of total) had 10000 dead item identifiers removed
index "bench_table_id_idx": pages: 276 in total, 0 newly deleted, 0 currently deleted, 0 reusable
index "bench_table_id_idx1": pages: 276 in total, 0 newly deleted, 0 currently deleted, 0 reusable
delay time: 0.000 ms
I/O timings: read: 0.888 ms, write: 0.029 ms
avg read rate: 122.703 MB/s, avg write rate: 121.868 MB/s
buffer usage: 5485 hits, 294 reads, 292 dirtied
WAL usage: 5723 records, 0 full page images, 389307 bytes, 0 buffers full
system usage: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.01 s"""

# PostgreSQL 15.20 (Debian), VACUUM (VERBOSE) with track_io_timing on: "misses", no "frozen:",
# "visibility map:" or "delay time:" lines, WAL usage without "buffers full".
PG15_VERBOSE = """\
finished vacuuming "vl_logcheck.vacuumlab.bench_table": index scans: 1
pages: 0 removed, 935 remain, 935 scanned (100.00% of total)
tuples: 10000 removed, 90000 remain, 0 are dead but not yet removable
removable cutoff: 22032, which was 0 XIDs old when operation ended
new relfrozenxid: 22032, which is 1 XIDs ahead of previous value
index scan needed: 935 pages from table (100.00% of total) had 10000 dead item identifiers removed
index "bench_table_id_idx": pages: 276 in total, 0 newly deleted, 0 currently deleted, 0 reusable
index "bench_table_id_idx1": pages: 276 in total, 0 newly deleted, 0 currently deleted, 0 reusable
I/O timings: read: 0.508 ms, write: 0.373 ms
avg read rate: 266.870 MB/s, avg write rate: 265.900 MB/s
buffer usage: 2834 hits, 550 misses, 548 dirtied
WAL usage: 3356 records, 0 full page images, 258548 bytes
system usage: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.01 s"""

# PostgreSQL 15.20, VACUUM (VERBOSE, FREEZE) without track_io_timing: the notices in the order
# they arrived (the aggressiveness is only in the first), the table's TOAST relation last.
PG15_VERBOSE_FREEZE_NOTICES = [
    'aggressively vacuuming "vl_logcheck.vacuumlab.bench_table"',
    "launched 1 parallel vacuum worker for index vacuuming (planned: 1)",
    """\
finished vacuuming "vl_logcheck.vacuumlab.bench_table": index scans: 1
pages: 0 removed, 935 remain, 48 scanned (5.13% of total)
tuples: 4500 removed, 85462 remain, 0 are dead but not yet removable
removable cutoff: 22033, which was 0 XIDs old when operation ended
new relfrozenxid: 22033, which is 1 XIDs ahead of previous value
index scan needed: 47 pages from table (5.03% of total) had 4500 dead item identifiers removed
index "bench_table_id_idx": pages: 276 in total, 13 newly deleted, 13 currently deleted, \
0 reusable
index "bench_table_id_idx1": pages: 276 in total, 13 newly deleted, 13 currently deleted, \
0 reusable
avg read rate: 523.575 MB/s, avg write rate: 35.572 MB/s
buffer usage: 381 hits, 471 misses, 32 dirtied
WAL usage: 226 records, 0 full page images, 49988 bytes
system usage: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.00 s""",
    'aggressively vacuuming "vl_logcheck.pg_toast.pg_toast_18285"',
    """\
finished vacuuming "vl_logcheck.pg_toast.pg_toast_18285": index scans: 0
pages: 0 removed, 0 remain, 0 scanned (100.00% of total)
tuples: 0 removed, 0 remain, 0 are dead but not yet removable
removable cutoff: 22033, which was 0 XIDs old when operation ended
new relfrozenxid: 22033, which is 1 XIDs ahead of previous value
index scan not needed: 0 pages from table (100.00% of total) had 0 dead item identifiers \
removed
avg read rate: 0.000 MB/s, avg write rate: 0.000 MB/s
buffer usage: 12 hits, 0 misses, 0 dirtied
WAL usage: 1 records, 0 full page images, 188 bytes
system usage: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.00 s""",
]

# PostgreSQL 15.20 sandbox (autovacuum_naptime 1 s, log_autovacuum_min_duration 0): a plain,
# an aggressive (autovacuum_freeze_table_age = 0) and a non-aggressive anti-wraparound
# vacuum (autovacuum_freeze_max_age = 100000 after 110,000 transactions), with their analyzes.
PG15_LOG = """\
2026-11-21 20:42:17.034 UTC [29930] LOG:  automatic vacuum of table \
"postgres.vacuumlab.bench_table": index scans: 1
\tpages: 0 removed, 935 remain, 935 scanned (100.00% of total)
\ttuples: 10000 removed, 90000 remain, 0 are dead but not yet removable
\tremovable cutoff: 743, which was 0 XIDs old when operation ended
\tnew relfrozenxid: 743, which is 14 XIDs ahead of previous value
\tindex scan needed: 935 pages from table (100.00% of total) had 10000 dead item identifiers \
removed
\tindex "bench_table_id_idx": pages: 276 in total, 0 newly deleted, 0 currently deleted, \
0 reusable
\tindex "bench_table_id_idx1": pages: 276 in total, 0 newly deleted, 0 currently deleted, \
0 reusable
\tI/O timings: read: 2.051 ms, write: 1.068 ms
\tavg read rate: 24.160 MB/s, avg write rate: 24.072 MB/s
\tbuffer usage: 2876 hits, 550 misses, 548 dirtied
\tWAL usage: 3356 records, 0 full page images, 258548 bytes
\tsystem usage: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.17 s
2026-11-21 20:42:17.068 UTC [29930] LOG:  automatic analyze of table \
"postgres.vacuumlab.bench_table"
\tI/O timings: read: 0.000 ms, write: 0.000 ms
\tavg read rate: 0.000 MB/s, avg write rate: 0.000 MB/s
\tbuffer usage: 1131 hits, 0 misses, 0 dirtied
\tsystem usage: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.03 s
2026-11-21 20:42:27.559 UTC [30067] LOG:  automatic aggressive vacuum of table \
"postgres.vacuumlab.aggr": index scans: 0
\tpages: 0 removed, 89 remain, 24 scanned (26.97% of total)
\ttuples: 5000 removed, 14917 remain, 0 are dead but not yet removable
\tremovable cutoff: 749, which was 0 XIDs old when operation ended
\tnew relfrozenxid: 749, which is 3 XIDs ahead of previous value
\tindex scan not needed: 23 pages from table (25.84% of total) had 5000 dead item identifiers \
removed
\tI/O timings: read: 0.000 ms, write: 0.000 ms
\tavg read rate: 0.000 MB/s, avg write rate: 0.000 MB/s
\tbuffer usage: 75 hits, 0 misses, 0 dirtied
\tWAL usage: 70 records, 0 full page images, 23976 bytes
\tsystem usage: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.00 s
2026-11-21 20:42:27.565 UTC [30067] LOG:  automatic analyze of table "postgres.vacuumlab.aggr"
\tI/O timings: read: 0.000 ms, write: 0.000 ms
2026-11-21 20:42:28.662 UTC [30071] LOG:  automatic vacuum to prevent wraparound of table \
"postgres.vacuumlab.wrap": index scans: 0
\tpages: 0 removed, 5 remain, 5 scanned (100.00% of total)
\ttuples: 0 removed, 1000 remain, 0 are dead but not yet removable
\tremovable cutoff: 110754, which was 0 XIDs old when operation ended
\tnew relfrozenxid: 751, which is 1 XIDs ahead of previous value
\tindex scan not needed: 0 pages from table (0.00% of total) had 0 dead item identifiers removed
\tI/O timings: read: 0.031 ms, write: 0.000 ms
\tavg read rate: 34.190 MB/s, avg write rate: 68.381 MB/s
\tbuffer usage: 35 hits, 2 misses, 4 dirtied
\tWAL usage: 6 records, 1 full page images, 8765 bytes
\tsystem usage: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.00 s
"""

# PostgreSQL 18.6 sandbox: autovacuum_freeze_max_age = 100000 and autovacuum_freeze_table_age = 0.
PG18_AGGRESSIVE_WRAPAROUND = """\
2026-11-21 20:43:01.998 UTC [30659] LOG:  automatic aggressive vacuum to prevent wraparound \
of table "postgres.vacuumlab.wrap": index scans: 0
\tpages: 0 removed, 5 remain, 5 scanned (100.00% of total), 0 eagerly scanned
\ttuples: 0 removed, 1000 remain, 0 are dead but not yet removable
\tremovable cutoff: 110757, which was 0 XIDs old when operation ended
\tnew relfrozenxid: 754, which is 1 XIDs ahead of previous value
\tfrozen: 0 pages from table (0.00% of total) had 0 tuples frozen
\tvisibility map: 5 pages set all-visible, 0 pages set all-frozen (0 were all-visible)
\tindex scan not needed: 0 pages from table (0.00% of total) had 0 dead item identifiers removed
\tdelay time: 0.000 ms
\tI/O timings: read: 0.000 ms, write: 0.026 ms
\tavg read rate: 0.000 MB/s, avg write rate: 69.599 MB/s
\tbuffer usage: 40 hits, 0 reads, 4 dirtied
\tWAL usage: 9 records, 4 full page images, 33594 bytes, 0 buffers full
\tsystem usage: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.00 s
"""

# Constructed from the format strings of PostgreSQL 14's vacuumlazy.c (no server at hand):
# "skipped due to pins" instead of "scanned", "oldest xmin" on the tuples line, "system usage"
# before "WAL usage", and a development-cycle "I/O Timings:" line.
PG14_LOG_CONSTRUCTED = """\
2021-06-01 10:00:00.000 UTC [4242] LOG:  automatic vacuum of table "db.public.t": index scans: 1
\tpages: 0 removed, 443 remain, 0 skipped due to pins, 0 skipped frozen
\ttuples: 5000 removed, 45000 remain, 0 are dead but not yet removable, oldest xmin: 1234
\tbuffer usage: 1500 hits, 20 misses, 443 dirtied
\tindex "t_pkey": pages: 140 in total, 0 newly deleted, 0 currently deleted, 0 reusable
\tavg read rate: 1.234 MB/s, avg write rate: 27.302 MB/s
\tI/O Timings: write=0.512
\tsystem usage: CPU: user: 0.03 s, system: 0.00 s, elapsed: 0.13 s
\tWAL usage: 1400 records, 2 full page images, 123456 bytes"""


def test_pg18_log_entry() -> None:
    report = parse_report(PG18_LOG)
    assert report == VacuumReport(
        relation=BENCH,
        automatic=True,
        aggressive=False,
        at=datetime(2026, 11, 21, 20, 39, 47, 472000, tzinfo=UTC),
        index_scans=1,
        pages_removed=0,
        pages_remain=1725,
        pages_scanned=1725,
        tuples_removed=10000,
        tuples_remain=90000,
        tuples_dead_not_removable=0,
        frozen_pages=0,
        vm_all_visible=1725,
        vm_all_frozen=1725,
        indexes=TWO_INDEXES,
        delay_ms=180.077,
        read_ms=0.025,
        write_ms=0.556,
        buffer_hits=5255,
        buffer_reads=550,
        buffer_dirtied=548,
        wal_records=5726,
        wal_fpi=0,
        wal_bytes=389470,
        elapsed_s=0.20,
        wraparound=False,
        tuples_frozen=0,
        cpu_s=0.01,
    )


def test_pg18_verbose_notice() -> None:
    report = parse_report(PG18_VERBOSE)
    assert report == VacuumReport(
        relation=BENCH,
        automatic=False,
        aggressive=False,
        at=None,
        index_scans=1,
        pages_removed=0,
        pages_remain=1725,
        pages_scanned=1725,
        tuples_removed=10000,
        tuples_remain=80000,
        tuples_dead_not_removable=0,
        frozen_pages=0,
        vm_all_visible=1724,
        vm_all_frozen=1724,
        indexes=TWO_INDEXES,
        delay_ms=0.0,
        read_ms=0.888,
        write_ms=0.029,
        buffer_hits=5485,
        buffer_reads=294,
        buffer_dirtied=292,
        wal_records=5723,
        wal_fpi=0,
        wal_bytes=389307,
        elapsed_s=0.01,
        tuples_frozen=0,
        cpu_s=0.01,
    )


def test_cpu_time_is_user_plus_system() -> None:
    idle = "system usage: CPU: user: 0.01 s, system: 0.00 s, elapsed: 0.20 s"
    busy = "system usage: CPU: user: 0.42 s, system: 0.17 s, elapsed: 1.90 s"
    report = parse_report(PG18_LOG.replace(idle, busy))
    assert (report.cpu_s, report.elapsed_s) == (0.59, 1.90)


def test_log_entry_stops_at_the_next_log_line() -> None:
    # The analyze entry that follows has its own "delay time"; it must not leak in.
    without_delay = PG18_LOG.replace("\tdelay time: 180.077 ms\n", "")
    assert parse_report(without_delay).delay_ms is None


def test_pg15_verbose_notice() -> None:
    report = parse_report(PG15_VERBOSE)
    assert report.relation == "vl_logcheck.vacuumlab.bench_table"
    assert (report.pages_removed, report.pages_remain, report.pages_scanned) == (0, 935, 935)
    assert (report.tuples_removed, report.tuples_remain) == (10000, 90000)
    assert report.indexes == TWO_INDEXES
    assert (report.read_ms, report.write_ms) == (0.508, 0.373)
    # PostgreSQL 17 and older say "misses" for what 18 calls "reads".
    assert (report.buffer_hits, report.buffer_reads, report.buffer_dirtied) == (2834, 550, 548)
    assert (report.wal_records, report.wal_fpi, report.wal_bytes) == (3356, 0, 258548)
    assert report.elapsed_s == 0.01
    # Lines that 15 does not print.
    assert report.frozen_pages is None
    assert report.tuples_frozen is None
    assert (report.vm_all_visible, report.vm_all_frozen) == (None, None)
    assert report.delay_ms is None


def test_pg15_verbose_notices_in_sequence() -> None:
    report = parse_report("\n".join(PG15_VERBOSE_FREEZE_NOTICES))
    # The first report only: the TOAST table's lines after it are not mixed in.
    assert report.relation == "vl_logcheck.vacuumlab.bench_table"
    assert report.aggressive
    assert (report.pages_remain, report.pages_scanned, report.tuples_removed) == (935, 48, 4500)
    assert report.indexes[0] == IndexReport("bench_table_id_idx", 276, 13, 13, 0)
    assert (report.read_ms, report.write_ms) == (None, None)  # track_io_timing was off
    assert (report.buffer_hits, report.buffer_reads, report.buffer_dirtied) == (381, 471, 32)


def test_verbose_alone_cannot_tell_aggressive() -> None:
    assert not parse_report(PG15_VERBOSE_FREEZE_NOTICES[2]).aggressive
    toast = parse_report(PG15_VERBOSE_FREEZE_NOTICES[4])
    assert (toast.relation, toast.index_scans, toast.indexes) == (
        "vl_logcheck.pg_toast.pg_toast_18285",
        0,
        (),
    )


def test_pg15_log() -> None:
    reports = reports_in_log(PG15_LOG)
    assert [(r.relation, r.aggressive, r.wraparound) for r in reports] == [
        (BENCH, False, False),
        ("postgres.vacuumlab.aggr", True, False),
        ("postgres.vacuumlab.wrap", False, True),
    ]
    bench, aggr, wrap = reports
    assert bench.at == datetime(2026, 11, 21, 20, 42, 17, 34000, tzinfo=UTC)
    assert (bench.buffer_hits, bench.buffer_reads, bench.buffer_dirtied) == (2876, 550, 548)
    assert (bench.read_ms, bench.write_ms, bench.elapsed_s) == (2.051, 1.068, 0.17)
    assert bench.indexes == TWO_INDEXES
    assert (aggr.pages_scanned, aggr.tuples_removed, aggr.indexes) == (24, 5000, ())
    assert (wrap.wal_records, wrap.wal_fpi, wrap.wal_bytes) == (6, 1, 8765)
    assert all(r.automatic and r.delay_ms is None for r in reports)


def test_pg18_aggressive_wraparound() -> None:
    report = parse_report(PG18_AGGRESSIVE_WRAPAROUND)
    assert (report.relation, report.automatic, report.aggressive, report.wraparound) == (
        "postgres.vacuumlab.wrap",
        True,
        True,
        True,
    )
    assert (report.vm_all_visible, report.vm_all_frozen) == (5, 0)
    assert (report.read_ms, report.write_ms, report.delay_ms) == (0.0, 0.026, 0.0)


def test_aggressive_header_without_wraparound() -> None:
    text = PG18_LOG.replace("automatic vacuum of", "automatic aggressive vacuum of")
    report = parse_report(text)
    assert (report.aggressive, report.wraparound) == (True, False)


def test_pg14_format_constructed() -> None:
    report = parse_report(PG14_LOG_CONSTRUCTED)
    assert (report.pages_removed, report.pages_remain, report.pages_scanned) == (0, 443, None)
    assert (report.tuples_removed, report.tuples_remain) == (5000, 45000)
    assert report.tuples_dead_not_removable == 0
    assert (report.buffer_hits, report.buffer_reads, report.buffer_dirtied) == (1500, 20, 443)
    assert report.indexes == (IndexReport("t_pkey", 140, 0, 0, 0),)
    assert (report.read_ms, report.write_ms) == (0.0, 0.512)  # a zero part was left out
    assert (report.wal_records, report.wal_fpi, report.wal_bytes) == (1400, 2, 123456)
    assert report.elapsed_s == 0.13


def test_analyze_entries_are_ignored() -> None:
    reports = reports_in_log(PG18_LOG)
    assert len(reports) == 1
    assert reports[0].delay_ms == 180.077
    analyze_only = PG18_LOG[PG18_LOG.index("2026-11-21 20:39:47.527") :]
    assert reports_in_log(analyze_only) == []
    with pytest.raises(VacuumlabError, match="not a PostgreSQL vacuum report"):
        parse_report(analyze_only)


def test_interleaved_lines_end_an_entry() -> None:
    other = "2026-11-21 20:39:47.470 UTC [27001] LOG:  checkpoint starting: time"
    lines = PG18_LOG.split("\n")
    cut = next(i for i, line in enumerate(lines) if line.startswith("\tdelay time"))
    log = "\n".join([other, *lines[:cut], other, *lines[cut:]])
    (report,) = reports_in_log(log)
    assert report.indexes == TWO_INDEXES
    # The orphaned continuation lines after the interleaved one are not the vacuum's.
    assert (report.delay_ms, report.buffer_hits, report.elapsed_s) == (None, None, None)


def test_unrelated_lines_and_crlf() -> None:
    log = "\r\n".join(
        [
            "2026-11-21 20:39:40.000 UTC [100] LOG:  database system is ready to accept "
            "connections",
            '2026-11-21 20:39:41.000 UTC [101] ERROR:  relation "nope" does not exist',
            "\tSTATEMENT:  select * from nope",  # a TAB line that follows no vacuum
            *PG15_LOG.split("\n"),
        ]
    )
    reports = reports_in_log(log)
    assert [r.relation for r in reports] == [
        BENCH,
        "postgres.vacuumlab.aggr",
        "postgres.vacuumlab.wrap",
    ]
    assert reports[0].elapsed_s == 0.17


def test_relation_filter() -> None:
    (report,) = reports_in_log(PG15_LOG, relation="postgres.vacuumlab.aggr")
    assert report.tuples_removed == 5000
    assert reports_in_log(PG15_LOG, relation="postgres.vacuumlab.missing") == []
    # The name as printed, with the database: schema.table alone does not match.
    assert reports_in_log(PG15_LOG, relation="vacuumlab.aggr") == []


def test_verbose_output_in_a_log_is_not_an_autovacuum() -> None:
    logged = "2026-11-21 20:39:47.472 UTC [300] INFO:  " + PG15_VERBOSE.replace("\n", "\n\t")
    assert reports_in_log(logged) == []
    assert parse_report(logged).buffer_reads == 550


def test_missing_fields_are_none() -> None:
    report = parse_report('finished vacuuming "a.b.c": index scans: 0')
    assert report.relation == "a.b.c"
    assert report.index_scans == 0
    assert report.indexes == ()
    optional = [
        getattr(report, name)
        for name in VacuumReport.__slots__
        if name
        not in {"relation", "automatic", "aggressive", "wraparound", "index_scans", "indexes"}
    ]
    assert optional
    assert all(value is None for value in optional)


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        (
            "2026-11-21 20:39:47.472 UTC [1] ",
            datetime(2026, 11, 21, 20, 39, 47, 472000, tzinfo=UTC),
        ),
        ("2026-11-21 20:39:47 GMT [1] ", datetime(2026, 11, 21, 20, 39, 47, tzinfo=UTC)),
        (
            "2026-11-21 23:39:47.472 +03 [1] ",
            datetime(2026, 11, 21, 23, 39, 47, 472000, tzinfo=timezone(timedelta(hours=3))),
        ),
        (
            "2026-11-21 15:09:47.472 -0530 [1] ",
            datetime(
                2026, 11, 21, 15, 9, 47, 472000, tzinfo=timezone(-timedelta(hours=5, minutes=30))
            ),
        ),
        ("2026-11-21 21:39:47.472 CET [1] ", datetime(2026, 11, 21, 21, 39, 47, 472000)),
        ("[1] ", None),
        ("", None),
    ],
)
def test_log_timestamps(prefix: str, expected: datetime | None) -> None:
    text = f'{prefix}LOG:  automatic vacuum of table "a.b.c": index scans: 0\n\tdelay time: 1.5 ms'
    report = parse_report(text)
    assert report.at == expected
    assert report.delay_ms == 1.5
    if expected is not None and expected.tzinfo is not None:
        assert report.at is not None
        assert report.at.utcoffset() == expected.utcoffset()


def test_relation_names_with_odd_characters() -> None:
    # Names are printed raw, quotes and all.
    text = (
        'finished vacuuming "my db.My Schema.t "x": y": index scans: 2\n'
        "buffer usage: 1 hits, 2 reads, 3 dirtied"
    )
    report = parse_report(text)
    assert report.relation == 'my db.My Schema.t "x": y'
    assert (report.index_scans, report.buffer_dirtied) == (2, 3)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n",
        "hello world",
        'vacuuming "postgres.vacuumlab.bench_table"',
        'INFO:  "bench_table": found 0 removable, 0 nonremovable row versions in 0 pages',
    ],
)
def test_garbage_is_rejected(text: str) -> None:
    with pytest.raises(VacuumlabError, match="not a PostgreSQL vacuum report") as info:
        parse_report(text)
    assert "\n" not in str(info.value)
