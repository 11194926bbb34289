"""The simulator fed from a captured workload profile (model/profiled.py) and ``vacuumlab
simulate --profile``: the captured shape, rates and settings are what the simulation runs on,
and it sees what a real server showed of a queue under naptime and scale factor."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from helpers.cli import assert_one_line_error, run_cli
from helpers.db import execute
from vacuumlab.collect.capture import capture
from vacuumlab.model import profiled
from vacuumlab.model.simulator import Subject, simulate
from vacuumlab.model.whatif import Change
from vacuumlab.records.profile import (
    CapturedTable,
    Column,
    Index,
    Profile,
    Rates,
    Setting,
    Shape,
    Statement,
    StatementKind,
)
from vacuumlab.records.simulation import Simulation, load_simulation

WINDOW_S = 300.0
#: A queue as the churn study runs it: jobs inserted, their status updated (an indexed column:
#: never HOT), and deleted, 600 of each a second; five autovacuums in the window kept the net
#: change of n_dead_tup at nothing.
QUEUE_RATES = Rates(
    inserts=600, updates=600, hot_updates=0, deletes=600, dead_tuples=0, autovacuums=5
)


def table(
    name: str,
    rates: Rates,
    *,
    rows: float = 50_000,
    pages: int = 800,
    reloptions: tuple[str, ...] = (),
    toast_bytes: int = 0,
    toast_reloptions: tuple[str, ...] = (),
) -> CapturedTable:
    return CapturedTable(
        shape=Shape(
            schema_name="public",
            name=name,
            columns=[Column(name="id", type="bigint", not_null=True, storage="plain")],
            indexes=[
                Index(name=f"{name}_pkey", definition="btree (id)", columns=["id"], primary=True)
            ],
            reloptions=list(reloptions),
            toast_reloptions=list(toast_reloptions),
            rows=rows,
            pages=pages,
            heap_bytes=pages * 8192,
            index_bytes=pages * 2048,
            toast_bytes=toast_bytes,
        ),
        rates=rates,
    )


def profile_of(
    *tables: CapturedTable,
    settings: dict[str, str] | None = None,
    statements: list[Statement] | None = None,
    version: int = 180006,
) -> Profile:
    return Profile(
        vacuumlab_version="test",
        captured_at=datetime(2025, 6, 1, 12, tzinfo=UTC),
        seconds=WINDOW_S,
        server_version_num=version,
        tables=list(tables),
        source="pg_stat_statements" if statements else "counters",
        statements=statements or [],
        settings=[
            Setting(name=name, setting=value, source="configuration file")
            for name, value in (settings or {}).items()
        ],
    )


def queue_profile(**settings: str) -> Profile:
    return profile_of(table("queue", QUEUE_RATES), settings=settings)


def subjects_of(p: Profile, changes: list[Change] | None = None) -> dict[str, Subject]:
    before, after = profiled.snapshots(p)
    return {s.label: s for s in profiled.inputs(before, after, changes).subjects}


def peak(p: Profile, hours: float = 24) -> int:
    sim = profiled.forecast_profile(p, hours=hours)
    found = sim.relation("public.queue")
    assert found is not None
    return found.peak_dead


def test_naptime_60_s_peaks_about_five_times_higher_than_10_s() -> None:
    """Measured on a real server: 48.8k-49.1k at naptime 60 s, 11.9k-12.3k at 10 s. The
    threshold (50 + 0.2 × 50,000) is passed within 9 s, so each cycle lasts until the
    launcher comes back: peak ≈ rate × naptime."""
    slow = peak(queue_profile(autovacuum_naptime="60"))
    fast = peak(queue_profile(autovacuum_naptime="10"))
    assert fast == pytest.approx(1200 * 10, rel=0.05)
    assert slow == pytest.approx(1200 * 60, rel=0.05)
    assert 4 <= slow / fast <= 6.5


def test_scale_factor_hardly_moves_the_peak_when_the_launcher_is_the_limit() -> None:
    """Measured: 48.8k (scale factor 0.2) against 49.1k (0.01) at naptime 60 s: both
    thresholds are passed long before the launcher comes back."""
    for naptime in ("60", "10"):
        coarse = peak(queue_profile(autovacuum_naptime=naptime))
        fine = peak(
            queue_profile(autovacuum_naptime=naptime, autovacuum_vacuum_scale_factor="0.01")
        )
        assert abs(coarse - fine) <= 0.02 * fine, (naptime, coarse, fine)


def test_the_window_starts_as_a_vacuum_leaves_the_table() -> None:
    """Just vacuumed, by the launcher's last visit: its next comes one naptime later."""
    sim = profiled.forecast_profile(queue_profile(autovacuum_naptime="20"), hours=1)
    assert sim.relation("public.queue").first_start_s == 20  # type: ignore[union-attr]
    [queue] = subjects_of(queue_profile()).values()
    assert queue.dead == 0
    assert queue.inserted == 0
    assert queue.reltuples == 50_000
    assert queue.pages == 800
    assert queue.all_visible == 800
    assert queue.xid_age == 0
    assert queue.index_pages == 800 * 2048 // 8192
    assert queue.n_indexes == 1


@pytest.mark.parametrize(
    ("rates", "expected"),
    [
        # Vacuums in the window lowered the net change: the non-HOT updates and deletes.
        (QUEUE_RATES, 1200.0),
        # HOT versions are left out: pruning takes them back between vacuums.
        (Rates(inserts=0, updates=1000, hot_updates=900, deletes=50, dead_tuples=0,
               autovacuums=2), 150.0),
        # Nothing overwrote n_dead_tup, and it grew faster (HOT versions not yet pruned).
        (Rates(inserts=0, updates=1000, hot_updates=900, deletes=50, dead_tuples=400), 400.0),
        # An autoanalyze set n_dead_tup to its estimate: the net change says nothing.
        (Rates(inserts=0, updates=1000, hot_updates=900, deletes=50, dead_tuples=400,
               autoanalyzes=1), 150.0),
        # A net change below the floor: an uncounted manual VACUUM or ANALYZE.
        (Rates(inserts=10, updates=20, hot_updates=0, deletes=0, dead_tuples=-5), 20.0),
    ],
)  # fmt: skip
def test_dead_tuples_accrue_at_what_only_a_vacuum_removes(rates: Rates, expected: float) -> None:
    assert profiled.dead_rate(rates) == pytest.approx(expected)
    [subject] = subjects_of(profile_of(table("t", rates))).values()
    assert subject.dead_per_second == pytest.approx(expected)
    assert subject.inserts_per_second == pytest.approx(rates.inserts)
    assert subject.live_per_second == pytest.approx(rates.inserts - rates.deletes)


def test_a_table_without_inserts_gets_no_insert_triggered_vacuum() -> None:
    """Few dead tuples (threshold 10,050 not reached in 24 h at 0.1 a second): only inserts
    could bring a vacuum, and with none there is none."""
    still = Rates(inserts=0, updates=0.1, hot_updates=0, deletes=0, dead_tuples=0.1)
    growing = still.model_copy(update={"inserts": 20.0})
    sim = profiled.forecast_profile(
        profile_of(table("still", still), table("growing", growing)), hours=24
    )
    still_forecast = sim.relation("public.still")
    growing_forecast = sim.relation("public.growing")
    assert still_forecast is not None
    assert growing_forecast is not None
    assert still_forecast.vacuums == 0
    # The same table with 20 inserts a second passes 1,000 + 0.2 × 50,000 after 550 s: the
    # launcher's visit at 600 s takes it.
    assert growing_forecast.first_start_s == 600
    assert growing_forecast.vacuums >= 10


def test_captured_reloptions_and_settings_are_in_force() -> None:
    p = profile_of(
        table("queue", QUEUE_RATES, reloptions=("autovacuum_vacuum_scale_factor=0.01",)),
        table("other", QUEUE_RATES),
        settings={"autovacuum_naptime": "15", "autovacuum_vacuum_threshold": "500"},
    )
    subjects = subjects_of(p)
    assert subjects["public.queue"].vacuum_scale == 0.01
    assert subjects["public.other"].vacuum_scale == 0.2  # the stock value of 18
    assert subjects["public.queue"].vacuum_base == 500
    assert subjects["public.queue"].vacuum_cap == 100_000_000  # 18's stock cap
    before, after = profiled.snapshots(p)
    given = profiled.inputs(before, after)
    assert given.launcher.naptime_s == 15
    assert given.launcher.workers == 3  # not captured: stock
    # A what-if on a table overrides its captured reloption, as on a server.
    changed = subjects_of(
        p, [Change("autovacuum_vacuum_scale_factor", "0.3", table="public.queue")]
    )
    assert changed["public.queue"].vacuum_scale == 0.3


def test_a_captured_reloption_changes_the_forecast() -> None:
    """With the queue's threshold at 50 + 0.2 × 1,000,000, 1,200 dead tuples a second pass it
    in 167 s; with autovacuum_vacuum_scale_factor=0.01 in 9 s, before each visit."""
    rates = QUEUE_RATES.model_copy(update={"inserts": 0.0, "deletes": 0.0, "updates": 1200.0})
    stock = profile_of(table("queue", rates, rows=1_000_000, pages=8000))
    tuned = profile_of(
        table("queue", rates, rows=1_000_000, pages=8000,
              reloptions=("autovacuum_vacuum_scale_factor=0.01",))
    )  # fmt: skip
    assert peak(stock) == pytest.approx(1200 * 180, rel=0.05)  # the third visit after each
    assert peak(tuned) == pytest.approx(1200 * 60, rel=0.05)


def test_the_toast_relation_is_sized_with_its_own_options_and_no_rates() -> None:
    p = profile_of(
        table("docs", QUEUE_RATES, toast_bytes=80 * 8192,
              toast_reloptions=("autovacuum_vacuum_cost_limit=1000",)),
        table("plain", QUEUE_RATES),
    )  # fmt: skip
    subjects = subjects_of(p)
    assert set(subjects) == {"public.docs", "public.docs (TOAST)", "public.plain"}
    toast = subjects["public.docs (TOAST)"]
    assert toast.is_toast
    assert toast.pages == 80
    assert toast.own_limit == 1000
    assert (toast.dead_per_second, toast.inserts_per_second) == (0.0, 0.0)
    assert subjects["public.docs"].own_limit is None
    off = subjects_of(p, [Change("autovacuum_enabled", "off", table="public.docs", toast=True)])
    assert not off["public.docs (TOAST)"].enabled
    assert off["public.docs"].enabled


def test_the_transaction_rate_comes_from_the_writing_statements() -> None:
    def statement(kind: StatementKind, calls: float) -> Statement:
        return Statement(queryid=len(kind), kind=kind, table="public.queue",
                         calls_per_s=calls, rows_per_call=1, mean_ms=0.1)  # fmt: skip

    plain = queue_profile()
    assert profiled.xid_rate(plain) == 1800  # no statements: every row changed
    seen = profile_of(
        table("queue", QUEUE_RATES),
        statements=[statement("insert", 600), statement("select_for_update", 600),
                    statement("update", 600), statement("select", 5000)],
    )  # fmt: skip
    assert profiled.xid_rate(seen) == 1800  # a plain SELECT takes no xid
    before, after = profiled.snapshots(seen)
    assert profiled.inputs(before, after).launcher.xids_per_second == pytest.approx(1800)


def test_settings_records_are_complete_with_the_versions_stock() -> None:
    settings = {s.name: s for s in profiled.settings_of(queue_profile(autovacuum_naptime="10"))}
    assert settings["autovacuum_naptime"].setting == "10"
    assert settings["autovacuum_naptime"].source == "configuration file"
    assert settings["autovacuum_max_workers"].setting == "3"
    assert settings["autovacuum_max_workers"].context == "sighup"  # an 18 profile: a reload
    assert settings["autovacuum_vacuum_scale_factor"].vartype == "real"
    older = {s.name: s.setting for s in profiled.settings_of(profile_of(version=130010))}
    assert older["vacuum_cost_page_miss"] == "10"
    assert "autovacuum_vacuum_max_threshold" not in older


def test_a_candidate_costs_well_under_a_millisecond_to_build() -> None:
    """The tuner builds the snapshots once and asks for inputs per candidate."""
    p = profile_of(
        table("queue", QUEUE_RATES),
        table("sessions", Rates(inserts=50, updates=300, hot_updates=200, deletes=50,
                                dead_tuples=20), rows=200_000, pages=3000),
        table("log", Rates(inserts=200, updates=0, hot_updates=0, deletes=0, dead_tuples=0),
              rows=1_000_000, pages=12_000, toast_bytes=10**8),
    )  # fmt: skip
    before, after = profiled.snapshots(p)
    candidates = [
        [Change("autovacuum_naptime", str(n)),
         Change("autovacuum_vacuum_scale_factor", "0.05", table="public.queue")]
        for n in range(10, 70)
    ]  # fmt: skip
    started = time.perf_counter()
    for changes in candidates:
        given = profiled.inputs(before, after, changes)
    per_candidate = (time.perf_counter() - started) / len(candidates)
    assert per_candidate < 0.005, per_candidate
    outcome = simulate(given.subjects, given.launcher, 3600.0)
    assert outcome.launches == 3600 // 69  # the last candidate's naptime


# --- the command -------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "queue profile.json"
    path.write_text(queue_profile(autovacuum_naptime="60").dump_json())
    return path


def test_simulate_profile_names_the_captured_table(saved: Path, tmp_path: Path) -> None:
    shown = run_cli("simulate", "--profile", str(saved), "--hours", "2")
    assert shown.returncode == 0, shown.stderr
    assert "public.queue" in shown.stdout
    assert "from a captured profile" in shown.stdout

    out = tmp_path / "sim.json"
    done = run_cli(
        "simulate", "--profile", str(saved), "--hours", "2", "--set", "autovacuum_naptime=10s",
        "--format", "json", "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    sim: Simulation = load_simulation(out)
    assert sim.changes == ["autovacuum_naptime=10"]
    queue = sim.relation("public.queue")
    assert queue is not None
    assert queue.dead_per_second == 1200
    assert queue.mean_interval_s == pytest.approx(10)


@pytest.mark.parametrize(("fmt", "marker"), [("md", "public.queue"), ("html", "<svg")])
def test_simulate_profile_in_every_format(saved: Path, fmt: str, marker: str) -> None:
    result = run_cli(
        "simulate", "--profile", str(saved), "--hours", "1", "--format", fmt,
        "--set", "public.queue.autovacuum_vacuum_scale_factor=0.01",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert marker in result.stdout


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (("postgresql://nobody@nowhere/db",), "give no DSN, --input, --run or --interval"),
        (("--input", "a.json", "--input", "b.json"), "give no DSN, --input, --run or --interval"),
        (("--run", "3"), "give no DSN, --input, --run or --interval"),
        (("--interval", "2min"), "its rates over its own window"),
        (("--set", "public.missing.autovacuum_enabled=off"), "the profile holds no table"),
        (("--set", "autovacuum_vacuum_max_threshold=-5"), "out of range"),
    ],
)
def test_simulate_profile_refuses_in_one_line(
    saved: Path, extra: tuple[str, ...], fragment: str
) -> None:
    assert_one_line_error(run_cli("simulate", "--profile", str(saved), *extra), fragment)


def test_a_bad_profile_file_is_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert_one_line_error(run_cli("simulate", "--profile", str(broken)), "not a vacuumlab profile")
    assert_one_line_error(
        run_cli("simulate", "--profile", str(tmp_path / "none.json")), "cannot read"
    )


def test_a_profile_captured_on_the_server_simulates(embedded_database: str) -> None:
    """A real capture, end to end: a table whose rows are updated and deleted in the window."""
    execute(
        embedded_database,
        "CREATE TABLE jobs (id int PRIMARY KEY, state text) "
        "WITH (autovacuum_vacuum_scale_factor = 0.01)",
        "CREATE INDEX ON jobs (state)",
        "INSERT INTO jobs SELECT g, 'new' FROM generate_series(1, 5000) g",
        "VACUUM ANALYZE jobs",
    )

    def work(seconds: float) -> None:
        execute(
            embedded_database,
            "UPDATE jobs SET state = 'done' WHERE id <= 2000",
            "DELETE FROM jobs WHERE id > 4500",
        )
        time.sleep(seconds)

    captured = capture(embedded_database, ["jobs"], 1.0, wait=work)
    sim = profiled.forecast_profile(captured, hours=1)
    jobs = sim.relation("public.jobs")
    assert jobs is not None
    # 2,000 non-HOT updates (state is indexed) and 500 deletes over the window.
    assert jobs.dead_per_second == pytest.approx(2500 / captured.seconds, rel=0.01)
    assert jobs.vacuums > 0
    [subject] = [s for s in subjects_of(captured).values() if not s.is_toast]
    assert subject.vacuum_scale == 0.01


@pytest.mark.parametrize(("version", "context"), [(170004, "postmaster"), (180006, "sighup")])
def test_a_profile_s_max_workers_needs_a_restart_before_18_only(version: int, context: str) -> None:
    p = profile_of(table("queue", QUEUE_RATES), version=version)
    settings = {s.name: s for s in profiled.settings_of(p)}
    assert settings["autovacuum_max_workers"].context == context
    assert settings["autovacuum_naptime"].context == "sighup"
    assert settings["autovacuum_freeze_max_age"].context == "postmaster"
