"""The snapshot file, schema 2 (records/snapshot_file.py): relations as columns, defaults left
out. A snapshot of a real server reads back equal field for field; schema 1's stored pair
still loads and advises as it did; a damaged file is one line of error from the command."""

from __future__ import annotations

import copy
import gzip
import json
import time
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from helpers.cli import assert_one_line_error, run_cli
from helpers.db import execute
from vacuumlab.advise import advise
from vacuumlab.collect.snapshot import collect
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.connect import connect
from vacuumlab.records.snapshot import Relation, Snapshot, Table, load_snapshot, parse_snapshot
from vacuumlab.records.snapshot_file import SCHEMA_VERSION

PAIR = Path(__file__).parent / "data" / "advise_pair.json.gz"

SCENARIO = (
    # Never vacuumed nor analysed, with reloptions of its own and of its TOAST relation.
    """CREATE TABLE never (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = false,
        fillfactor = 80, toast.autovacuum_vacuum_scale_factor = 0.05)""",
    "INSERT INTO never SELECT i, md5(i::text) FROM generate_series(1, 500) i",
    # Vacuumed and analysed, its TOAST relation holding rows (4 kB of md5 text per row).
    "CREATE TABLE vacuumed (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = false)",
    """INSERT INTO vacuumed SELECT i, (SELECT string_agg(md5(i::text || j::text), '')
        FROM generate_series(1, 128) j) FROM generate_series(1, 100) i""",
    "DELETE FROM vacuumed WHERE id <= 20",
    "VACUUM ANALYZE vacuumed",
    # A materialized view: kind "m" among the heaps.
    "CREATE MATERIALIZED VIEW counted AS SELECT count(*) AS n FROM never",
)


def snapshot_of(dsn: str) -> Snapshot:
    with connect(dsn) as session:
        return collect(session)


def heap(snap: Snapshot, name: str) -> Table:
    return next(t for t in snap.tables if t.heap.name == name)


def written(snap: Snapshot) -> dict[str, Any]:
    """The file ``snap`` writes, as JSON data."""
    raw: dict[str, Any] = json.loads(snap.dump_json())
    return raw


def read_back(snap: Snapshot) -> Snapshot:
    return parse_snapshot(json.loads(snap.dump_json()), "snap.json")


def assert_same(back: Snapshot, snap: Snapshot) -> None:
    """Equal, and equal as JSON too: an int read as a float or a lost offset would show."""
    assert back == snap
    assert back.model_dump_json() == snap.model_dump_json()
    for got, want in zip(relations(back), relations(snap), strict=True):
        for name in Relation.model_fields:
            value, expected = getattr(got, name), getattr(want, name)
            assert type(value) is type(expected), (want.name, name)
            if isinstance(expected, datetime):
                assert value.utcoffset() == expected.utcoffset(), (want.name, name)


def relations(snap: Snapshot) -> list[Relation]:
    return [r for t in snap.tables for r in (t.heap, t.toast) if r is not None]


@pytest.fixture
def scenario(database: str) -> Snapshot:
    """A snapshot of the scenario, once VACUUM's counts are in the shared statistics."""
    execute(database, *SCENARIO)
    deadline = time.monotonic() + 10
    while True:
        snap = snapshot_of(database)
        if heap(snap, "vacuumed").heap.vacuum_count or time.monotonic() > deadline:
            return snap
        time.sleep(0.2)


def test_a_real_snapshot_reads_back_equal_field_for_field(scenario: Snapshot) -> None:
    never, vacuumed = heap(scenario, "never"), heap(scenario, "vacuumed")
    assert never.heap.last_vacuum is None
    assert never.heap.reltuples == -1
    assert never.heap.reloptions == {"autovacuum_enabled": "false", "fillfactor": "80"}
    assert never.toast is not None
    assert never.toast.reloptions == {"autovacuum_vacuum_scale_factor": "0.05"}
    assert vacuumed.heap.last_vacuum is not None
    assert vacuumed.heap.vacuum_count == 1
    assert vacuumed.toast is not None
    assert vacuumed.toast.relpages > 0
    assert heap(scenario, "counted").heap.kind == "m"
    back = read_back(scenario)
    assert_same(back, scenario)
    # Built as the snapshot builds them: one set of the fields given for every relation,
    # another for every table (2.2 kB a relation otherwise).
    assert len({id(r.__pydantic_fields_set__) for r in relations(back)}) == 1
    assert len({id(t.__pydantic_fields_set__) for t in back.tables}) == 1


def test_the_file_holds_columns_with_defaults_left_out(scenario: Snapshot) -> None:
    raw = written(scenario)
    assert raw["schema_version"] == SCHEMA_VERSION == 2
    heaps, toasts = raw["tables"]["heap"], raw["tables"]["toast"]
    assert heaps["rows"] == len(scenario.tables)
    assert toasts["rows"] == sum(t.toast is not None for t in scenario.tables)
    assert heaps["columns"]["oid"] == [t.heap.oid for t in scenario.tables]
    assert toasts["columns"]["toast_of"] == [t.heap.oid for t in scenario.tables if t.toast]
    # TOAST relations live in pg_toast as pg_toast_<table oid>, are never analysed and have
    # no TOAST of their own: all of it a default.
    left_out = {"schema_name", "name", "kind", "last_analyze", "last_autoanalyze", "toast_bytes"}
    assert not left_out & set(toasts["columns"])
    assert "reloptions" in toasts["columns"]
    assert "toast_of" not in heaps["columns"]
    assert set(raw) <= set(Snapshot.model_fields)
    # The other records leave out their nulls (a setting without a unit) and defaults.
    assert raw["settings"]
    assert not any(v is None for s in raw["settings"] for v in s.values())


@pytest.mark.parametrize("offset", [timedelta(0), timedelta(hours=5, minutes=30)])
def test_old_servers_nulls_zeros_and_offsets_survive(scenario: Snapshot, offset: timedelta) -> None:
    """What an older server leaves null (relallfrozen before 18, new-page updates before 16)
    reads back null, a 0 stays 0 beside a null, and a time keeps its offset."""
    moment = datetime(2026, 11, 28, 12, 0, 0, 123456, tzinfo=timezone(offset))
    old = [
        (t.heap.model_copy(update={"relallfrozen": None, "n_tup_newpage_upd": None}), t.toast)
        for t in scenario.tables
    ]
    (first, first_toast), (second, second_toast) = old[0], old[1]
    old[0] = first.model_copy(update={"heap_bytes": None, "last_autovacuum": moment}), first_toast
    old[1] = second.model_copy(update={"heap_bytes": 0, "n_dead_tup": None}), second_toast
    snap = scenario.model_copy(update={"tables": [Table(heap=h, toast=t) for h, t in old]})
    columns = written(snap)["tables"]["heap"]["columns"]
    assert "relallfrozen" not in columns
    assert "n_tup_newpage_upd" not in columns
    assert columns["heap_bytes"][:2] == [None, 0]
    back = read_back(snap)
    assert_same(back, snap)
    assert back.tables[0].heap.last_autovacuum == moment
    assert back.tables[1].heap.heap_bytes == 0
    assert back.tables[0].heap.heap_bytes is None


@cache
def stored_pair() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(gzip.decompress(PAIR.read_bytes()))
    return raw


def v1(key: str) -> Snapshot:
    return parse_snapshot(copy.deepcopy(stored_pair()[key]), f"{PAIR.name}:{key}")


def test_schema_1_still_loads_and_advises_as_schema_2_does() -> None:
    """The stored pair is schema 1; written again as schema 2 it is a seventh of the size (or
    less) and reads back to the same snapshot, whose advice is the same finding for finding."""
    first, later = v1("first"), v1("later")
    assert (first.schema_version, later.schema_version) == (1, 1)
    again = [read_back(s) for s in (first, later)]
    assert [s.schema_version for s in again] == [2, 2]
    for back, snap in zip(again, (first, later), strict=True):
        assert_same(back.model_copy(update={"schema_version": 1}), snap)
    old_size = len(json.dumps(stored_pair()["later"], indent=2))
    assert len(later.dump_json()) * 7 < old_size
    before, after = advise(first, later), advise(*again)
    assert before.findings
    assert after.model_dump_json() == before.model_dump_json()


def test_a_snapshot_packed_whole_with_schema_2_still_reads() -> None:
    """``watch --record`` packs the record's own JSON (one object per relation), now stamped
    with schema 2: that shape still reads."""
    later = v1("later").model_copy(update={"schema_version": SCHEMA_VERSION})
    assert parse_snapshot(json.loads(later.model_dump_json()), "packed") == later


def damaged(change: str) -> dict[str, Any]:
    """The stored pair's later snapshot as a schema-2 file, damaged as ``change`` says."""
    raw = written(v1("later"))
    heaps = raw["tables"]["heap"]["columns"]
    if change == "truncated column":
        heaps["oid"].pop()
    elif change == "unknown column":
        heaps["bloat"] = [0] * raw["tables"]["heap"]["rows"]
    elif change == "bad type":
        heaps["relpages"] = [0] * raw["tables"]["heap"]["rows"]
        heaps["relpages"][3] = "many"
    elif change == "bad time":
        heaps["last_autovacuum"] = [None] * raw["tables"]["heap"]["rows"]
        heaps["last_autovacuum"][0] = "yesterday"
    elif change == "bad runs":
        heaps["schema_name"] = {"runs": [["public", 10**12]]}
    elif change == "missing column":
        del heaps["name"]
    elif change == "orphan TOAST":
        raw["tables"]["toast"]["columns"]["toast_of"][0] = 1
    elif change == "bad kind":
        heaps["kind"] = ["x"] * raw["tables"]["heap"]["rows"]
    elif change == "version 3":
        raw["schema_version"] = 3
    return raw


DAMAGES = {
    "truncated column": "tables.heap.columns.oid: 399 values for 400 rows",
    "unknown column": "tables.heap.columns.bloat: unknown column",
    "bad type": "tables.heap.columns.relpages: expected integers, found str",
    "bad time": "tables.heap.columns.last_autovacuum[0]: 'yesterday' is not a date and time",
    "bad runs": "tables.heap.columns.schema_name: 1000000000000 values for 400 rows",
    "missing column": "tables.heap.columns.name: missing",
    "orphan TOAST": "tables.toast.columns.toast_of: no table 1 in heap",
    "bad kind": "tables.heap.columns.kind: 'x' is not one of m, r, t",
}


@pytest.mark.parametrize(("change", "message"), DAMAGES.items(), ids=list(DAMAGES))
def test_a_damaged_file_names_the_column(change: str, message: str) -> None:
    with pytest.raises(VacuumlabError) as exc:
        parse_snapshot(damaged(change), "snap.json")
    assert str(exc.value) == f"snap.json is a damaged snapshot: {message}"


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ("truncated column", DAMAGES["truncated column"]),
        ("unknown column", DAMAGES["unknown column"]),
        ("bad type", DAMAGES["bad type"]),
        ("version 3", "schema 3; this vacuumlab reads up to 2: upgrade vacuumlab"),
    ],
)
def test_the_command_says_what_is_wrong_in_one_line(
    change: str, fragment: str, tmp_path: Path
) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(damaged(change)))
    assert_one_line_error(run_cli("advise", "--input", str(path)), fragment)


def test_a_file_cut_short_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    text = v1("later").dump_json()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(VacuumlabError, match="is not a vacuumlab snapshot \\(not JSON\\)"):
        load_snapshot(path)


def test_a_written_file_loads_from_disk(tmp_path: Path) -> None:
    """Through load_snapshot, as --input reads: UTF-8 names included."""
    later = v1("later").model_copy(update={"schema_version": SCHEMA_VERSION})
    first = later.tables[0]
    renamed = first.model_copy(update={"heap": first.heap.model_copy(update={"name": "tâche"})})
    snap = later.model_copy(update={"tables": [renamed, *later.tables[1:]]})
    path = tmp_path / "snap.json"
    path.write_text(snap.dump_json(), encoding="utf-8")
    assert "tâche" in path.read_text(encoding="utf-8")
    assert load_snapshot(path) == snap
    assert load_snapshot(path).taken_at.tzinfo is not None
    assert snap.taken_at.astimezone(UTC) == load_snapshot(path).taken_at
