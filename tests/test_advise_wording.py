"""How the advisor's numbers read: large ratios as multiples, durations with their units —
and the SQL so written runs on the embedded PostgreSQL 18 and means what it says."""

from __future__ import annotations

import time
from datetime import timedelta

import psycopg
import pytest
from psycopg import sql

from helpers.advise import T0, context, relation, snapshot
from helpers.db import execute
from vacuumlab.advise import horizon, thresholds
from vacuumlab.advise.context import share_of
from vacuumlab.model.knobs import duration, knob
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Finding
from vacuumlab.records.snapshot import Backend, Table


@pytest.mark.parametrize(
    ("ratio", "text"),
    [
        (0.5, "50% of its threshold"),
        (9.0, "900% of its threshold"),
        (10.0, "1,000% of its threshold"),
        (76.0, "76× its threshold"),
        (1000.0, "1,000× its threshold"),
    ],
)
def test_ratios_read_as_percent_then_as_multiples(ratio: float, text: str) -> None:
    assert share_of(ratio, "its threshold") == text


def test_a_far_exceeded_threshold_reads_as_a_multiple() -> None:
    # Thresholds 50 + 0.2 × 0 = 50 rows (50,000 dead: 1,000 times it) and 50 + 0.2 × 4,750 =
    # 1,000 rows (9,000 dead: 900 %).
    far = relation(800, "far", n_dead_tup=50_000)
    near = relation(810, "near", reltuples=4_750.0, n_dead_tup=9_000)
    found = thresholds.findings(
        context(snapshot(Table(heap=far, toast=None), Table(heap=near, toast=None)))
    )
    titles = {f.relation: f.title for f in found if f.relation is not None}
    assert titles["public.far"].startswith("1,000× its vacuum threshold: ")
    assert "100000%" not in titles["public.far"]
    assert titles["public.near"].startswith("900% of its vacuum threshold: ")


def test_a_table_past_its_insert_threshold_says_so_not_0_percent_of_its_vacuum_one() -> None:
    # 5,000 inserted against 1,000 + 0.2 × 10,000 = 3,000 (167 %); no dead tuple (0 %).
    loaded = relation(820, "log", reltuples=10_000.0, n_ins_since_vacuum=5_000)
    [found] = [
        f
        for f in thresholds.findings(context(snapshot(Table(heap=loaded, toast=None))))
        if f.relation == "public.log"
    ]
    assert found.title.startswith("167% of its insert threshold: "), found.title


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (600_000, "ms", "10min"),
        (10, "s", "10s"),
        (60, "s", "1min"),
        (90, "s", "90s"),
        (7_200_000, "ms", "2h"),
        (86_400, "s", "1d"),
        (2_500, "ms", "2500ms"),
        (3.9, "ms", "3.9ms"),
        (0, "ms", "0ms"),
    ],
)
def test_durations_take_the_largest_exact_unit(value: float, unit: str, text: str) -> None:
    assert duration(value, unit) == text


def test_only_durations_get_a_unit_and_sentinels_stay_bare() -> None:
    assert knob("autovacuum_vacuum_cost_delay").with_unit("-1") == "-1"
    assert knob("autovacuum_vacuum_cost_limit").with_unit("2000") == "2000"
    assert knob("maintenance_work_mem").with_unit("65536") == "65536"


def idle_in_transaction() -> Finding:
    holder = Backend(
        pid=4242,
        backend_type="client backend",
        database="app",
        user_name="app",
        application_name="worker",
        state="idle in transaction",
        backend_xid=None,
        backend_xmin=1000,
        xmin_age=50,
        xact_start=T0 - timedelta(minutes=20),
        query_start=T0 - timedelta(minutes=20),
        state_change=T0 - timedelta(minutes=20),
        wait_event="ClientRead",
        query="SELECT 1",
    )
    quiet = snapshot(values={"idle_in_transaction_session_timeout": "0"})
    held = quiet.model_copy(update={"backends": [holder]})
    later = held.model_copy(update={"taken_at": T0 + timedelta(seconds=60)})
    [found] = horizon.findings(context(held, later))
    return found


def test_idle_timeout_is_written_in_minutes_and_means_ten_minutes(sandbox: Sandbox) -> None:
    [rec] = idle_in_transaction().recommendations
    assert rec.sql == (
        "ALTER SYSTEM SET \"idle_in_transaction_session_timeout\" = '10min';"
        " SELECT pg_reload_conf();"
    )
    assert rec.value == "10min"
    execute(sandbox.dsn, *[part + ";" for part in rec.sql.split(";") if part.strip()])
    try:
        assert applied(sandbox.dsn, "idle_in_transaction_session_timeout") == "600000"
    finally:
        execute(
            sandbox.dsn,
            sql.SQL("ALTER SYSTEM RESET {}").format(sql.Identifier(rec.setting)),
            "SELECT pg_reload_conf()",
        )


def applied(dsn: str, name: str) -> str:
    """The setting in its base unit once the reload reached new sessions (it is signalled)."""
    deadline = time.monotonic() + 10
    while True:
        with psycopg.connect(dsn) as conn:
            row = conn.execute("SELECT setting FROM pg_settings WHERE name = %s", [name]).fetchone()
        assert row is not None
        if row[0] != "0" or time.monotonic() > deadline:
            return str(row[0])
        time.sleep(0.1)
