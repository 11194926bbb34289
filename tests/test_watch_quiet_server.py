"""In a large database a live view leaves the quiet tables to the server to count
(pg/queries/fragments/quiet.sql): the view it builds from the tables the server still sends
is the view built from every table, less rows that would have said nothing.

The database here is small; the threshold is lowered so the filter applies."""

from __future__ import annotations

import pytest

from helpers.db import execute, wait_for_counts
from vacuumlab.records.live import LiveView, TableLive
from vacuumlab.watch import source as source_module
from vacuumlab.watch import view as view_module
from vacuumlab.watch.source import Source

IDLE = 20


def _tables(dsn: str) -> None:
    execute(
        dsn,
        *(f"CREATE TABLE idle_{n} (id int PRIMARY KEY, body text)" for n in range(IDLE)),
        "CREATE TABLE busy (id int PRIMARY KEY) WITH (autovacuum_enabled = off)",
        "INSERT INTO busy SELECT generate_series(1, 3000)",
        "DELETE FROM busy WHERE id <= 2000",
        "CREATE TABLE tuned (id int) WITH (autovacuum_vacuum_scale_factor = 0.01)",
        "CREATE TABLE vacuumed_between (id int)",
        "INSERT INTO vacuumed_between SELECT generate_series(1, 500)",
    )
    wait_for_counts(dsn, "busy", "n_dead_tup", 2000)
    wait_for_counts(dsn, "vacuumed_between", "n_ins_since_vacuum", 500)


def _quiet(row: TableLive) -> bool:
    return row.dead == 0 and row.inserted == 0 and not row.due and not row.dead_per_second


def test_the_servers_filter_leaves_out_only_quiet_tables(
    embedded_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tables(embedded_database)
    whole, filtered = Source(embedded_database), Source(embedded_database)
    views: dict[str, list[LiveView]] = {"whole": [], "filtered": []}
    try:
        for turn in range(3):
            if turn == 2:
                # Vacuumed and analyzed between two refreshes: no counter left, yet it moved.
                execute(embedded_database, "VACUUM ANALYZE vacuumed_between")
                wait_for_counts(embedded_database, "vacuumed_between", "vacuum_count", 1)
                wait_for_counts(embedded_database, "vacuumed_between", "analyze_count", 1)
            for name, src in (("whole", whole), ("filtered", filtered)):
                low = 0 if name == "filtered" else 10**9
                monkeypatch.setattr(source_module, "QUIET_FROM", low)
                monkeypatch.setattr(view_module, "QUIET_FROM", 10**9)  # no client split
                refreshed = src.refresh()
                assert refreshed.view is not None, refreshed.error
                views[name].append(refreshed.view)
    finally:
        whole.close()
        filtered.close()
    all_rows, some = views["whole"][-1], views["filtered"][-1]
    assert views["filtered"][0].quiet == 0  # the first refresh lists every table
    assert some.quiet > 0
    for field in ("relations", "due", "dead_tuples", "past_threshold", "wraparound"):
        assert getattr(some, field) == getattr(all_rows, field), field
    by_label = {row.label: row for row in all_rows.tables}
    listed = {row.label for row in some.tables}
    assert {"public.busy", "public.tuned", "public.vacuumed_between"} <= listed
    assert len(listed) + some.quiet == all_rows.relations
    left_out = [row for label, row in by_label.items() if label not in listed]
    assert left_out
    assert all(_quiet(row) for row in left_out), [r.label for r in left_out if not _quiet(r)]
    for row in some.tables:
        expected = by_label[row.label]
        assert (row.dead, row.inserted, row.vacuum_threshold) == (
            expected.dead,
            expected.inserted,
            expected.vacuum_threshold,
        )
