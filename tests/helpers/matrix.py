"""The version matrix's tests, shared by test_version_matrix_older.py (13 to 15) and
test_version_matrix_newer.py (16 to 18), so that CI's two test processes take half each: what
reads differently on each supported PostgreSQL major, run on a real server of each (13 to 17
from the binaries `vacuumlab sandbox fetch` keeps, 18 the embedded one).

Only what differs by version is here: the snapshot's and the advisor's questions (with and
without an interval), the live view's refresh during a vacuum, the exporter's scrape,
capture and a short replay, the sandbox's start and stop, and the version facts. The rest of
the suite runs on 18 and, where ``VACUUMLAB_TEST_DSN`` names one, on a second server.

A major whose binaries are not cached and cannot be fetched (no npm, no registry) is skipped
with the reason.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors, sql
from psycopg.conninfo import conninfo_to_dict

from helpers.cli import run_cli
from helpers.db import execute
from helpers.exporter import exporting, scrape, value
from helpers.version_facts import check_server, database_with_extensions
from vacuumlab.errors import VacuumlabError
from vacuumlab.model.knobs import KNOBS
from vacuumlab.model.versions import SUPPORTED
from vacuumlab.pg import fetch
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.custom import CustomConfig
from vacuumlab.records.profile import load_profile
from vacuumlab.records.snapshot import SCHEMA_VERSION, parse_snapshot
from vacuumlab.store import Store
from vacuumlab.studies.custom import CustomRun
from vacuumlab.watch.source import Source

#: 20,000 rows analysed, then a quarter updated: 5,000 dead tuples, past 50 + 0.2 × 20,000,
#: with autovacuum off for the table so nothing empties it; a partitioned table beside it.
WORKLOAD = (
    "CREATE TABLE churn (id int PRIMARY KEY, n int, pad text) WITH (autovacuum_enabled = off)",
    "INSERT INTO churn SELECT i, 0, repeat('x', 100) FROM generate_series(1, 20000) i",
    "ANALYZE churn",
    "UPDATE churn SET n = n + 1 WHERE id % 4 = 0",
    "CREATE TABLE parted (id int, k int) PARTITION BY RANGE (id)",
    "CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (5000)",
    "CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (5000) TO (10000)",
    "INSERT INTO parted SELECT i, 0 FROM generate_series(0, 9999) i",
)


@dataclass(frozen=True, slots=True)
class Versioned:
    """A server of one major and a database on it holding :data:`WORKLOAD`."""

    major: int
    sandbox: Sandbox
    dsn: str


def binaries(major: int) -> Path | None:
    """The bin directory for ``major`` (None: the embedded one), fetched if need be."""
    if major == SUPPORTED[-1]:
        return None
    cached = fetch.cached_bin(major)
    if cached is not None:
        return cached
    try:
        return fetch.fetch(major)
    except VacuumlabError as exc:
        pytest.skip(f"PostgreSQL {major}: {exc}")


#: What a matrix file takes with ``from helpers.matrix import *``: the tests, collected there.
__all__ = [
    "test_advise_at_once",
    "test_advise_over_an_interval",
    "test_capture_then_a_short_replay",
    "test_every_major_s_sandbox_has_data_checksums",
    "test_exporter_scrape",
    "test_sandbox_starts_and_stops",
    "test_snapshot",
    "test_the_ranges_of_the_server_knobs",
    "test_the_settings_that_need_a_restart",
    "test_the_table_options_a_major_takes",
    "test_the_version_facts_hold",
    "test_watch_refresh_shows_a_running_vacuum",
]


def versioned_fixture(majors: tuple[int, ...]) -> Any:
    """A matrix file's ``versioned`` fixture: one server per major of ``majors``, module-wide."""

    @pytest.fixture(scope="module", params=majors, ids=lambda major: f"pg{major}")
    def versioned(request: pytest.FixtureRequest, sandbox_root: Path) -> Iterator[Versioned]:
        yield from serve(request, sandbox_root)

    return versioned


def serve(request: pytest.FixtureRequest, sandbox_root: Path) -> Iterator[Versioned]:
    """The body of each matrix file's ``versioned`` fixture: a server of ``request.param``
    (the session's embedded one for 18) and a database on it holding :data:`WORKLOAD`."""
    major: int = request.param
    if major == SUPPORTED[-1]:
        server: Sandbox = request.getfixturevalue("sandbox")
        with database_with_extensions(server.dsn) as dsn:
            execute(dsn, *WORKLOAD)
            yield Versioned(major, server, dsn)
        return
    bin_dir = binaries(major)
    directory = sandbox_root / f"pg{major}"
    with (
        Sandbox.start(directory, pg_bin=bin_dir, settings={"fsync": "off"}) as sb,
        database_with_extensions(sb.dsn) as dsn,
    ):
        execute(dsn, *WORKLOAD)
        yield Versioned(major, sb, dsn)


def dead_tuples(dsn: str, table: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = %s", (table,)
        ).fetchone()
    return int(row[0]) if row else 0


def wait_for_dead(dsn: str, table: str, count: int) -> None:
    """Until the statistics show ``count`` dead tuples (before 15 a collector process sends
    them on, up to half a second late)."""
    deadline = time.monotonic() + 20
    while dead_tuples(dsn, table) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{table} never showed {count} dead tuples")
        time.sleep(0.2)


@contextmanager
def updating(dsn: str, table: str = "churn") -> Iterator[None]:
    """Updates of ``table`` in a thread, a few hundred a second, until the block ends."""
    stop = threading.Event()

    def run() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            i = 0
            while not stop.is_set():
                conn.execute(
                    sql.SQL("UPDATE {} SET n = n + 1 WHERE id BETWEEN %s AND %s").format(
                        sql.Identifier(table)
                    ),
                    (i % 19_000 + 1, i % 19_000 + 20),
                )
                i += 20
                time.sleep(0.02)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def cli_json(*args: str) -> dict[str, object]:
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    loaded = json.loads(result.stdout)
    assert isinstance(loaded, dict)
    return loaded


def test_snapshot(versioned: Versioned) -> None:
    wait_for_dead(versioned.dsn, "churn", 5000)
    raw = cli_json("snapshot", versioned.dsn, "--format", "json")
    assert raw["schema_version"] == SCHEMA_VERSION
    snap = parse_snapshot(raw, "snapshot --format json")  # columns since schema 2
    assert snap.server.version_num // 10000 == versioned.major
    heaps = {t.heap.name: t.heap for t in snap.tables}
    assert (heaps["churn"].n_dead_tup or 0) >= 5000
    assert {"parted_1", "parted_2"} <= heaps.keys()


def test_advise_at_once(versioned: Versioned) -> None:
    wait_for_dead(versioned.dsn, "churn", 5000)
    advice = cli_json("advise", versioned.dsn, "--format", "json")
    findings = [f for f in advice["findings"] if f["relation"] == "public.churn"]  # type: ignore[attr-defined]
    assert any(f["severity"] in ("warning", "critical") for f in findings), findings
    status = {t["relation"]: t for t in advice["tables"]}  # type: ignore[attr-defined]
    assert status["public.churn"]["dead"] >= 5000
    assert not status["public.churn"]["autovacuum_enabled"]


def test_advise_over_an_interval(versioned: Versioned) -> None:
    with updating(versioned.dsn):
        advice = cli_json("advise", versioned.dsn, "--interval", "2s", "--format", "json")
    assert advice["interval_s"] == pytest.approx(2, abs=1)
    status = {t["relation"]: t for t in advice["tables"]}  # type: ignore[attr-defined]
    rate = status["public.churn"].get("dead_per_second")
    assert rate is not None, status["public.churn"]
    assert rate > 0


@contextmanager
def slow_vacuum(dsn: str) -> Iterator[None]:
    """A VACUUM of churn made slow by its cost settings, cancelled when the block ends."""

    def run() -> None:
        with (
            psycopg.connect(dsn, autocommit=True, application_name="vl-matrix-vacuum") as conn,
            suppress(errors.QueryCanceled),
        ):
            conn.execute("SET vacuum_cost_delay = 10")
            conn.execute("SET vacuum_cost_limit = 10")
            conn.execute("VACUUM churn")

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield
    finally:
        execute(
            dsn,
            "SELECT pg_cancel_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'vl-matrix-vacuum'",
        )
        thread.join()


def test_watch_refresh_shows_a_running_vacuum(versioned: Versioned) -> None:
    name = conninfo_to_dict(versioned.dsn)["dbname"]
    source = Source(versioned.dsn)
    source.open()
    try:
        with slow_vacuum(versioned.dsn):
            deadline = time.monotonic() + 20
            while True:
                view = source.refresh().view
                assert view is not None
                running = [v for v in view.vacuums if v.relation.endswith("churn")]
                if running and running[0].heap_blks_scanned > 0:
                    break
                assert time.monotonic() < deadline, "the vacuum never showed"
                time.sleep(0.2)
    finally:
        source.close()
    assert running[0].heap_blks_total > 0
    assert any(t.table == "churn" for t in view.tables), name


def test_exporter_scrape(versioned: Versioned) -> None:
    wait_for_dead(versioned.dsn, "churn", 1)
    with exporting(versioned.dsn) as (url, _collector):
        families = scrape(url)
    assert value(families, "vacuumlab_up") == 1
    labels = {"schema": "public", "table": "churn", "kind": "heap"}
    dead = value(families, "vacuumlab_table_dead_tuples", **labels)
    assert dead is not None
    assert dead > 0


def test_capture_then_a_short_replay(versioned: Versioned, store: Store, tmp_path: Path) -> None:
    """Capture from the command line, then replay in this process on the same server (the
    report, drawn alike on every version, is left out to save the time)."""
    path = tmp_path / "profile.json"
    with updating(versioned.dsn):
        result = run_cli(
            "capture", versioned.dsn, "--table", "churn", "--for", "3s", "-o", str(path)
        )
    assert result.returncode == 0, result.stderr
    profile = load_profile(path)
    [table] = profile.tables
    assert table.rates.updates > 0
    assert profile.server_version_num // 10000 == versioned.major
    config = CustomConfig.from_preset(
        "quick", profile=profile.model_dump(mode="json"), scale=0.2, seconds=3, warmup=1
    )
    run_id = CustomRun(config, Target.of_sandbox(versioned.sandbox), store).execute()
    assert store.run(run_id).server_version.startswith(f"PostgreSQL {versioned.major}.")
    [point] = store.points(run_id)
    assert point.metrics["rate:replayed:updates:churn"] > 0
    assert point.metrics["latency_mean_ms"] > 0


def test_sandbox_starts_and_stops(versioned: Versioned, sandbox_root: Path) -> None:
    directory = sandbox_root / f"cli-pg{versioned.major}"
    major = str(versioned.major)
    started = run_cli("sandbox", "start", "--pg", major, "--data-dir", str(directory))
    try:
        assert started.returncode == 0, started.stderr
        assert f"PostgreSQL {major} running" in started.stdout
        status = Sandbox.open(directory).status()
        assert status.major == versioned.major
        assert status.running
    finally:
        stopped = run_cli("sandbox", "stop", "--data-dir", str(directory))
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped" in stopped.stdout


def test_the_version_facts_hold(versioned: Versioned) -> None:
    """The table of settings, columns and behaviours by major (model/versions.py) against
    this server's pg_settings and catalogs."""
    assert check_server(versioned.dsn) == []


def test_the_table_options_a_major_takes(versioned: Versioned) -> None:
    """Each table option vacuumlab may recommend, and each of an enum's values, is refused by
    the knob check exactly where the server refuses it (vacuum_index_cleanup is on or off
    from 12, auto from 14)."""
    version_num = versioned.major * 10000
    for k in KNOBS.values():
        if "table" not in k.scopes or k.vartype not in ("enum", "bool"):
            continue
        for choice in k.values or ("on", "off"):
            statement = sql.SQL("ALTER TABLE churn SET ({} = {})").format(
                sql.Identifier(k.name), sql.Literal(choice)
            )
            try:
                execute(versioned.dsn, statement)
                server_takes = True
            except psycopg.errors.InvalidParameterValue:
                server_takes = False
            try:
                k.check(choice, "table", version_num)
                we_take = True
            except VacuumlabError:
                we_take = False
            assert we_take == server_takes, (k.name, choice)
    execute(versioned.dsn, "ALTER TABLE churn RESET (vacuum_index_cleanup, vacuum_truncate)")


def test_the_settings_that_need_a_restart(versioned: Versioned) -> None:
    """A server-wide knob needs a restart exactly where the server's pg_settings says
    postmaster (autovacuum_max_workers only up to 17)."""
    with psycopg.connect(versioned.dsn) as conn:
        contexts = dict(conn.execute("SELECT name, context FROM pg_settings").fetchall())
    version_num = versioned.major * 10000
    checked = 0
    for k in KNOBS.values():
        if "server" in k.scopes and k.name in contexts:
            assert k.needs_restart(version_num) == (contexts[k.name] == "postmaster"), k.name
            checked += 1
    assert checked >= 15


def test_the_ranges_of_the_server_knobs(versioned: Versioned) -> None:
    """Each numeric server knob's range, at this major, is pg_settings' min_val and max_val
    (maintenance_work_mem's minimum fell from 1MB to 64kB in 17)."""
    with psycopg.connect(versioned.dsn) as conn:
        ranges = {
            name: (float(low), float(high))
            for name, low, high in conn.execute(
                "SELECT name, min_val, max_val FROM pg_settings WHERE min_val IS NOT NULL"
            )
        }
    version_num = versioned.major * 10000
    checked = 0
    for k in KNOBS.values():
        if "server" in k.scopes and k.vartype in ("integer", "real") and k.name in ranges:
            assert (k.lowest("server", version_num), k.maximum) == ranges[k.name], k.name
            checked += 1
    assert checked >= 10


def test_every_major_s_sandbox_has_data_checksums(versioned: Versioned) -> None:
    """The same choice on every major (18's initdb default), so that majors compare on the
    same WAL: with checksums the first hint bit after a checkpoint logs a full page."""
    with psycopg.connect(versioned.dsn) as conn:
        row = conn.execute("SHOW data_checksums").fetchone()
    assert row == ("on",)
