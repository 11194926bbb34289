"""``vacuumlab compare``: runs of one study side by side, refused when their parameters differ;
its p-values adjusted across the metrics of a comparison (Benjamini–Hochberg); what changed
between the runs' PostgreSQL majors; and a cost-driver matrix on the embedded 18 against a
sandbox of the machine's PostgreSQL 15."""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from helpers.cli import run_cli
from vacuumlab.errors import VacuumlabError
from vacuumlab.model.versions import CHANGES, changes_between, major_of
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.pg.target import Target
from vacuumlab.records.cost_driver import CostDriverConfig
from vacuumlab.report.compare import (
    Comparison,
    MetricRow,
    Side,
    compare,
    to_html,
    to_json,
    to_markdown,
    verdict_line,
)
from vacuumlab.stats.significance import paired
from vacuumlab.store import Store
from vacuumlab.studies.cost_driver import CostDriverRun

#: The machine's PostgreSQL 15 (Debian's layout), or where VACUUMLAB_TEST_PG15_BIN says.
PG15_BIN = Path(os.environ.get("VACUUMLAB_TEST_PG15_BIN", "/usr/lib/postgresql/15/bin"))
MATRIX = dict(rows=20_000, dead_pcts=(10, 50), indexes=(0, 1), distributions=("compact",), repeat=1)


def test_runs_with_other_parameters_are_refused(store: Store) -> None:
    a = store.create_run("cost-driver", {"rows": 20_000, "target": "sandbox"},
                         server_version="18.6", settings={})  # fmt: skip
    b = store.create_run("cost-driver", {"rows": 50_000, "target": "server"},
                         server_version="15.20", settings={})  # fmt: skip
    c = store.create_run("toast", {"rows": 20_000}, server_version="18.6", settings={})
    side = [Side(str(i), store.run(i), []) for i in (a, b, c)]
    with pytest.raises(VacuumlabError, match=r"differ in rows \(rows: 20000 against 50000\)"):
        compare(side[:2])
    with pytest.raises(VacuumlabError, match="compare runs of one study"):
        compare([side[0], side[2]])
    result = run_cli("compare", str(a), str(b), "--store", str(store.path), "--format", "md")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_shift_beyond_the_scatter_is_real_and_noise_is_not(store: Store) -> None:
    """The paired test: a 20 % longer duration at every point is real; a difference that
    changes sign from point to point is noise; equal counts are identical."""
    scale = [1.0, 2.0, 4.0, 8.0, 16.0]
    assert paired([v * 1.2 for v in scale], scale).verdict == "significant"
    jitter = [1.05, 1.9, 4.3, 7.6, 16.4]
    assert paired(jitter, scale).verdict == "within noise"
    assert paired(scale, scale).text == "identical at every point"
    when = datetime.now(UTC)
    for version, factor in (("18.6", 1.0), ("15.20", 1.5)):
        run = store.create_run("cost-driver", {"rows": 1}, server_version=version, settings={})
        for i, v in enumerate(scale):
            metrics = {"duration_s": v * factor, "dead_tuples": 100 * i}
            store.record_point(run, {"i": i}, 0, metrics, started_at=when, ended_at=when)
    c = compare([Side(str(i), store.run(i), store.points(i)) for i in (1, 2)])
    real = {r.metric: r.real[1] for r in c.rows}
    assert real == {"duration_s": True, "dead_tuples": False}
    assert [d.what for d in c.differences] == ["server"]


@pytest.mark.slow
@pytest.mark.skipif(not PG15_BIN.is_dir(), reason=f"no PostgreSQL 15 in {PG15_BIN}")
def test_cost_driver_on_18_and_15_side_by_side(
    sandbox: Sandbox, sandbox_root: Path, tmp_path: Path
) -> None:
    """The same matrix on the embedded 18 and on a sandbox of the machine's 15 (its bin
    directory, as ``--pg-bin`` gives it: the system server's own autovacuum may be off)."""
    config = CostDriverConfig.from_preset("quick", **MATRIX)  # type: ignore[arg-type]
    on_18, on_15 = tmp_path / "18.sqlite", tmp_path / "15.sqlite"
    with Store.open(on_18) as store:
        CostDriverRun(config, Target.of_sandbox(sandbox), store).execute()
    with (
        Store.open(on_15) as store,
        Sandbox.start(sandbox_root / "pg15", pg_bin=PG15_BIN) as fifteen,
    ):
        CostDriverRun(config, Target.of_sandbox(fifteen), store).execute()
    runs = [f"{on_18}:1", f"{on_15}:1"]
    md = run_cli("compare", *runs, "--format", "md")
    assert md.returncode == 0, md.stderr
    data = json.loads(run_cli("compare", *runs, "--format", "json").stdout)
    [server_row] = [d for d in data["differences"] if d["what"] == "server"]
    assert server_row["values"][0].startswith("PostgreSQL 18.")
    assert server_row["values"][1].startswith("PostgreSQL 15.")
    assert data["shared_points"] == 4
    dead = next(m for m in data["metrics"] if m["metric"] == "dead_tuples")
    assert dead["real"] == [False, False]  # the same rows die on both
    assert "| server | PostgreSQL 18." in md.stdout
    html = run_cli("compare", *runs, "--output", str(tmp_path / "c.html"))
    assert html.returncode == 0, html.stderr
    assert "side by side" in (tmp_path / "c.html").read_text(encoding="utf-8")


# -- many metrics at once: Benjamini–Hochberg --------------------------------------------------

#: The points every synthetic run measures: durations from 1 s to 32 s.
SCALE = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
#: A change of the logarithm at each point whose mean is 0: no difference at all.
ZERO_MEAN = [0.05, -0.04, 0.03, -0.05, 0.02, -0.01]
#: Null metrics: ZERO_MEAN nudged a little, so each has its own p-value, all far from 5 %.
NULLS = {f"null_{k:02}": [d + 0.001 * k for d in ZERO_MEAN] for k in range(20)}
#: A small change that one test alone calls significant (p ≈ 0.03).
MARGINAL = [0.10, 0.05, 0.12, 0.02, 0.08, -0.01]
#: A large change, nearly the same at every point.
LARGE = [0.40, 0.42, 0.38, 0.41, 0.39, 0.43]


def record_runs(
    store: Store,
    changes: dict[str, list[float]],
    versions: tuple[str, ...] = ("18.6", "18.6"),
    study: str = "cost-driver",
    more: dict[str, list[float]] | None = None,
) -> list[Side]:
    """A first run measuring SCALE for every metric, and runs after it where each metric is
    SCALE × e^change at each point (the third run, if any, uses ``more``), plus one metric
    (``count``) the same in every run."""
    when = datetime.now(UTC)
    columns = [dict.fromkeys(changes, [0.0] * len(SCALE)), changes, more or {}][: len(versions)]
    ids = []
    for version, column in zip(versions, columns, strict=True):
        run = store.create_run(study, {"rows": 1}, server_version=version, settings={})
        for i, v in enumerate(SCALE):
            metrics = {name: v * math.exp(d[i]) for name, d in column.items()}
            store.record_point(run, {"i": i}, 0, metrics | {"count": 7 * i}, started_at=when,
                               ended_at=when)  # fmt: skip
        ids.append(run)
    return [Side(str(i), store.run(i), store.points(i)) for i in ids]


def bh_by_hand(ps: list[float]) -> list[float]:
    """Benjamini–Hochberg by the step-up rule: sorted ascending, the p of rank i becomes
    the smallest of p(j) × m / j over the ranks j ≥ i, at most 1."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted, running = [0.0] * m, 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, ps[i] * m / rank)
        adjusted[i] = running
    return adjusted


def row(c: Comparison, metric: str) -> MetricRow:
    return next(r for r in c.rows if r.metric == metric)


def test_a_marginal_p_among_many_null_metrics_is_not_real(store: Store) -> None:
    """Alone, the marginal change passes the test at 5 %; adjusted across the 21 metrics
    tested with it, it does not, and the comparison does not call it real."""
    c = compare(record_runs(store, NULLS | {"marginal": MARGINAL}))
    marginal = row(c, "marginal")
    raw, adjusted = marginal.p_values[1], marginal.p_adjusted[1]
    assert raw is not None
    assert raw < 0.05
    alone = paired([v * math.exp(d) for v, d in zip(SCALE, MARGINAL, strict=True)], SCALE)
    assert alone.verdict == "significant"
    assert adjusted is not None
    assert adjusted >= 0.05
    assert marginal.real == [False, False]
    assert marginal.verdicts[1] == "within noise after adjustment (raw p below 5 %)"
    assert not any(r.real[1] for r in c.rows)
    assert c.tested == [0, 21]  # count is identical at every point: no p-value
    assert verdict_line(c).startswith("No metric differs")


def test_a_large_consistent_shift_stays_real(store: Store) -> None:
    c = compare(record_runs(store, NULLS | {"marginal": MARGINAL, "large": LARGE}))
    large = row(c, "large")
    adjusted = large.p_adjusted[1]
    assert adjusted is not None
    assert adjusted < 0.001
    assert large.real == [False, True]
    assert large.verdicts[1] == "significant at 5 % after adjustment"
    assert [r.metric for r in c.rows if any(r.real)] == ["large"]
    assert verdict_line(c).endswith("(p-values adjusted): large")


def test_adjusted_p_is_benjamini_hochberg_per_comparison(store: Store) -> None:
    """Each later run's p-values are adjusted among themselves, and match the step-up rule
    worked by hand; a metric without a p-value stays without one and is not counted."""
    first = NULLS | {"marginal": MARGINAL, "large": LARGE}
    second = {name: [d * 2 + 0.02 for d in change] for name, change in first.items()}
    c = compare(record_runs(store, first, ("18.6", "18.6", "18.6"), more=second))
    for column in (1, 2):
        tested = [r for r in c.rows if r.p_values[column] is not None]
        assert len(tested) == len(first) == c.tested[column]
        raw = [r.p_values[column] for r in tested]
        expected = bh_by_hand([p for p in raw if p is not None])
        assert [r.p_adjusted[column] for r in tested] == pytest.approx(expected, rel=1e-12)
        for r in tested:
            assert r.real[column] == (expected[tested.index(r)] < 0.05)
    count = row(c, "count")
    assert count.p_values == count.p_adjusted == [None, None, None]
    assert count.verdicts[1:] == ["identical at every point"] * 2


def test_markdown_json_and_html_show_both_p_values(store: Store, tmp_path: Path) -> None:
    c = compare(record_runs(store, NULLS | {"marginal": MARGINAL, "large": LARGE}))
    marginal = row(c, "marginal")
    raw, adjusted = marginal.p_values[1], marginal.p_adjusted[1]
    assert raw is not None
    assert adjusted is not None
    data = json.loads(to_json(c))
    [as_json] = [m for m in data["metrics"] if m["metric"] == "marginal"]
    assert as_json["p_values"] == [None, raw]
    assert as_json["p_adjusted"] == [None, adjusted]
    assert as_json["real"] == [False, False]
    assert data["tested"] == [0, 22]
    md = to_markdown(c)
    assert "| p | adjusted p | verdict |" in md
    assert f"| {raw:.3f} | {adjusted:.3f} | within noise after adjustment" in md
    assert "| < 0.001 | < 0.001 | **real**: significant at 5 % after adjustment |" in md
    assert "adjusted across the 22 metrics tested in this comparison (Benjamini–Hochberg)" in md
    assert "at most about 5 % are expected to be chance" in md
    assert "one in twenty" not in md
    html = to_html(c, tmp_path / "c.html").read_text(encoding="utf-8")
    assert "<th>p</th><th>adjusted p</th>" in html
    assert f'<td class="num">{raw:.3f}</td><td class="num">{adjusted:.3f}</td>' in html
    assert "Benjamini–Hochberg" in html
    assert "one in twenty" not in html


# -- versions side by side ---------------------------------------------------------------------

ON_16 = "PostgreSQL 16.14 on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit"


def test_major_of_reads_every_recorded_form() -> None:
    assert major_of(ON_16) == 16
    assert major_of("18.6") == 18
    assert major_of("18beta1") == 18
    assert major_of("15") == 15
    assert major_of("unknown") is None


def test_runs_on_two_majors_list_what_changed_between_them(store: Store, tmp_path: Path) -> None:
    c = compare(record_runs(store, NULLS, (ON_16, "18.6")))
    expected = [x for x in CHANGES if 16 < x.since <= 18 and "cost-driver" in x.studies]
    assert [x.since for x in expected] == [17, 18, 18]
    md = to_markdown(c)
    assert "run 1: PostgreSQL 16.14 · run 2: PostgreSQL 18.6" in md
    section = md[md.index("## What changed between PostgreSQL 16 and 18") : md.index("## Metrics")]
    assert "Run 1 ran on PostgreSQL 16, run 2 on PostgreSQL 18." in section
    assert [line for line in section.splitlines() if line.startswith("- ")] == [
        f"- {x.since}: {x.what}" for x in expected
    ]
    data = json.loads(to_json(c))
    [versions] = data["version_changes"]
    assert versions["majors"] == [16, 18]
    assert versions["title"] == "What changed between PostgreSQL 16 and 18"
    assert versions["changes"] == [{"since": x.since, "what": x.what} for x in expected]
    html = to_html(c, tmp_path / "c.html").read_text(encoding="utf-8")
    assert '<section id="versions">' in html
    assert "<h2>What changed between PostgreSQL 16 and 18</h2>" in html
    assert html.count("<li>17: ") == 1
    assert html.count("<li>18: ") == 2
    assert "<li>16: " not in html
    assert 'id="servers">run 1: PostgreSQL 16.14 · run 2: PostgreSQL 18.6</p>' in html


def test_runs_on_one_major_have_no_versions_section(store: Store, tmp_path: Path) -> None:
    c = compare(record_runs(store, NULLS, ("PostgreSQL 18.4 on x86_64", "18.6")))
    assert c.version_changes == []
    md = to_markdown(c)
    assert "What changed between" not in md
    assert "run 1: PostgreSQL 18.4 · run 2: PostgreSQL 18.6" in md
    assert json.loads(to_json(c))["version_changes"] == []
    html = to_html(c, tmp_path / "c.html").read_text(encoding="utf-8")
    assert 'id="versions"' not in html
    assert "What changed between" not in html


def test_a_study_no_tracked_change_bears_on_says_so(store: Store) -> None:
    """The section names the majors even when none of the changes between them can move the
    study's figures; the newer run first is the same pair of majors."""
    assert changes_between(18, 16, study="fillfactor") == []
    c = compare(record_runs(store, NULLS, ("18.6", ON_16), study="fillfactor"))
    md = to_markdown(c)
    assert "## What changed between PostgreSQL 16 and 18" in md
    assert "Run 1 ran on PostgreSQL 18, run 2 on PostgreSQL 16. No change vacuumlab" in md


def test_the_cli_prints_both_p_values_and_the_versions(store: Store) -> None:
    record_runs(store, NULLS | {"large": LARGE}, (ON_16, "18.6"))
    result = run_cli("compare", "1", "2", "--store", str(store.path), "--format", "md")
    assert result.returncode == 0, result.stderr
    assert "## What changed between PostgreSQL 16 and 18" in result.stdout
    assert "| p | adjusted p | verdict |" in result.stdout


def runs_in_repetitions(store: Store, shifts: list[list[float]]) -> list[Side]:
    """Runs whose every point is SCALE × e^shift of its repetition: ``shifts`` gives each
    run's repetitions (a machine that moved while the run went on), 'steady' a metric that
    moves with the run alone (e^0.3 in the second), 'flat' one no run changes."""
    when = datetime.now(UTC)
    ids = []
    for n, repetitions in enumerate(shifts):
        run = store.create_run("cost-driver", {"rows": 1}, server_version="18.6", settings={})
        for rep, shift in enumerate(repetitions):
            for i, v in enumerate(SCALE):
                wobble = 1 + 0.002 * ((i + rep + n) % 3)  # the points scatter a little
                metrics = {"time": v * math.exp(shift) * wobble, "steady": v * math.exp(0.3 * n),
                           "flat": v}  # fmt: skip
                store.record_point(run, {"i": i}, rep, metrics, started_at=when, ended_at=when)
        ids.append(run)
    return [Side(str(i), store.run(i), store.points(i)) for i in ids]


def test_a_shift_no_larger_than_the_runs_drift_is_not_real(store: Store) -> None:
    """The second run is 4 % slower at every point, so the paired test calls it real; but
    its own repetitions moved by as much (0 %, −4 %, +4 %... around +4 %): the machine's
    drift, not the target's. A difference the repetitions agree on stays real."""
    c = compare(runs_in_repetitions(store, [[0.0, 0.005, -0.005], [0.0, 0.04, 0.08]]))
    time = row(c, "time")
    assert time.p_adjusted[1] is not None
    assert time.p_adjusted[1] < 0.05  # the points alone would call it real
    assert not time.real[1]
    assert "drift" in time.verdicts[1]
    assert row(c, "steady").real[1]  # the same at every point and repetition: real
    assert not row(c, "flat").real[1]
    assert c.drift_measured
    assert "larger than the runs' drift" in " ".join(to_markdown(c).split())


def test_one_repetition_cannot_measure_the_drift_and_says_so(store: Store) -> None:
    c = compare(runs_in_repetitions(store, [[0.0], [0.04]]))
    assert row(c, "time").real[1]  # the points alone decide
    assert not c.drift_measured
    assert "has no measure of its drift" in to_markdown(c)
    assert json.loads(to_json(c))["drift_measured"] is False
