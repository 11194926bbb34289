"""``vacuumlab watch --record``: refreshes of a real server appended to the results store as a
run of kind watch, each with its snapshot; the report drawn from the store alone."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

import pytest

from helpers.advise import T0
from helpers.cli import run_cli
from helpers.db import execute, wait_for_counts
from helpers.terminal import slow_vacuum, watching
from vacuumlab.records.live import Refresh
from vacuumlab.records.watch_spec import snapshot_of
from vacuumlab.report import RENDERERS
from vacuumlab.report.watch.timeline import Span, timeline
from vacuumlab.store import Point, Store
from vacuumlab.watch.recorder import Recorder
from vacuumlab.watch.source import Source


def test_refreshes_become_points_with_their_snapshot_and_the_report_draws_them(
    embedded_database: str, tmp_path: Path
) -> None:
    path = tmp_path / "results.sqlite"
    recorder = Recorder.check(path, 0.5, "the test's server")
    source = Source(embedded_database)
    refreshes: list[Refresh] = []

    def refresh() -> None:
        found = source.refresh()
        assert found.error is None, found.error
        recorder.append(found)
        refreshes.append(found)

    with slow_vacuum(embedded_database) as pid:
        execute(
            embedded_database,
            "CREATE TABLE churn (id int) WITH (autovacuum_enabled = off)",  # VACUUM comes later
        )
        for rows, dead in ((100, 100), (300, 400)):
            execute(
                embedded_database,
                f"INSERT INTO churn SELECT generate_series(1, {rows})",
                "DELETE FROM churn",
            )
            wait_for_counts(embedded_database, "churn", "n_dead_tup", dead)
            refresh()
        refresh()
    # What Source hands out when it cannot read the server.
    recorder.append(Refresh(None, "cannot connect: connection refused", 0.2, 0))
    execute(embedded_database, "VACUUM churn")  # between two refreshes: none sees it run
    refresh()
    source.close()
    recorder.close()
    assert recorder.error is None
    assert pid > 0

    with Store.open(path) as store:
        run = store.run(recorder.run_id or 0)
        assert (run.study, run.status) == ("watch", "done")
        assert run.params["refresh_s"] == 0.5
        assert run.settings["autovacuum_naptime"]
        points = store.points(run.id)
        assert [p.params["refresh"] for p in points] == [1, 2, 3, 4, 5]
        first, second, _, lost, last = (p.metrics for p in points)
        assert (first["up"], lost["up"], lost["error"]) == (
            1,
            0,
            "cannot connect: connection refused",
        )
        assert first["statements"] == second["statements"] == refreshes[0].statements
        assert (first["dead|public.churn"], second["dead|public.churn"]) == (100, 400)
        assert "vacuum|public.big" in first
        assert "vacuum|public.big" not in last  # cancelled by then
        assert not any(name.startswith("ended|") for name in second)
        final = refreshes[-1].snapshot
        assert final is not None
        churn = next(t.heap for t in final.tables if t.heap.name == "churn")
        assert churn.last_vacuum is not None
        assert last["ended|public.churn"] == pytest.approx(churn.last_vacuum.timestamp())
        assert "took|public.churn" in last
        assert snapshot_of(second, "point 2") == refreshes[1].snapshot
        assert snapshot_of(lost, "point 4") is None

        page = RENDERERS["watch"](store, run.id, tmp_path / "report")
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "Watched autovacuum, run 1" in html
    assert html.count("<svg") == 1
    assert (page.parent / "timelines.png").is_file()
    assert "5, 1 could not read the server" in html
    assert '<td class="code">public.big</td>' in html
    row = html.split('<td class="code">public.churn</td>')[1].split("</tr>")[0]
    assert '<td class="num">400</td>' in row  # its peak
    assert '<td class="num">1</td>' in row  # its VACUUM, which no refresh saw running


def test_absent_relations_had_no_dead_tuples_unless_the_point_was_full_or_failed() -> None:
    def point(n: int, metrics: dict[str, object]) -> Point:
        moment = T0 + timedelta(seconds=2 * n)
        return Point(n, 1, "", {"refresh": n}, 0, metrics, moment, moment)  # type: ignore[arg-type]

    line = timeline(
        [
            point(1, {"up": 1, "dead_relations": 1, "dead|a": 10, "vacuum|a": 0.1}),
            point(2, {"up": 1, "dead_relations": 1, "dead|a": 20, "vacuum|a": 0.5}),
            point(3, {"up": 1, "dead_relations": 0}),  # vacuumed: none left
            point(4, {"up": 0, "error": "lost"}),
            point(5, {"up": 1, "dead_relations": 10_000, "vacuum|a": 0.2}),  # a's not kept
        ]
    )
    assert line.dead["a"] == [(0.0, 10), (2.0, 20), (4.0, 0.0), (6.0, None), (8.0, None)]
    assert line.vacuums["a"] == [Span(0.0, 2.0), Span(8.0, 8.0)]
    assert line.down == [Span(6.0, 6.0)]
    assert line.peak("a") == 20


def test_watch_record_in_a_terminal_leaves_a_run_the_report_command_renders(
    embedded_database: str, tmp_path: Path
) -> None:
    store = tmp_path / "results.sqlite"
    execute(
        embedded_database, "CREATE TABLE t (id int)", "INSERT INTO t VALUES (1)", "DELETE FROM t"
    )
    with watching(embedded_database, "--refresh", "0.5", "--record", "--store", str(store)) as term:
        term.wait_for("public.t")
        time.sleep(1.5)
        term.keys("q")
        screen = term.wait_for("EXIT 0", timeout=10)
    assert "refreshes as run 1 in" in screen
    result = run_cli("report", "1", "--store", str(store))
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).name == "report.html"


def test_a_vacuum_the_server_says_ended_spans_its_length_and_merges_with_one_seen_running() -> None:
    def point(n: int, metrics: dict[str, object]) -> Point:
        moment = T0 + timedelta(seconds=2 * n)
        base = {"up": 1, "dead_relations": 0}
        return Point(n, 1, "", {"refresh": n}, 0, base | metrics, moment, moment)  # type: ignore[arg-type]

    end = (T0 + timedelta(seconds=5)).timestamp()  # 3 s after the first refresh
    line = timeline(
        [
            point(1, {"vacuum|a": 0.5}),  # seen running at 0 s ...
            point(2, {"ended|a": end, "took|a": 4.0}),  # ... ended at 3 s, 4 s long
            point(3, {"ended|b": end + 1.0, "took|b": 0.5}),  # never seen running
            point(4, {"ended|b": end + 1.0, "took|b": 0.5}),  # the same vacuum again
        ]
    )
    assert line.vacuums == {"a": [Span(-1.0, 3.0)], "b": [Span(3.5, 4.0)]}


def test_simulate_replays_a_recorded_period(embedded_database: str, tmp_path: Path) -> None:
    """``simulate --run RUN`` takes the rates between the first and last snapshots a watch
    kept: a table that gained 600 dead tuples between them is simulated with a dead-tuple
    rate; a run with one snapshot, or a study's run, is a one-line error."""
    path = tmp_path / "results.sqlite"
    recorder = Recorder.check(path, 1.0, "the test's server")
    source = Source(embedded_database)
    execute(embedded_database, "CREATE TABLE replayed (id int) WITH (autovacuum_enabled = off)")
    recorder.append(source.refresh())
    alone = Recorder.check(path, 1.0, "the test's server")
    alone.append(source.refresh())
    alone.close()
    execute(
        embedded_database,
        "INSERT INTO replayed SELECT generate_series(1, 600)",
        "DELETE FROM replayed",
    )
    wait_for_counts(embedded_database, "replayed", "n_dead_tup", 600)
    recorder.append(source.refresh())
    source.close()
    recorder.close()

    out = run_cli("simulate", "--run", str(recorder.run_id), "--store", str(path), "--hours",
                  "1", "--format", "json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    [replayed] = [
        r for r in json.loads(out.stdout)["relations"] if r["relation"] == "public.replayed"
    ]
    assert replayed["dead_per_second"] > 0
    one = run_cli("simulate", "--run", str(alone.run_id), "--store", str(path))
    assert one.returncode == 2
    assert one.stderr.strip().splitlines() == [
        f"error: run {alone.run_id} kept 1 snapshot: rates need two (watch --record for two "
        "refreshes or more)"
    ]
