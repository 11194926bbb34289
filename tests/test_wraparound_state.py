"""What the wraparound finding says of a table past its freeze limit: a vacuum of it running
now is said so (not "due"); with autovacuum off server-wide and the database young, no
launcher and no emergency worker will come, and the finding must not promise a vacuum."""

from __future__ import annotations

from helpers.advise import autovacuum, context, relation, snapshot
from vacuumlab.advise import wraparound
from vacuumlab.records.snapshot import Database, Snapshot, Table

OLD = relation(80, "old", frozenxid_age=250_000_000)
YOUNG_DB = Database(name="app", frozenxid_age=1_000, minmxid_age=1, allow_connections=True)


def title(snap: Snapshot) -> str:
    [f] = [f for f in wraparound.findings(context(snap)) if f.relation == "public.old"]
    return f.title


def test_past_the_limit_with_nothing_running_is_due() -> None:
    assert title(snapshot(Table(heap=OLD, toast=None))).endswith(
        "past autovacuum_freeze_max_age: an anti-wraparound vacuum is due"
    )


def test_a_running_vacuum_is_said_to_run() -> None:
    snap = snapshot(Table(heap=OLD, toast=None), vacuums=(autovacuum(80),))
    said = title(snap)
    assert said.endswith("a vacuum of it is running, 10% of its pages scanned")
    assert "due" not in said


def test_autovacuum_off_and_a_young_database_promise_no_vacuum() -> None:
    snap = snapshot(Table(heap=OLD, toast=None), values={"autovacuum": "off"})
    said = title(snap.model_copy(update={"databases": [YOUNG_DB]}))
    assert "no launcher runs" in said
    assert "is due" not in said


def test_autovacuum_off_and_an_old_database_get_emergency_workers() -> None:
    old_db = YOUNG_DB.model_copy(update={"frozenxid_age": 250_000_000})
    snap = snapshot(Table(heap=OLD, toast=None), values={"autovacuum": "off"})
    assert title(snap.model_copy(update={"databases": [old_db]})).endswith("is due")
