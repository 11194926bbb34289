"""Tests of the results store against real SQLite files."""

import math
import os
import socket
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from vacuumlab import __version__
from vacuumlab.errors import VacuumlabError
from vacuumlab.store import Point, Run, Store, machine_info, point_key

T0 = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)
T1 = T0 + timedelta(seconds=42.5)
SETTINGS = {"autovacuum_naptime": "60", "maintenance_work_mem": "65536"}


def new_run(store: Store, study: str = "churn") -> int:
    return store.create_run(
        study, {"rows": 1000}, server_version="17.2", settings=SETTINGS, machine={"host": "x"}
    )


def record(
    store: Store,
    run_id: int,
    params: Mapping[str, object],
    rep: int = 0,
    series: Mapping[str, Sequence[tuple[float, float | None]]] | None = None,
) -> int:
    return store.record_point(
        run_id, params, rep, {"tps": 1.5}, started_at=T0, ended_at=T1, series=series or {}
    )


def raw(path: Path) -> closing[sqlite3.Connection]:
    return closing(sqlite3.connect(path))


# -- opening -------------------------------------------------------------------------------


def test_new_store_has_meta_wal_and_parent_dirs(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "results.sqlite"
    Store.open(path).close()
    with raw(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT key, value FROM meta").fetchall() == [("schema_version", 1)]


def test_connection_pragmas(store: Store) -> None:
    conn = store._conn
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_reopen_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    with Store.open(path) as s:
        run_id = new_run(s)
        record(s, run_id, {"fillfactor": 90})
    with Store.open(path) as s:
        assert s.path == path
        assert [p.params for p in s.points(run_id)] == [{"fillfactor": 90}]


def assert_one_line_naming(exc: pytest.ExceptionInfo[VacuumlabError], path: Path) -> None:
    message = str(exc.value)
    assert "\n" not in message
    assert str(path) in message


def test_text_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is not a database, just some notes\n" * 100)
    with pytest.raises(VacuumlabError, match="not a vacuumlab store") as exc:
        Store.open(path)
    assert_one_line_naming(exc, path)


def test_sqlite_without_meta_is_rejected_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with raw(path) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
    with pytest.raises(VacuumlabError, match="no meta table") as exc:
        Store.open(path)
    assert_one_line_naming(exc, path)
    with raw(path) as conn:
        # The foreign file was not switched to WAL or given our tables.
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        assert tables == [("t",)]


def test_newer_schema_version_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    Store.open(path).close()
    with raw(path) as conn:
        conn.execute("UPDATE meta SET value = 2 WHERE key = 'schema_version'")
        conn.commit()
    with pytest.raises(VacuumlabError, match=r"newer vacuumlab .*schema_version 2") as exc:
        Store.open(path)
    assert_one_line_naming(exc, path)


def test_meta_without_schema_version_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    Store.open(path).close()
    with raw(path) as conn:
        conn.execute("DELETE FROM meta")
        conn.commit()
    with pytest.raises(VacuumlabError, match="schema_version None") as exc:
        Store.open(path)
    assert_one_line_naming(exc, path)


def test_unwritable_directory_is_rejected(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("a regular file where a directory should be")
    path = blocker / "sub" / "store.sqlite"
    with pytest.raises(VacuumlabError, match="cannot create its directory") as exc:
        Store.open(path)
    assert_one_line_naming(exc, path)


def test_directory_as_store_path_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(VacuumlabError, match="cannot open") as exc:
        Store.open(tmp_path)
    assert_one_line_naming(exc, tmp_path)


# -- runs ----------------------------------------------------------------------------------


def test_run_round_trip(store: Store) -> None:
    before = datetime.now(UTC)
    run_id = store.create_run(
        "churn",
        {"rows": 1000, "tables": ["a", "b"]},
        server_version="17.2",
        settings=SETTINGS,
        machine={"host": "box", "cpus": 8},
        note="first try",
    )
    run = store.run(run_id)
    assert isinstance(run, Run)
    assert (run.id, run.study, run.status, run.note) == (run_id, "churn", "running", "first try")
    assert run.params == {"rows": 1000, "tables": ["a", "b"]}
    assert (run.server_version, run.settings) == ("17.2", SETTINGS)
    assert run.machine == {"host": "box", "cpus": 8}
    assert run.vacuumlab_version == __version__
    assert run.started_at.tzinfo is not None
    assert before <= run.started_at <= datetime.now(UTC)
    assert run.ended_at is None


def test_run_machine_defaults_to_machine_info(store: Store) -> None:
    run_id = store.create_run("churn", {}, server_version="17.2", settings={})
    machine = store.run(run_id).machine
    assert machine["hostname"] == socket.gethostname()
    assert machine["vacuumlab_version"] == __version__


def test_machine_info_reports_real_values() -> None:
    info = machine_info()
    assert info["cpu_count"] == os.cpu_count()
    assert isinstance(info["memory_bytes"], int)
    assert info["memory_bytes"] > 64 * 1024 * 1024
    assert info["python"].count(".") == 2
    assert info["platform"]


def test_finish_run(store: Store) -> None:
    run_id = new_run(store)
    store.finish_run(run_id, "interrupted", note="ctrl-c")
    run = store.run(run_id)
    assert (run.status, run.note) == ("interrupted", "ctrl-c")
    assert run.ended_at is not None
    assert run.started_at <= run.ended_at <= datetime.now(UTC)
    store.finish_run(run_id, "done")  # a resumed run finishes again; None keeps the note
    assert (store.run(run_id).status, store.run(run_id).note) == ("done", "ctrl-c")


def test_runs_newest_first_and_by_study(store: Store) -> None:
    a = new_run(store, "churn")
    b = new_run(store, "bloat")
    c = new_run(store, "churn")
    assert [r.id for r in store.runs()] == [c, b, a]
    assert [r.id for r in store.runs("churn")] == [c, a]
    assert store.runs("nothing") == []


def test_missing_run_is_reported(store: Store) -> None:
    message = f"no run 99 in {store.path}"
    for call in (
        lambda: store.run(99),
        lambda: store.points(99),
        lambda: store.done(99),
        lambda: store.finish_run(99, "done"),
        lambda: record(store, 99, {"x": 1}),
    ):
        with pytest.raises(VacuumlabError) as exc:
            call()
        assert str(exc.value) == message


def test_run_identity_cannot_be_updated(store: Store) -> None:
    run_id = new_run(store)
    with raw(store.path) as conn, pytest.raises(sqlite3.IntegrityError, match="only status"):
        conn.execute("UPDATE runs SET study = 'other' WHERE id = ?", (run_id,))
    assert store.run(run_id).study == "churn"


# -- points and series ---------------------------------------------------------------------


def test_point_key_is_canonical() -> None:
    assert point_key({"b": 1, "a": [1, 2], "c": "x"}) == '{"a":[1,2],"b":1,"c":"x"}'
    assert point_key({"a": 1, "b": 2}) == point_key({"b": 2, "a": 1})


def test_point_key_rejects_non_json() -> None:
    with pytest.raises(VacuumlabError, match="not plain JSON"):
        point_key({"when": datetime.now(UTC)})


def test_point_and_series_round_trip(store: Store) -> None:
    run_id = new_run(store)
    cest = timezone(timedelta(hours=2))
    point_id = store.record_point(
        run_id,
        {"fillfactor": 90, "workers": 4},
        2,
        {"tps": 812.5, "dead_tuples": 10, "phase": "scan", "lag": None},
        started_at=T0.astimezone(cest),
        ended_at=T1,
        series={
            "dead": [(0.0, 5.0), (2.0, None), (1.0, 7.5)],
            "bloat": [(0.5, 0.25)],
        },
    )
    [point] = store.points(run_id)
    assert point == Point(
        id=point_id,
        run_id=run_id,
        key='{"fillfactor":90,"workers":4}',
        params={"fillfactor": 90, "workers": 4},
        repetition=2,
        metrics={"tps": 812.5, "dead_tuples": 10, "phase": "scan", "lag": None},
        started_at=T0,
        ended_at=T1,
    )
    assert point.started_at.utcoffset() == timedelta(0)
    assert store.series(point_id, "dead") == [(0.0, 5.0), (1.0, 7.5), (2.0, None)]
    assert store.series(point_id, "bloat") == [(0.5, 0.25)]
    assert store.series(point_id, "absent") == []
    assert store.metrics_of_series(point_id) == ["bloat", "dead"]


def test_point_without_series(store: Store) -> None:
    point_id = record(store, new_run(store), {"x": 1})
    assert store.metrics_of_series(point_id) == []


def test_missing_point_is_reported(store: Store) -> None:
    with pytest.raises(VacuumlabError, match=r"^no point 7 in "):
        store.series(7, "dead")
    with pytest.raises(VacuumlabError, match=r"^no point 7 in "):
        store.metrics_of_series(7)


def test_points_in_insertion_order(store: Store) -> None:
    run_id = new_run(store)
    other = new_run(store)
    for params in ({"x": 3}, {"x": 1}, {"x": 2}):
        record(store, run_id, params)
    record(store, other, {"x": 9})
    assert [p.params["x"] for p in store.points(run_id)] == [3, 1, 2]
    assert [p.params["x"] for p in store.points(other)] == [9]


def test_duplicate_point_is_rejected(store: Store) -> None:
    run_id = new_run(store)
    record(store, run_id, {"a": 1, "b": 2}, series={"s": [(0.0, 1.0)]})
    with pytest.raises(VacuumlabError, match="already recorded") as exc:
        store.record_point(run_id, {"b": 2, "a": 1}, 0, {"tps": 99.0}, started_at=T0, ended_at=T1)
    assert "\n" not in str(exc.value)
    [point] = store.points(run_id)
    assert point.metrics == {"tps": 1.5}
    assert store.series(point.id, "s") == [(0.0, 1.0)]
    record(store, run_id, {"a": 1, "b": 2}, rep=1)  # another repetition is a new point
    assert len(store.points(run_id)) == 2


def test_points_cannot_be_updated_in_the_file(store: Store) -> None:
    point_id = record(store, new_run(store), {"x": 1}, series={"s": [(0.0, 1.0)]})
    with raw(store.path) as conn:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE points SET metrics = '{}' WHERE id = ?", (point_id,))
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE series SET value = 0 WHERE point_id = ?", (point_id,))


def test_done_for_resume(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    with Store.open(path) as s:
        run_id = new_run(s)
        assert s.done(run_id) == set()
        record(s, run_id, {"x": 1}, rep=0)
        record(s, run_id, {"x": 1}, rep=1)
        record(s, run_id, {"x": 2}, rep=0)
        record(s, new_run(s), {"x": 3})
        s.finish_run(run_id, "interrupted")
    with Store.open(path) as s:  # a later process resumes the run
        done = s.done(run_id)
    assert done == {('{"x":1}', 0), ('{"x":1}', 1), ('{"x":2}', 0)}
    assert (point_key({"x": 2}), 0) in done
    assert (point_key({"x": 2}), 1) not in done


def series_count(path: Path) -> int:
    with raw(path) as conn:
        count: int = conn.execute("SELECT count(*) FROM series").fetchone()[0]
    return count


def test_nan_in_series_leaves_no_partial_point(store: Store) -> None:
    run_id = new_run(store)
    good = [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]
    with pytest.raises(VacuumlabError, match="only finite numbers"):
        record(store, run_id, {"x": 1}, series={"a": good, "b": [(0.0, 1.0), (1.0, math.nan)]})
    assert store.points(run_id) == []
    assert store.done(run_id) == set()
    assert series_count(store.path) == 0
    # The store is still usable and the point can now be recorded properly.
    point_id = record(store, run_id, {"x": 1}, series={"a": good})
    assert store.series(point_id, "a") == good


class ExplodingSamples(Sequence[tuple[float, float]]):
    """Samples whose iteration is cut short, like a process interrupted mid-insert."""

    def __len__(self) -> int:
        return 3

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def __iter__(self) -> Iterator[tuple[float, float]]:
        yield (0.0, 1.0)
        yield (1.0, 2.0)
        raise KeyboardInterrupt


def test_interrupt_mid_point_leaves_no_partial_point(store: Store) -> None:
    run_id = new_run(store)
    with pytest.raises(KeyboardInterrupt):
        record(store, run_id, {"x": 1}, series={"a": [(0.0, 1.0)], "b": ExplodingSamples()})
    assert store.points(run_id) == []
    assert series_count(store.path) == 0
    record(store, run_id, {"x": 1})
    assert store.done(run_id) == {('{"x":1}', 0)}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_metric_is_rejected(store: Store, bad: float) -> None:
    run_id = new_run(store)
    with pytest.raises(VacuumlabError, match="'tps'"):
        store.record_point(run_id, {"x": 1}, 0, {"tps": bad}, started_at=T0, ended_at=T1)
    assert store.points(run_id) == []


def test_non_finite_series_time_is_rejected(store: Store) -> None:
    run_id = new_run(store)
    with pytest.raises(VacuumlabError, match="only finite numbers"):
        record(store, run_id, {"x": 1}, series={"a": [(math.inf, 1.0)]})
    assert store.points(run_id) == []


def test_naive_datetime_is_rejected(store: Store) -> None:
    run_id = new_run(store)
    with pytest.raises(VacuumlabError, match="no time zone"):
        store.record_point(run_id, {"x": 1}, 0, {}, started_at=datetime(2024, 1, 1), ended_at=T1)
    assert store.points(run_id) == []


# -- concurrency ---------------------------------------------------------------------------


def test_reader_opens_and_reads_while_writer_is_mid_transaction(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    with Store.open(path) as writer:
        run_id = new_run(writer)
        record(writer, run_id, {"x": 1})
        # Hold the write lock with an uncommitted point, as a writer mid-point would.
        writer._conn.execute("BEGIN IMMEDIATE")
        writer._conn.execute(
            "INSERT INTO points (run_id, key, params, repetition, metrics, started_at, ended_at)"
            " VALUES (?, '{}', '{}', 5, '{}', '', '')",
            (run_id,),
        )
        try:
            with Store.open(path) as reader:
                assert reader.run(run_id).status == "running"
                assert [p.params for p in reader.points(run_id)] == [{"x": 1}]
        finally:
            writer._conn.execute("ROLLBACK")


def test_writer_waits_for_a_busy_lock(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    with Store.open(path) as s, closing(sqlite3.connect(path, check_same_thread=False)) as other:
        other.execute("BEGIN IMMEDIATE")
        timer = threading.Timer(0.5, other.rollback)
        timer.start()
        try:
            run_id = new_run(s)  # blocks until the other connection lets go
        finally:
            timer.join()
        assert s.run(run_id).study == "churn"
