"""The fillfactor study against the embedded PostgreSQL 18: free space keeps updates HOT."""

from __future__ import annotations

import html as html_lib
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from scipy import stats

from helpers.db import fresh_database
from vacuumlab.errors import Interrupted, VacuumlabError
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.fillfactor import FillfactorConfig
from vacuumlab.report.fillfactor import render_fillfactor_report
from vacuumlab.store import Point, Store
from vacuumlab.studies.base import Silent
from vacuumlab.studies.fillfactor import (
    FillfactorRun,
    Moments,
    describe,
    init_command,
    load_command,
    moments_delta,
    parse_latency,
    parse_transactions,
    study_dsn,
)

make_config = FillfactorConfig.from_preset

MB = 2**20
#: shared_buffers 32MB makes "fits" scale 1 (16 MB): a few seconds per point.
SMALL = dict(sizes=("fits",), fillfactors=(80, 100), seconds=3, warmup=1, repeat=2,
             shared_buffers="32MB")  # fmt: skip
PGBENCH_OUTPUT = """pgbench (18.6)
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 4
number of transactions actually processed: 22296
number of failed transactions: 0 (0.000%)
latency average = 0.897 ms
initial connection time = 4.921 ms
tps = 2230.310800 (without initial connection time)
"""


@dataclass(frozen=True)
class Measured:
    store: Path
    run_id: int
    points: list[Point]
    dsn: str


@pytest.fixture(scope="module")
def study_database(sandbox: Sandbox) -> Iterator[str]:
    """A database of its own, so "nothing in public" means nothing the study made."""
    yield from fresh_database(sandbox.dsn)


@pytest.fixture(scope="module")
def small_run(
    sandbox: Sandbox, study_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Measured:
    """fits (scale 1) × fillfactor 80/100 × 2 repetitions, 1 s warm-up + 2 s measured."""
    target = Target(study_database, sandbox.bin.exe("pgbench"), "sandbox", sandbox)
    path = tmp_path_factory.mktemp("fillfactor") / "results.sqlite"
    with Store.open(path) as store:
        run_id = FillfactorRun(make_config("quick", **SMALL), target, store).execute()  # type: ignore[arg-type]
        assert store.run(run_id).status == "done"
        return Measured(path, run_id, store.points(run_id), study_database)


def of(points: list[Point], *, rep: int, **params: Any) -> list[Point]:
    chosen = [p for p in points if all(p.params[k] == v for k, v in params.items())]
    return [p for p in chosen if p.repetition == rep]


def number(point: Point, name: str) -> float:
    value = point.metrics[name]
    assert isinstance(value, int | float), name
    return float(value)


def test_every_planned_point_is_stored(small_run: Measured) -> None:
    order = [(p.repetition, p.params["fillfactor"]) for p in small_run.points]
    assert order == [(0, 80), (0, 100), (1, 100), (1, 80)]  # reversed every other repetition
    assert {(p.params["size"], p.params["scale"]) for p in small_run.points} == {("fits", 1)}


def test_hot_share_is_higher_at_fillfactor_80(small_run: Measured) -> None:
    for rep in (0, 1):
        [low] = of(small_run.points, fillfactor=80, rep=rep)
        [full] = of(small_run.points, fillfactor=100, rep=rep)
        assert number(low, "hot_share") > number(full, "hot_share")
        assert number(low, "newpage_share") < number(full, "newpage_share")
        # The same rows at 80 % take about 100/80 of the pages.
        ratio = number(low, "table_bytes_init") / number(full, "table_bytes_init")
        assert ratio == pytest.approx(1.25, abs=0.05)
        assert number(low, "table_growth") <= number(full, "table_growth")


def test_counters_cover_exactly_the_measured_run(small_run: Measured) -> None:
    for point in small_run.points:
        m = point.metrics
        # One UPDATE of pgbench_accounts per TPC-B transaction, counted by both sources.
        assert m["update_calls"] == m["transactions"] == m["n_tup_upd"]
        assert number(point, "n_tup_hot_upd") + number(point, "n_tup_newpage_upd") <= m["n_tup_upd"]
        assert m["measured_s"] == 2
        assert m["warmup_s"] == 1
        assert number(point, "tps") == pytest.approx(number(point, "transactions") / 2, rel=0.15)
        assert 0 < number(point, "update_mean_ms") < number(point, "latency_mean_ms")
        assert number(point, "update_stddev_ms") > 0
        assert 0 < number(point, "hit_ratio") <= 1
        assert m["shared_buffers_bytes"] == 32 * MB


def test_pgbench_tables_live_in_schema_vacuumlab(small_run: Measured) -> None:
    with psycopg.connect(small_run.dsn) as conn:
        rows = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n"
            " ON n.oid = c.relnamespace WHERE c.relname LIKE 'pgbench%'"
        ).fetchall()
        assert {schema for schema, _ in rows} == {"vacuumlab"}
        assert len(rows) == 7  # four tables, three primary keys
        public = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"
        ).fetchone()
        assert public == (0,)
        options = conn.execute("SELECT reloptions FROM pg_class WHERE oid = "
                               "'vacuumlab.pgbench_accounts'::regclass").fetchone()  # fmt: skip
        assert options == (["fillfactor=80"],)  # the last point's


def test_shared_buffers_was_set_for_the_run_and_put_back(
    small_run: Measured, sandbox: Sandbox
) -> None:
    assert all(p.metrics["shared_buffers_bytes"] == 32 * MB for p in small_run.points)
    assert "shared_buffers" not in (sandbox.pgdata / "postgresql.auto.conf").read_text()
    with psycopg.connect(sandbox.dsn) as conn:
        assert conn.execute("SHOW shared_buffers").fetchone() == ("128MB",)


def between(page: str, start: str, end: str) -> str:
    """The page after ``start`` up to the first ``end``."""
    at = page.index(start) + len(start)
    return page[at : page.index(end, at)]


def test_report_figures_come_from_the_store(small_run: Measured, tmp_path: Path) -> None:
    with Store.open(small_run.store) as store:
        page = render_fillfactor_report(store, small_run.run_id, tmp_path).read_text()

    def values(ff: int, name: str) -> list[float]:
        return [number(p, name) for p in small_run.points if p.params["fillfactor"] == ff]

    def median(ff: int, name: str) -> float:
        return statistics.median(values(ff, name))

    seed = between(page, 'id="seed-table"', "</table>")
    for ff in (80, 100):
        cell = f"{median(ff, 'update_mean_ms'):.3g} ({median(ff, 'tps'):,.0f})"
        assert f'<td class="num">{cell}</td>' in seed
    effects = between(page, 'id="table-table"', "</table>")
    assert f'<td class="num">{median(80, "hot_share") * 100:.1f} %</td>' in effects
    # TPS, not the HOT share: a share of exactly 1.0 in both repetitions makes scipy warn.
    p = stats.ttest_ind(values(80, "tps"), values(100, "tps"), equal_var=False).pvalue
    row = between(page, '<td class="num">80 vs 100</td><td class="num">TPS</td>', "</tr>")
    assert f">{'&lt; 0.001' if p < 0.001 else f'{p:.3f}'}<" in row
    line = html_lib.unescape(between(page, 'id="recommendation">', "</p>"))
    gain = median(80, "hot_share") - median(100, "hot_share")
    # "gives …" or, should 80 also be significantly faster on this run, "is faster … with …"
    assert line.startswith("On this workload — fits in memory: fillfactor 80 ")
    assert f"{gain * 100:+.1f} points of HOT updates" in line
    print(line)  # what a real small run recommends, for the record (pytest -s)


def test_named_server_leaves_nothing_behind(
    sandbox: Sandbox, embedded_database: str, tmp_path: Path
) -> None:
    with psycopg.connect(embedded_database, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.users_own (id int)")
    target = Target(embedded_database, sandbox.bin.exe("pgbench"), "server", None, False)
    config = make_config("quick", target="server", sizes=("fits",), fillfactors=(100,),
                         seconds=2, warmup=1, repeat=1)  # fmt: skip
    assert config.shared_buffers is None  # the server's own
    with Store.open(tmp_path / "r.sqlite") as store:
        run_id = FillfactorRun(config, target, store).execute()
        [point] = store.points(run_id)
    assert point.params["scale"] == 4  # half of the server's 128MB
    assert number(point, "update_calls") > 0  # pg_stat_statements was there for the run
    with psycopg.connect(embedded_database) as conn:
        left = conn.execute(
            "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = 'vacuumlab'),"
            " (SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'),"
            " (SELECT count(*) FROM pg_class WHERE relname = 'users_own')"
        ).fetchone()
    assert left == (0, 0, 1)


def test_named_server_refuses_to_set_shared_buffers(
    sandbox: Sandbox, embedded_database: str, tmp_path: Path
) -> None:
    target = Target(embedded_database, sandbox.bin.exe("pgbench"), "server", None, False)
    config = make_config("quick", target="server", shared_buffers="64MB")
    with Store.open(tmp_path / "r.sqlite") as store:
        with pytest.raises(VacuumlabError, match="restarts only its sandbox") as info:
            FillfactorRun(config, target, store).execute()
        assert store.runs() == []  # refused before anything ran
    assert "\n" not in str(info.value)


class InterruptAfterFirst(Silent):
    def point_finished(self, label: str, metrics: Mapping[str, Any]) -> None:
        raise Interrupted("SIGINT")


def test_resume_measures_only_what_is_missing(sandbox: Sandbox, tmp_path: Path) -> None:
    """No warm-up, and shared_buffers as the sandbox already has it (no restart)."""
    config = make_config("quick", sizes=("fits",), fillfactors=(90, 100), seconds=1, warmup=0,
                         repeat=1, shared_buffers="128MB")  # fmt: skip
    target = Target.of_sandbox(sandbox)
    with Store.open(tmp_path / "r.sqlite") as store:
        with pytest.raises(Interrupted):
            FillfactorRun(config, target, store, InterruptAfterFirst()).execute()
        [first] = store.points(1)
        assert store.run(1).status == "interrupted"
        params = FillfactorConfig.from_params(store.run(1).params)
        assert params == config
        FillfactorRun(params, target, store, run_id=1).execute()
        points = store.points(1)
    assert [p.params["fillfactor"] for p in points] == [90, 100]
    assert points[0] == first
    assert points[1].metrics["warmup_s"] == 0


# -- pure parts ------------------------------------------------------------------------------


def moments(values: np.ndarray) -> Moments:
    return Moments(len(values), float(values.sum()), float(((values - values.mean()) ** 2).sum()))


def test_statement_delta_is_exact_without_a_reset() -> None:
    """pg_stat_statements keeps calls, total and M2 (Welford); the difference of two
    snapshots gives the mean and the population stddev of the calls in between."""
    rng = np.random.default_rng(7)
    warmup, window, other = (
        rng.gamma(2.0, 0.01, 500),
        rng.gamma(3.0, 0.02, 900),
        rng.gamma(1.0, 1.0, 50),
    )
    before = {(10, 1, True): moments(warmup)}
    after = {(10, 1, True): moments(np.concatenate([warmup, window])),
             (10, 2, True): moments(other)}  # fmt: skip
    delta = moments_delta(before, after)
    both = np.concatenate([window, other])
    assert delta.calls == 950
    assert delta.mean_ms == pytest.approx(both.mean(), rel=1e-9)
    assert delta.stddev_ms == pytest.approx(both.std(), rel=1e-9)
    alone = moments_delta(before, {(10, 1, True): after[(10, 1, True)]})
    assert alone.stddev_ms == pytest.approx(window.std(), rel=1e-9)
    assert moments_delta(after, after).calls == 0
    assert moments_delta(after, after).mean_ms is None


def test_pgbench_commands_work_in_schema_vacuumlab(tmp_path: Path) -> None:
    dsn = "postgresql://u@h:5/db?options=-c%20work_mem%3D64MB"
    assert conninfo_to_dict(study_dsn(dsn)) == {
        "user": "u", "host": "h", "port": "5", "dbname": "db",
        "options": "-c work_mem=64MB -c search_path=vacuumlab",
    }  # fmt: skip
    assert conninfo_to_dict(study_dsn("dbname=x")) == {
        "dbname": "x",
        "options": "-c search_path=vacuumlab",
    }
    init = init_command(tmp_path / "pgbench", "dbname=x", 17, 80)
    assert init[1:5] == ["--initialize", "--quiet", "--scale=17", "--fillfactor=80"]
    load = load_command(tmp_path / "pgbench", "dbname=x", 2, 1, 40)
    assert load[1:5] == ["--no-vacuum", "--client=2", "--jobs=1", "--time=40"]
    assert parse_transactions(PGBENCH_OUTPUT) == 22296
    assert parse_latency(PGBENCH_OUTPUT) == 0.897
    assert parse_transactions("no summary") is None


def test_config_round_trips_and_is_validated() -> None:
    config = make_config("paper", fillfactors=(90, 100), clients=1, jobs=4)
    assert FillfactorConfig.from_params(config.params()) == config
    assert config.sizes == ("fits", "2x", "10x")
    assert (config.repeat, config.jobs, config.shared_buffers) == (5, 1, "256MB")
    assert describe(make_config()) == (
        "sizes fits/2x of shared_buffers 128MB × fillfactor 70/80/90/100 × 2 repetitions, "
        "45 s each (5 s warm-up), 2 clients"
    )
    for bad, message in (
        ({"fillfactors": (5,)}, "between 10 and 100"),
        ({"fillfactors": (101, 90)}, "between 10 and 100"),
        ({"sizes": ("huge",)}, "sizes are fits, 2x, 10x, not huge"),
        ({"fillfactors": (90, 90)}, "must not repeat"),
        ({"seconds": 5, "warmup": 5}, "warm-up"),
        ({"repeat": 0}, "at least 1"),
        ({"shared_buffers": "1MB"}, "too small"),
        ({"shared_buffers": "lots"}, "takes a number"),
    ):
        with pytest.raises(VacuumlabError, match=message):
            make_config("quick", **bad)
    with pytest.raises(VacuumlabError, match="unknown preset"):
        make_config("huge")
