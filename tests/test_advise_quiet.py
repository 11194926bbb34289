"""The status table counts the quiet relations instead of listing them, and leaving them out
changes nothing else: at 10,000 tables the findings are the same with the pass and without it
(``every``), and every row left out had nothing counted toward a threshold.

The 10,000 tables are the saved pair's 400 (see test_advise_golden.py), and 96 copies, each in
a schema of its own and with new oids, of the 100 that nothing changed between its two
snapshots: a fleet's mix, a few tables busy and most idle.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from vacuumlab.advise import advise, context, simulated
from vacuumlab.records.snapshot import Snapshot, parse_snapshot

PAIR = Path(__file__).parent / "data" / "advise_pair.json.gz"
COPIES = 96
OID_STEP = 10_000_000


def _unchanged(raw: dict[str, Any]) -> set[int]:
    """The heaps whose table (heap and TOAST relation) is the same in both snapshots but for
    its ages, which every transaction anywhere moves."""

    def still(table: dict[str, Any]) -> list[dict[str, Any] | None]:
        return [
            None
            if rel is None
            else {k: v for k, v in rel.items() if k not in ("frozenxid_age", "minmxid_age")}
            for rel in (table["heap"], table["toast"])
        ]

    before = {t["heap"]["oid"]: still(t) for t in raw["first"]["tables"]}
    return {
        t["heap"]["oid"] for t in raw["later"]["tables"] if before.get(t["heap"]["oid"]) == still(t)
    }


def _copied(snapshot: dict[str, Any], unchanged: set[int]) -> dict[str, Any]:
    """``snapshot`` with ``COPIES`` more of its ``unchanged`` tables, each copy in its own
    schema and oids."""
    tables = list(snapshot["tables"])
    for copy in range(1, COPIES + 1):
        shift = copy * OID_STEP
        for table in snapshot["tables"]:
            if table["heap"]["oid"] not in unchanged:
                continue
            moved = {}
            for part in ("heap", "toast"):
                rel = table[part]
                if rel is not None:
                    rel = {
                        **rel,
                        "oid": rel["oid"] + shift,
                        "schema_name": f"tenant_{copy:02}",
                        "catalog_position": (rel.get("catalog_position") or 0) + shift,
                    }
                    if rel["toast_of"] is not None:
                        rel["toast_of"] += shift
                moved[part] = rel
            tables.append(moved)
    return {**snapshot, "tables": tables}


@pytest.fixture(scope="module")
def pair() -> dict[str, Snapshot]:
    raw = json.loads(gzip.decompress(PAIR.read_bytes()))
    unchanged = _unchanged(raw)
    assert len(unchanged) == 100
    return {key: parse_snapshot(_copied(value, unchanged), key) for key, value in raw.items()}


def _quiet_row(row: dict[str, Any]) -> bool:
    """What a left-out row shows: nothing counted, no options, no forced vacuum, no rate."""
    return (
        row["dead"] == 0
        and row["inserted"] == 0
        and row["modified"] == 0
        and not row["overridden"]
        and row["forced"] is None
        and not row["dead_per_second"]
    )


@pytest.mark.parametrize("case", ["one", "interval"])
def test_quiet_relations_change_no_finding_at_10000_tables(
    pair: dict[str, Snapshot], case: str
) -> None:
    given = (pair["later"],) if case == "one" else (pair["first"], pair["later"])
    assert len(given[-1].tables) == 10_000
    fast = json.loads(advise(*given).model_dump_json())
    whole = json.loads(advise(*given, every=True).model_dump_json())
    assert fast["findings"], "the copies must give findings to compare"
    assert fast["findings"] == whole["findings"]
    assert fast["partitioned"] == whole["partitioned"]
    assert whole["quiet"] == 0
    relations = sum(1 + (t.toast is not None) for t in given[-1].tables)
    assert len(whole["tables"]) == relations
    kept = {row["relation"] for row in fast["tables"]}
    left_out = [row for row in whole["tables"] if row["relation"] not in kept]
    assert fast["quiet"] == len(left_out) > relations / 2  # most are idle, as in a fleet
    # Most of them were set aside before any question read them (advise/idle.py).
    assert context(*given).idle > relations / 2
    assert context(*given, every=True).idle == 0
    assert all(_quiet_row(row) for row in left_out)
    # The rows kept are the whole table's rows that are not quiet, in its order.
    assert fast["tables"] == [row for row in whole["tables"] if row["relation"] in kept]
    assert len(fast["tables"]) >= 300  # the busy ones at least


def test_what_ifs_stop_at_their_cap_and_say_so(
    pair: dict[str, Snapshot], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each what-if runs the whole server: past MAX_WHATIFS the rest are left unsimulated, the
    first ones (most severe) simulated, and a note counts the rest."""
    given = (pair["first"], pair["later"])
    runnable = [
        r for f in advise(*given).findings for r in f.recommendations if r.simulated is not None
    ]
    assert len(runnable) >= 3
    monkeypatch.setattr(simulated, "MAX_WHATIFS", 1)
    capped = advise(*given)
    done = [r for f in capped.findings for r in f.recommendations if r.simulated is not None]
    assert done == runnable[:1]
    note = next(n for n in capped.notes if n.probe == "simulation")
    assert note.reason.startswith(f"{len(runnable) - 1:,} recommendation")


IDLE = {
    "n_dead_tup": 0, "n_ins_since_vacuum": 0, "n_mod_since_analyze": 0, "n_tup_ins": 5_000,
    "n_tup_upd": 0, "n_tup_hot_upd": 0, "n_tup_newpage_upd": 0, "n_tup_del": 0,
    "n_live_tup": 5_000, "reltuples": 5_000.0, "relpages": 40, "relallvisible": 40,
    "heap_bytes": 40 * 8192, "toast_bytes": 8192, "frozenxid_age": 1_000, "minmxid_age": 0,
    "reloptions": {}, "last_vacuum": "2026-11-28T10:00:00Z", "vacuum_count": 1,
}  # fmt: skip
#: One table per reason to keep a table: only that field changed from IDLE, each enough for a
#: finding of some question. (heap fields, TOAST fields)
ONE_REASON: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "dead": ({"n_dead_tup": 200_000}, {}),
    "inserted": ({"n_ins_since_vacuum": 200_000}, {}),
    "modified": ({"n_mod_since_analyze": 200_000}, {}),
    "updates": ({"n_tup_upd": 100_000, "n_tup_hot_upd": 0}, {}),
    "deletes": ({"n_tup_ins": 500_000, "n_tup_del": 495_000}, {}),
    "xid_age": ({"frozenxid_age": 180_000_000}, {}),
    "toast_age": ({}, {"frozenxid_age": 60_000_000}),
    "toast_dead": ({}, {"n_dead_tup": 200_000}),
    "toast_bytes": ({"toast_bytes": 50 << 20}, {}),
    "options": ({}, {"reloptions": {"autovacuum_enabled": "off"}}),
}


def _one_reason_each(raw: dict[str, Any]) -> dict[str, Any]:
    """The later snapshot with an idle table and one table per entry of ONE_REASON."""
    template = raw["later"]["tables"][0]
    tables = []
    for n, (name, (heap, toast)) in enumerate([("idle", ({}, {})), *ONE_REASON.items()]):
        oid = 900_000 + 10 * n
        table = {
            "heap": {**template["heap"], **IDLE, **heap, "oid": oid, "name": name},
            "toast": {
                **template["toast"], **IDLE, "toast_bytes": None, **toast,
                "oid": oid + 1, "toast_of": oid, "name": f"pg_toast_{oid}",
            },
        }  # fmt: skip
        tables.append(table)
    return {**raw["later"], "tables": tables}


def test_each_reason_to_keep_a_table_keeps_its_finding() -> None:
    """Every condition of the pass, alone on a table, keeps that table's findings: a pass
    that dropped one of them would lose a finding here."""
    raw = json.loads(gzip.decompress(PAIR.read_bytes()))
    snap = parse_snapshot(_one_reason_each(raw), "one reason each")
    fast, whole = advise(snap), advise(snap, every=True)
    assert [f.model_dump() for f in fast.findings] == [f.model_dump() for f in whole.findings]
    named = {(f.relation or "").split(".")[-1].removesuffix(" (TOAST)") for f in fast.findings}
    assert named >= set(ONE_REASON), set(ONE_REASON) - named
    assert "idle" not in named
    assert context(snap).idle == 2  # the idle table's heap and TOAST relation


def test_a_table_that_moved_over_the_interval_is_kept() -> None:
    """Idle now, but inserted into and vacuumed between the two snapshots: its rates give a
    finding, so the pass keeps it."""
    raw = json.loads(gzip.decompress(PAIR.read_bytes()))
    later = _one_reason_each(raw)
    later["tables"] = later["tables"][:1]  # the idle table alone
    moved = {**later["tables"][0]["heap"], "oid": 800_000, "name": "moved", "n_tup_ins": 305_000}
    moved["vacuum_count"] = 2
    later["tables"].append({"heap": moved, "toast": None})
    first = json.loads(json.dumps(later))
    first["taken_at"] = raw["first"]["taken_at"]
    first["tables"][1]["heap"].update(n_tup_ins=5_000, vacuum_count=1)
    given = (parse_snapshot(first, "first"), parse_snapshot(later, "later"))
    fast, whole = advise(*given), advise(*given, every=True)
    assert [f.model_dump() for f in fast.findings] == [f.model_dump() for f in whole.findings]
    assert any(f.relation == "public.moved" for f in fast.findings)
    assert context(*given).idle == 2


def test_quiet_partitions_stay_listed_under_their_partitioned_table() -> None:
    """A partition has its row, quiet or not: the partitioned table's rows group them all."""
    raw = json.loads(gzip.decompress(PAIR.read_bytes()))
    later = _one_reason_each(raw)
    idle_oid = later["tables"][0]["heap"]["oid"]
    later["partitioned"] = [
        {
            "oid": 990_000, "schema_name": "public", "name": "parent", "reltuples": -1.0,
            "last_analyze": None, "analyze_count": 0, "parent": None, "leaves": [idle_oid],
        }
    ]  # fmt: skip
    advice = advise(parse_snapshot(later, "partitioned"))
    rows = {t.relation: t for t in advice.tables}
    assert rows["public.idle"].partition_of == "public.parent"
    assert "public.idle (TOAST)" in rows
    whole = advise(parse_snapshot(later, "partitioned"), every=True)
    assert advice.quiet == len(whole.tables) - len(advice.tables)
