"""``advise --verify``: refused without consent on a named server, every change restored (also
when the run is cut short), the verdicts' arithmetic, and end to end on a churning queue."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from helpers.cli import run_cli
from helpers.db import execute, wait_for_counts
from scenarios.workloads import pgbench_load
from vacuumlab.collect.snapshot import collect
from vacuumlab.errors import VacuumlabError
from vacuumlab.lab.changes import Changes, TableChange
from vacuumlab.lab.verdicts import judge
from vacuumlab.lab.verify import _predictions, rate_seconds, verify
from vacuumlab.model import whatif
from vacuumlab.model.forecast import forecast
from vacuumlab.model.simulator import Launcher
from vacuumlab.model.whatif import Change
from vacuumlab.pg.connect import connect
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.advice import Recommendation
from vacuumlab.records.snapshot import Relation
from vacuumlab.records.verification import (
    Verification,
    WindowFigures,
    load_verification,
)
from vacuumlab.report.verification import render_markdown

#: What a verification may touch, read whole: every autovacuum setting of the server.
SERVER_SETTINGS = (
    "SELECT name, setting, source FROM pg_settings "
    "WHERE name LIKE 'autovacuum%' OR name LIKE 'vacuum_cost%' ORDER BY name"
)
OPTIONS = (
    "SELECT c.relname, c.reloptions, t.reloptions FROM pg_class c "
    "LEFT JOIN pg_class t ON t.oid = c.reltoastrelid WHERE c.relnamespace = 'public'::regnamespace "
    "AND c.relkind = 'r' ORDER BY c.relname"
)


def _read(dsn: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(query).fetchall()


# -- the command line -------------------------------------------------------------------------


def test_verify_on_a_named_server_needs_consent(sandbox: Sandbox) -> None:
    """A DSN without --allow-alter-system: exit 2, one line saying why; nothing connected."""
    proc = run_cli("advise", sandbox.dsn, "--interval", "1s", "--verify")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "--allow-alter-system" in lines[0]
    assert "restored" in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--allow-alter-system", "--verify"), "--verify needs --interval"),
        (("--interval", "5s", "--verify-for", "5min"), "go with --verify"),
        (("--interval", "5s", "--verify", "--allow-alter-system", "--verify-for", "x"),
         "--verify-for takes seconds"),
        (("--interval", "5s", "--verify", "--allow-alter-system", "--format", "html"),
         "table, md or json"),
    ],
)  # fmt: skip
def test_verify_options_are_checked_first(
    sandbox: Sandbox, args: tuple[str, ...], message: str
) -> None:
    proc = run_cli("advise", sandbox.dsn, *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# -- applying and restoring -------------------------------------------------------------------


def _relation(dsn: str, name: str) -> Relation:
    with connect(dsn) as session:
        oid = session.scalar("SELECT %s::regclass::oid::bigint", [name])
    fields = dict.fromkeys(Relation.model_fields)
    fields |= {"oid": oid, "schema_name": "public", "name": name, "kind": "r", "reltuples": 0,
               "relpages": 0, "relallvisible": 0, "n_indexes": 0, "reloptions": {}}  # fmt: skip
    return Relation.model_validate(fields)


def _table_change(
    dsn: str, table: str, setting: str, value: str, toast: bool = False
) -> TableChange:
    change = Change(setting, value, table=f"public.{table}", toast=toast)
    rec = Recommendation(
        sql=f"-- {change}", reason="test", scope=change.scope, setting=setting, value=value,
        impact=0.5,
    )  # fmt: skip
    return TableChange(change, _relation(dsn, table), rec)


@pytest.fixture
def tables(embedded_database: str) -> Iterator[str]:
    execute(
        embedded_database,
        "CREATE TABLE jobs (id int PRIMARY KEY, body text) "
        "WITH (autovacuum_vacuum_scale_factor = 0.3, toast.autovacuum_vacuum_threshold = 70)",
        "CREATE TABLE plain (id int PRIMARY KEY)",
    )
    return embedded_database


def test_every_change_is_restored_and_read_back(tables: str, sandbox: Sandbox) -> None:
    """Table options set before (restored to their value), unset before (reset), a TOAST
    option, and a server setting: after restore, pg_class and pg_settings read as before."""
    options, settings = _read(tables, OPTIONS), _read(sandbox.dsn, SERVER_SETTINGS)
    changes = Changes(tables, Target.of_sandbox(sandbox))
    changes.apply_tables(
        [
            _table_change(tables, "jobs", "autovacuum_vacuum_scale_factor", "0.01"),
            _table_change(tables, "jobs", "autovacuum_vacuum_cost_delay", "0"),
            _table_change(tables, "jobs", "autovacuum_vacuum_threshold", "5", toast=True),
            _table_change(tables, "plain", "autovacuum_enabled", "off"),
        ]
    )
    changes.apply_server([_server_rec("autovacuum_naptime", "7s")])
    changed = _read(tables, OPTIONS)
    assert changed != options
    assert "autovacuum_vacuum_cost_delay=0" in str(changed)
    assert ("autovacuum_naptime", "7", "configuration file") in _read(sandbox.dsn, SERVER_SETTINGS)
    assert changes.restore() == []
    assert _read(tables, OPTIONS) == options
    assert _read(sandbox.dsn, SERVER_SETTINGS) == settings
    assert [a.restored for a in changes.applied] == [True] * 5
    previous = {(a.relation, a.setting): a.previous for a in changes.applied}
    assert previous == {
        ("public.jobs", "autovacuum_vacuum_scale_factor"): "0.3",
        ("public.jobs", "autovacuum_vacuum_cost_delay"): None,
        ("public.jobs (TOAST)", "autovacuum_vacuum_threshold"): "70",
        ("public.plain", "autovacuum_enabled"): None,
        (None, "autovacuum_naptime"): "60",
    }


def _server_rec(setting: str, value: str) -> Recommendation:
    return Recommendation(
        sql=f"ALTER SYSTEM SET {setting} = '{value}'", reason="test", scope="server",
        setting=setting, value=value, impact=0.5,
    )  # fmt: skip


def test_a_failed_change_is_still_undone(tables: str, sandbox: Sandbox) -> None:
    """The second change fails (an out-of-range value): the first is restored all the same."""
    options = _read(tables, OPTIONS)
    changes = Changes(tables, Target.of_sandbox(sandbox))
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        changes.apply_tables(
            [
                _table_change(tables, "plain", "autovacuum_vacuum_threshold", "10"),
                _table_change(tables, "jobs", "autovacuum_vacuum_scale_factor", "-5"),
            ]
        )
    assert _read(tables, OPTIONS) != options
    assert changes.restore() == []
    assert _read(tables, OPTIONS) == options


# -- verdicts -----------------------------------------------------------------------------------


def _window(peak: int, vacuums: int, start: int = 100_000, end: int = 100_000) -> WindowFigures:
    return WindowFigures(
        seconds=60, samples=61, peak_dead=peak, mean_dead=peak / 2, start_bytes=start,
        end_bytes=end, vacuums=vacuums,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("setting", "before", "after", "verdict"),
    [
        ("autovacuum_vacuum_scale_factor", _window(40_000, 1), _window(10_000, 4),
         "moved as advised"),
        # Fewer dead tuples but no more vacuums: a threshold's promise is not kept.
        ("autovacuum_vacuum_scale_factor", _window(40_000, 1), _window(10_000, 1),
         "did not move"),
        # Within the margin: one window's sawtooth against another's.
        ("autovacuum_naptime", _window(40_000, 1), _window(37_000, 3), "did not move"),
        # The table grew by far more after: bloat growth up.
        ("autovacuum_vacuum_cost_delay", _window(40_000, 1),
         _window(10_000, 1, end=300_000), "did not move"),
        ("autovacuum_vacuum_cost_delay", _window(40_000, 1), _window(30_000, 1),
         "moved as advised"),
        ("autovacuum_freeze_max_age", _window(40_000, 1), _window(10_000, 4),
         "not measurable here"),
    ],
)  # fmt: skip
def test_verdicts(setting: str, before: WindowFigures, after: WindowFigures, verdict: str) -> None:
    outcome = judge(setting, "1", "public.q", [("public.q", before, after)])
    assert outcome.verdict == verdict, outcome.detail


def test_a_server_setting_with_no_table_is_judged_on_every_watched_one() -> None:
    moved, stayed = (
        (_window(40_000, 1), _window(10_000, 4)),
        (_window(40_000, 1), _window(40_000, 1)),
    )
    outcome = judge("autovacuum_naptime", "10", None, [("a", *moved), ("b", *stayed)])
    assert outcome.verdict == "did not move"
    assert "(b)" in outcome.detail
    assert "(a)" not in outcome.detail


# -- predictions ------------------------------------------------------------------------------


def test_a_window_shorter_than_the_naptime_still_predicts_a_rate(embedded_database: str) -> None:
    """The server's naptime is 60 s and the window 20 s: a simulation of the window alone
    holds no launch (the first comes half a naptime in), and its vacuums per hour were 0. A
    table 50 dead tuples short of its threshold of 250, gaining dead tuples by the hundred per
    second, passes it at once and is vacuumed at every launch: 60 an hour without the changes,
    360 with a naptime of 10 s. The peaks stay those of one window: without the changes no
    vacuum in it, so the dead tuples of the later snapshot plus 20 s at their rate; with them
    a worker comes 5 s in, and the peak is lower."""
    execute(
        embedded_database,
        "CREATE TABLE hot (id int PRIMARY KEY, v int) "
        "WITH (autovacuum_analyze_threshold = 1000000)",
        "INSERT INTO hot SELECT g, 0 FROM generate_series(1, 1000) g",
        "VACUUM (ANALYZE) hot",
    )
    with connect(embedded_database) as session:
        first = collect(session)
    execute(embedded_database, "UPDATE hot SET v = 1 WHERE id <= 200")
    wait_for_counts(embedded_database, "hot", "n_dead_tup", 200)
    time.sleep(2.0)  # about 100 dead tuples/s, however fast the update ran
    with connect(embedded_database) as session:
        later = collect(session)
    notes: list[str] = []
    oid = next(t.heap.oid for t in later.tables if t.heap.name == "hot")
    faster = [whatif.parse("autovacuum_naptime=10")]
    window = 20.0
    predicted = _predictions(first, later, faster, window, {"public.hot": oid}, notes)
    assert notes == []
    hot = predicted["public.hot"]
    assert hot.vacuums_per_hour_without == pytest.approx(60, abs=1)
    assert hot.vacuums_per_hour_with == pytest.approx(360, abs=6)
    assert hot.rates_over_s == 3600
    rate = forecast(first, later, hours=1).relation("public.hot")
    assert rate is not None
    assert rate.dead_per_second > 50 / 30  # past 250 before the first launch, 30 s in
    expected = round(200 + rate.dead_per_second * window)
    assert hot.peak_dead_without == pytest.approx(expected, abs=1)
    assert 0 < hot.peak_dead_with < hot.peak_dead_without


def test_the_rates_cover_an_hour_or_five_launcher_rounds_whichever_is_longer() -> None:
    minute, slow = Launcher(naptime_s=60, workers=3), Launcher(naptime_s=3000, workers=3)
    assert rate_seconds(20, minute, minute) == 3600
    assert rate_seconds(20, minute, slow) == 5 * 3000
    assert rate_seconds(7200, minute, minute) == 7200


# -- end to end ---------------------------------------------------------------------------------

QUEUE_SCRIPT = """INSERT INTO queue (payload) VALUES (repeat('j', 40));
DELETE FROM queue WHERE id = (SELECT id FROM queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED);
"""


def _queue(dsn: str, tmp_path: Path) -> Path:
    """A queue with a backlog of 1,000 jobs; returns the pgbench script that churns it."""
    execute(
        dsn,
        "CREATE TABLE queue (id bigserial PRIMARY KEY, payload text NOT NULL)",
        "INSERT INTO queue (payload) SELECT repeat('j', 40) FROM generate_series(1, 1000)",
        "VACUUM (ANALYZE) queue",
    )
    script = tmp_path / "queue.sql"
    script.write_text(QUEUE_SCRIPT)
    return script


@pytest.mark.slow
def test_verify_a_churning_queue(embedded_database: str, sandbox: Sandbox, tmp_path: Path) -> None:
    """A queue under the server's defaults: the advice (a lower scale factor, no cost delay, a
    shorter naptime) applied, the dead-tuple peak measured lower after it, the simulator's
    prediction beside it, and every setting restored."""
    script = _queue(embedded_database, tmp_path)
    options, settings = _read(embedded_database, OPTIONS), _read(sandbox.dsn, SERVER_SETTINGS)
    with pgbench_load(sandbox, embedded_database, 140, script=script):
        result = verify(embedded_database, Target.of_sandbox(sandbox), interval=30, window=25)
    assert _read(embedded_database, OPTIONS) == options
    assert _read(sandbox.dsn, SERVER_SETTINGS) == settings
    assert result.restored
    assert all(a.restored for a in result.applied)
    applied = {(a.relation, a.setting) for a in result.applied}
    assert ("public.queue", "autovacuum_vacuum_scale_factor") in applied, result.skipped
    queue = result.table("public.queue")
    assert queue is not None
    assert queue.prediction is not None
    assert queue.before.peak_dead
    assert queue.after.peak_dead is not None
    assert queue.after.peak_dead < queue.before.peak_dead, queue
    assert queue.prediction.peak_dead_with < queue.prediction.peak_dead_without
    scale = next(o for o in result.outcomes if o.setting == "autovacuum_vacuum_scale_factor")
    assert scale.verdict == "moved as advised", scale.detail
    # The record round-trips and renders.
    path = tmp_path / "verification.json"
    path.write_text(result.dump_json())
    assert load_verification(path) == result
    assert "| public.queue |" in render_markdown(result)


@pytest.mark.slow
def test_ctrl_c_restores_everything(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    """Ctrl-C while the changes are in place (a named server, with consent), as the
    verification waits for the first autovacuum under them: exit 130, and every table and
    server setting reads as before."""
    script = _queue(embedded_database, tmp_path)
    options, settings = _read(embedded_database, OPTIONS), _read(sandbox.dsn, SERVER_SETTINGS)
    command = [sys.executable, "-m", "vacuumlab", "advise", embedded_database, "--interval",
               "10s", "--verify", "--verify-for", "10s", "--allow-alter-system"]  # fmt: skip
    with pgbench_load(sandbox, embedded_database, 60, script=script):
        proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("· waiting (up to"):  # every change is in place: cut it short
                proc.send_signal(signal.SIGINT)
                break
        _, rest = proc.communicate(timeout=60)
    assert proc.returncode == 130, "".join(seen) + rest
    assert "restored" in rest
    assert any("applying" in line for line in seen)
    assert _read(embedded_database, OPTIONS) == options
    assert _read(sandbox.dsn, SERVER_SETTINGS) == settings


# -- the record ---------------------------------------------------------------------------------


def test_a_foreign_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "advice.json"
    path.write_text('{"kind": "vacuumlab.advice"}')
    with pytest.raises(VacuumlabError, match="not a vacuumlab verification"):
        load_verification(path)


def test_markdown_escapes_database_names(sample_verification: Verification) -> None:
    text = render_markdown(sample_verification)
    assert "public.a\\|b" in text
    assert "| public.a|b |" not in text


@pytest.fixture
def sample_verification() -> Verification:
    from vacuumlab.records.advice import Advice
    from vacuumlab.records.snapshot import ServerInfo
    from vacuumlab.records.verification import TableResult

    server = ServerInfo(
        version_num=180006, version="PostgreSQL 18.6", database="app", user="me",
        is_superuser=True, in_recovery=False, block_size=8192, can_read_all_stats=True,
        extensions=frozenset(), columns=frozenset(),
    )  # fmt: skip
    now = datetime.now(UTC)
    advice = Advice(vacuumlab_version="0", taken_at=now, interval_s=30, server=server)
    return Verification(
        vacuumlab_version="0",
        advice=advice,
        window_s=30,
        settle_s=4,
        tables=[TableResult(relation="public.a|b", before=_window(9, 1), after=_window(3, 2))],
        restored=True,
        finished_at=now,
    )


# -- the windows compared -----------------------------------------------------------------------


def test_the_prediction_with_the_changes_starts_after_their_first_vacuum(
    embedded_database: str,
) -> None:
    """A table 5,000 dead tuples deep, past its threshold, gaining a few a second. The after
    window starts once it has had its first vacuum under the changes (a naptime of 10 s): the
    prediction with them must start there too, not with the backlog the old settings left,
    which the after window never sees. Without the changes (a naptime of 60 s: no launch in
    the window) the before window holds the backlog, and so does its prediction."""
    execute(
        embedded_database,
        "CREATE TABLE backlog (id int PRIMARY KEY, v int) "
        "WITH (autovacuum_enabled = off, autovacuum_analyze_threshold = 1000000)",
        "INSERT INTO backlog SELECT g, 0 FROM generate_series(1, 20000) g",
        "VACUUM (ANALYZE) backlog",
        "UPDATE backlog SET v = 1 WHERE id <= 5000",
    )
    wait_for_counts(embedded_database, "backlog", "n_dead_tup", 5000)
    with connect(embedded_database) as session:
        first = collect(session)
    execute(embedded_database, "UPDATE backlog SET v = 2 WHERE id BETWEEN 10001 AND 10040")
    wait_for_counts(embedded_database, "backlog", "n_dead_tup", 5040)
    time.sleep(2.0)
    with connect(embedded_database) as session:
        later = collect(session)
    oid = next(t.heap.oid for t in later.tables if t.heap.name == "backlog")
    # Autovacuum is off for the table while the test takes its snapshots: the changes turn it
    # on, with a naptime short enough for the first vacuum to come within the window.
    changes = [
        whatif.parse("public.backlog.autovacuum_enabled=on"),
        whatif.parse("autovacuum_naptime=10"),
    ]
    notes: list[str] = []
    window = 30.0
    predicted = _predictions(first, later, changes, window, {"public.backlog": oid}, notes)
    assert notes == []
    backlog = predicted["public.backlog"]
    rate = forecast(first, later, hours=1).relation("public.backlog")
    assert rate is not None
    assert 0 < rate.dead_per_second < 100
    assert backlog.peak_dead_without >= 5040
    # From the end of the first vacuum, one window of the rate (far from the threshold of
    # 4,050 again): the backlog is gone, as it is from the after window.
    assert backlog.peak_dead_with == pytest.approx(rate.dead_per_second * window, rel=0.02)
    # The first launch comes half a naptime in; the vacuum of 20,000 rows takes well under 5 s.
    assert backlog.settle_s is not None
    assert 5 <= backlog.settle_s < 10


def test_nothing_changed_promises_no_measuring(embedded_database: str) -> None:
    """A quiet database: no recommendation to apply. The progress lines must not promise a
    measuring time, nor the title windows before and after changes that were never made."""
    proc = run_cli(
        "advise", embedded_database, "--interval", "1s", "--verify", "--verify-for", "45s",
        "--allow-alter-system", "--format", "md",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not re.search(r"\d+ to \d+ s", proc.stderr), proc.stderr
    assert "nothing to measure" in proc.stderr
    title = proc.stdout.splitlines()[0]
    assert "before and" not in title
    assert title.endswith("advised over 1 s; nothing was changed, so nothing was measured")
