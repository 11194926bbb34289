"""``vacuumlab capture``: a workload profile from a read-only session, on the embedded
PostgreSQL 18 (which preloads pg_stat_statements). Workloads are driven from the window's
``wait`` so that they fall wholly inside it: the statements' calls are then exact."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from helpers.cli import run_cli
from helpers.db import execute
from vacuumlab.collect.capture import capture, open_session
from vacuumlab.errors import VacuumlabError
from vacuumlab.records.profile import Note, Profile, load_profile
from vacuumlab.studies.custom_replay import plan

SCHEMA = "my app"
TABLE = 'Job "Queue" ü'
#: The table as SQL writes its name, as a user gives it to --table.
QUEUE = '"my app"."Job ""Queue"" ü"'
QUALIFIED = f"{SCHEMA}.{TABLE}"
SECRET = "SECRET-d41d8cd98f"


def queue_table(dsn: str, *, extension: bool = True) -> None:
    """A job queue with awkward names: a schema with a space, quotes, Unicode, mixed case."""
    execute(
        dsn,
        *(["CREATE EXTENSION pg_stat_statements"] if extension else []),
        f'CREATE SCHEMA "{SCHEMA}"',
        f"""CREATE TABLE {QUEUE} (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                "Status" text NOT NULL DEFAULT 'new' CHECK ("Status" IN ('new', 'done')),
                payload text COMPRESSION pglz,
                created timestamptz NOT NULL DEFAULT now()
            ) WITH (fillfactor = 90, toast.autovacuum_enabled = off)""",
        f"""CREATE INDEX "new jobs" ON {QUEUE} (created) INCLUDE (id) WHERE "Status" = 'new'""",
        f"CREATE INDEX payload_lower ON {QUEUE} (lower(payload))",
        f"INSERT INTO {QUEUE} (payload) SELECT '{SECRET}-' || g FROM generate_series(1, 500) g",
        f"INSERT INTO {QUEUE} (payload) SELECT '{SECRET}' FROM generate_series(1, 500)",
        f"ANALYZE {QUEUE}",
    )


def then_idle(work: Callable[[], None]) -> Callable[[float], None]:
    """A window's ``wait``: the work, then idle to the window's end, so every backend has
    ended and flushed its table counters before the second read."""

    def wait(seconds: float) -> None:
        started = time.monotonic()
        work()
        time.sleep(max(0.0, seconds - (time.monotonic() - started)))

    return wait


class Queue:
    """A job queue driven by plain statements; counts what it did."""

    def __init__(self, dsn: str, jobs: int) -> None:
        self.dsn = dsn
        self.jobs = jobs
        self.done: Counter[str] = Counter()

    def __call__(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            for i in range(self.jobs):
                conn.execute(f"INSERT INTO {QUEUE} (payload) VALUES (%s)", (f"job {i}",))
                self.done["insert"] += 1
                with conn.transaction():
                    row = conn.execute(
                        f'SELECT id FROM {QUEUE} WHERE "Status" = %s ORDER BY id LIMIT 1 '
                        "FOR UPDATE SKIP LOCKED",
                        ("new",),
                    ).fetchone()
                    self.done["select_for_update"] += 1
                    assert row is not None
                    conn.execute(
                        f'UPDATE {QUEUE} SET "Status" = %s WHERE id = %s', ("done", row[0])
                    )
                    self.done["update"] += 1
                if i % 5 == 4:
                    cur = conn.execute(f'DELETE FROM {QUEUE} WHERE "Status" = %s', ("done",))
                    self.done["delete"] += 1
                    self.done["deleted"] += cur.rowcount


def do_block_queue(dsn: str, jobs: int) -> Callable[[], None]:
    """The same queue inside one DO block: invisible to pg_stat_statements with track=top."""

    def work() -> None:
        execute(
            dsn,
            f"""DO $$
                DECLARE picked bigint;
                BEGIN
                  FOR i IN 1..{jobs} LOOP
                    INSERT INTO {QUEUE} (payload) VALUES ('job');
                    SELECT id INTO picked FROM {QUEUE} WHERE "Status" = 'new'
                     ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED;
                    UPDATE {QUEUE} SET "Status" = 'done' WHERE id = picked;
                  END LOOP;
                END $$""",
        )

    return work


@pytest.fixture
def queue(embedded_database: str) -> str:
    queue_table(embedded_database)
    return embedded_database


@pytest.fixture
def monitor_role(queue: str) -> Iterator[str]:
    """A login role with pg_monitor only: no USAGE on the table's schema, no SELECT."""
    role = f"vl_capture_{uuid.uuid4().hex[:8]}"
    execute(queue, sql.SQL("CREATE ROLE {} LOGIN IN ROLE pg_monitor").format(sql.Identifier(role)))
    try:
        yield role
    finally:
        execute(queue, sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        execute(queue, sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_profile_holds_no_row_value_nor_query_text(queue: str) -> None:
    """The secret is in the rows (and so in pg_stats' most common values), and in the text of
    a statement pg_stat_statements keeps (its comment) and its literal: nowhere in the file."""

    def work() -> None:
        execute(
            queue,
            f"SELECT /* {SECRET} */ count(*) FROM {QUEUE} WHERE payload = '{SECRET}'",
            f"UPDATE {QUEUE} SET payload = '{SECRET}' WHERE id = 1",
        )

    profile = capture(queue, [QUEUE], 1.0, wait=then_idle(work))
    with psycopg.connect(queue) as conn:  # the secret was there to be leaked
        assert conn.execute(
            "SELECT count(*) FROM pg_stats WHERE most_common_vals::text LIKE %s",
            (f"%{SECRET}%",),
        ).fetchone() == (1,)
        assert conn.execute(
            "SELECT count(*) FROM pg_stat_statements WHERE query LIKE %s", (f"%{SECRET}%",)
        ).fetchone() == (1,)
    kinds = {st.kind for st in profile.statements}
    assert {"select", "update"} <= kinds  # the statements were read and parsed
    assert SECRET not in profile.dump_json()
    assert "'new'" in profile.literals  # DDL constants are shape, and listed


def test_capture_session_refuses_writes(queue: str) -> None:
    with open_session(queue) as session:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            session.execute(f"INSERT INTO {QUEUE} (payload) VALUES ('x')")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            session.execute("CREATE TABLE written (id int)")


def test_shape_from_the_catalogs(queue: str) -> None:
    profile = capture(queue, [QUEUE], 0.1)
    shape = profile.table(QUALIFIED).shape
    assert (shape.schema_name, shape.name, shape.qualified) == (SCHEMA, TABLE, QUALIFIED)
    columns = {c.name: c for c in shape.columns}
    assert list(columns) == ["id", "Status", "payload", "created"]
    assert columns["id"].identity == "a"
    assert columns["Status"].default == "'new'::text"
    assert columns["payload"].compression == "pglz"
    assert columns["payload"].storage == "extended"
    stats = columns["payload"].stats
    assert stats is not None
    assert stats.n_distinct == pytest.approx(-0.501, abs=0.01)
    indexes = {i.name: i for i in shape.indexes}
    # the partial index covers its key, its INCLUDE column and its predicate's column
    assert indexes["new jobs"].columns == ["id", "Status", "created"]
    assert indexes["new jobs"].predicate == "(\"Status\" = 'new'::text)"
    assert indexes["payload_lower"].expression
    assert indexes["payload_lower"].columns == ["payload"]
    assert {c.kind for c in shape.constraints} >= {"p", "c"}
    assert (shape.fillfactor, shape.toast_reloptions) == (90, ["autovacuum_enabled=off"])
    assert shape.rows == 1000
    assert shape.heap_bytes > 0
    assert shape.index_bytes > 0
    assert set(profile.literals) >= {"'new'", "'done'"}


def test_partitioned_table_sums_its_partitions(embedded_database: str) -> None:
    execute(
        embedded_database,
        "CREATE TABLE events (id int, at date) PARTITION BY RANGE (at)",
        "CREATE TABLE events_1 PARTITION OF events "
        "FOR VALUES FROM ('2025-01-01') TO ('2025-02-01')",
        "CREATE TABLE events_2 PARTITION OF events "
        "FOR VALUES FROM ('2025-02-01') TO ('2025-03-01')",
        "INSERT INTO events SELECT g, '2025-01-01'::date + g % 50 FROM generate_series(1, 900) g",
        "ANALYZE events",
    )
    profile = capture(embedded_database, ["events"], 0.1)
    shape = profile.table("public.events").shape
    assert shape.partitioning == "RANGE (at)"
    assert shape.partitions == 2
    assert shape.rows == 900
    assert shape.heap_bytes > 0
    assert "'2025-01-01'" not in profile.literals  # bounds of partitions are not followed


def test_a_partition_attached_during_the_window_is_no_rate(embedded_database: str) -> None:
    """A table attached as a partition brings its counters from before: summed with the
    others they read as 5,000 inserts in the window, where 300 rows came in it."""
    execute(
        embedded_database,
        "CREATE TABLE events (id int, at date) PARTITION BY RANGE (at)",
        "CREATE TABLE events_1 PARTITION OF events "
        "FOR VALUES FROM ('2025-01-01') TO ('2025-02-01')",
        "CREATE TABLE events_2 (id int, at date)",
        "INSERT INTO events_2 SELECT g, '2025-02-01' FROM generate_series(1, 5000) g",
        "CREATE TABLE events_3 PARTITION OF events "
        "FOR VALUES FROM ('2025-03-01') TO ('2025-04-01')",
        "INSERT INTO events_3 SELECT g, '2025-03-01' FROM generate_series(1, 700) g",
        "SELECT pg_stat_force_next_flush()",
    )

    def work() -> None:
        execute(
            embedded_database,
            "ALTER TABLE events ATTACH PARTITION events_2 "
            "FOR VALUES FROM ('2025-02-01') TO ('2025-03-01')",
            "ALTER TABLE events DETACH PARTITION events_3",
            "INSERT INTO events SELECT g, '2025-01-05' FROM generate_series(1, 300) g",
        )

    profile = capture(embedded_database, ["events"], 1.0, wait=then_idle(work))
    table = profile.table("public.events")
    assert table.rates.inserts * profile.seconds == pytest.approx(300, abs=0.5)
    assert table.rates.dead_tuples == 0
    [note] = [n for n in profile.notes if n.what == "public.events"]
    assert "2 partition(s) attached, detached" in note.reason
    assert "from the 1 partition(s) there from start to end" in note.reason
    # run custom replays it as one table, and says so.
    replay = plan(profile, 1.0)
    assert "public.events is partitioned (RANGE (at)): replayed as one table" in replay.notes
    [build] = replay.tables
    assert "PARTITION" not in build.create.upper()


def test_a_table_never_counted_by_vacuum_or_analyze_has_its_live_rows(
    embedded_database: str,
) -> None:
    """reltuples is -1 until a vacuum or analyze: the profile takes the statistics' live
    tuples, so that the replay loads the rows production has (it loaded none before)."""
    execute(
        embedded_database,
        "CREATE TABLE fresh (id int) WITH (autovacuum_enabled = off)",
        "INSERT INTO fresh SELECT generate_series(1, 700)",
        "SELECT pg_stat_force_next_flush()",
    )
    shape = capture(embedded_database, ["fresh"], 0.1).table("public.fresh").shape
    assert shape.rows == 700


def test_plain_statements_become_structure_with_their_rates(queue: str) -> None:
    driven = Queue(queue, jobs=150)
    profile = capture(queue, [QUEUE], 2.0, wait=then_idle(driven))
    assert profile.source == "pg_stat_statements"
    assert profile.track == "top"
    by_kind = {st.kind: st for st in profile.statements if st.table == QUALIFIED}
    assert set(by_kind) == {"insert", "select_for_update", "update", "delete"}
    for kind, st in by_kind.items():  # the calls are exact: the work fell inside the window
        assert st.calls_per_s * profile.seconds == pytest.approx(driven.done[kind], abs=0.01)
        assert st.mean_ms > 0
    assert by_kind["update"].sets == ["Status"]
    assert by_kind["update"].filters == ["id"]
    assert by_kind["insert"].sets == ["payload"]
    locking = by_kind["select_for_update"]
    assert (locking.skip_locked, locking.limit, locking.filters) == (True, True, ["Status"])
    deleted = by_kind["delete"].rows_per_call * by_kind["delete"].calls_per_s * profile.seconds
    assert deleted == pytest.approx(driven.done["deleted"])
    table = profile.table(QUALIFIED)
    assert table.rates.inserts * profile.seconds == pytest.approx(driven.done["insert"], rel=0.02)
    assert table.rates.updates * profile.seconds == pytest.approx(driven.done["update"], rel=0.02)
    assert table.rates.deletes * profile.seconds == pytest.approx(driven.done["deleted"], rel=0.02)
    # "Status" is in the partial index's predicate: no update can be HOT
    assert table.rates.hot_updates == 0
    assert table.explained > 0.95
    assert not [n for n in profile.notes if "row changes" in n.what]


def test_statements_in_a_do_block_are_told_apart(queue: str) -> None:
    notes: list[Note] = []
    profile = capture(
        queue, [QUEUE], 1.5, wait=then_idle(do_block_queue(queue, 200)), on_note=notes.append
    )
    table = profile.table(QUALIFIED)
    assert profile.source == "pg_stat_statements"
    assert profile.track == "top"
    assert not [st for st in profile.statements if st.table == QUALIFIED]
    assert table.rates.inserts * profile.seconds == pytest.approx(200, rel=0.02)
    assert table.explained < 0.05  # replayed from the counters
    [note] = [n for n in profile.notes if "row changes" in n.what]
    assert "track = top" in note.reason
    assert note in notes


def test_without_pg_stat_statements_the_counters_alone(embedded_database: str) -> None:
    queue_table(embedded_database, extension=False)
    driven = Queue(embedded_database, jobs=30)
    profile = capture(embedded_database, [QUEUE], 1.0, wait=then_idle(driven))
    assert profile.source == "counters"
    assert profile.statements == []
    assert profile.table(QUALIFIED).explained == 0
    assert profile.table(QUALIFIED).rates.inserts * profile.seconds == pytest.approx(30, rel=0.05)
    [note] = [n for n in profile.notes if n.what == "statements"]
    assert "not installed" in note.reason


def test_pg_monitor_alone_captures_and_select_brings_the_statistics(
    queue: str, monitor_role: str
) -> None:
    as_monitor = make_conninfo(queue, user=monitor_role)
    work = then_idle(Queue(queue, jobs=10))  # run by another role
    without = capture(as_monitor, [QUEUE], 0.5, wait=work)
    assert all(c.stats is None for c in without.table(QUALIFIED).shape.columns)
    [note] = [n for n in without.notes if n.what.startswith("column statistics")]
    assert "may not SELECT" in note.reason
    assert "payload" in note.what
    assert {st.kind for st in without.statements} >= {"insert", "update"}  # pg_read_all_stats

    execute(queue, sql.SQL("GRANT SELECT ON {} TO {}").format(
        sql.Identifier(SCHEMA, TABLE), sql.Identifier(monitor_role)))  # fmt: skip
    granted = capture(as_monitor, [QUEUE], 0.2)
    assert all(c.stats is not None for c in granted.table(QUALIFIED).shape.columns)
    assert not [n for n in granted.notes if n.what.startswith("column statistics")]


def test_another_roles_statements_hidden_without_pg_monitor(queue: str, monitor_role: str) -> None:
    execute(queue, sql.SQL("REVOKE pg_monitor FROM {}").format(sql.Identifier(monitor_role)))
    profile = capture(
        make_conninfo(queue, user=monitor_role), [QUEUE], 0.5, wait=then_idle(Queue(queue, 5))
    )
    assert not profile.statements
    assert [n for n in profile.notes if "other roles' statements" in n.what]


def test_window_ended_early_still_gives_a_profile(queue: str) -> None:
    def interrupted(seconds: float) -> None:
        Queue(queue, jobs=5)()
        time.sleep(0.2)
        raise KeyboardInterrupt

    profile = capture(queue, [QUEUE], 60, wait=interrupted)
    assert profile.seconds < 5
    assert [n for n in profile.notes if "ended early" in n.reason]
    assert {st.kind for st in profile.statements} >= {"insert"}


def test_profile_round_trips_and_a_damaged_one_is_one_line(queue: str, tmp_path: Path) -> None:
    profile = capture(queue, [QUEUE], 0.5, wait=then_idle(Queue(queue, jobs=5)))
    path = tmp_path / "profile.json"
    path.write_text(profile.dump_json())
    assert load_profile(path) == profile

    raw = json.loads(profile.dump_json())
    raw["tables"][0]["rates"]["inserts"] = "many"
    path.write_text(json.dumps(raw))
    with pytest.raises(VacuumlabError, match=r"damaged profile: tables\.0\.rates\.inserts") as exc:
        load_profile(path)
    assert "\n" not in str(exc.value)
    path.write_text("{not json")
    with pytest.raises(VacuumlabError, match="not a vacuumlab profile"):
        load_profile(path)
    path.write_text(json.dumps({"kind": "vacuumlab.snapshot"}))
    with pytest.raises(VacuumlabError, match="no kind"):
        load_profile(path)


def test_cli_captures_hostile_names_and_refuses_a_missing_table(queue: str, tmp_path: Path) -> None:
    output = tmp_path / "queue.json"
    done = run_cli("capture", queue, "--table", QUEUE, "--for", "1s", "-o", str(output))
    assert done.returncode == 0, done.stderr
    profile: Profile = load_profile(output)
    assert profile.tables[0].shape.qualified == QUALIFIED
    assert f"wrote {output}" in done.stdout

    missing = run_cli("capture", queue, "--table", '"my app"."Job Queue"', "--for", "1s")
    assert missing.returncode == 2
    assert missing.stderr.count("\n") == 1
    assert "no table" in missing.stderr
    assert "Traceback" not in missing.stderr
