"""The fillfactor HTML report, rendered from synthetic runs in a real results store (no server).

Expected figures are computed here with numpy and scipy from the fixture's own values, not
with the report's aggregation code.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from matplotlib.image import imread
from scipy import stats

from helpers.cost_driver import make_cost_driver_run
from helpers.fillfactor import (
    SHARED_BUFFERS,
    XSS_TAG,
    make_fillfactor_run,
    synthetic_metrics,
)
from helpers.report import T0, XSS
from vacuumlab.records.fillfactor_spec import point_params
from vacuumlab.report.cost_driver import render_cost_driver_report
from vacuumlab.report.fillfactor import render_fillfactor_report
from vacuumlab.store import Store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHART_IDS = ["chart-hot", "chart-growth", "chart-performance"]
PNGS = ["growth.png", "hot.png", "performance.png"]
LABELS = {"fits": "fits in memory", "2x": "2× memory", "10x": "10× memory"}


#: The main synthetic run: fillfactor 90 is 5 % faster at 2× memory, nothing else differs.
FASTER = {("2x", 90): 0.05}


@dataclass(frozen=True)
class Rendered:
    store: Path
    run_id: int
    out: Path
    html: str


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """The main run, rendered once for the tests that only read it (a render takes ~2 s)."""
    directory = tmp_path_factory.mktemp("fillfactor-report")
    with Store.open(directory / "r.sqlite") as store:
        run_id = make_fillfactor_run(store, faster=FASTER)
        html = render(store, run_id, directory / "out")
    return Rendered(directory / "r.sqlite", run_id, directory / "out", html)


def render(store: Store, run_id: int, out: Path) -> str:
    path = render_fillfactor_report(store, run_id, out)
    assert path == out / "report.html"
    return path.read_text(encoding="utf-8")


def element(html: str, marker: str, end: str) -> str:
    start = html.index(marker)
    return html[start : html.index(end, start)]


def table(html: str, table_id: str) -> str:
    return element(html, f'id="{table_id}"', "</table>")


def row_of(html: str, *heads: str) -> str:
    """The table row whose leading cells are `heads`."""
    cells = "".join(
        f"<td>{h}</td>" if i == 0 else f'<td class="num">{h}</td>' for i, h in enumerate(heads)
    )
    return element(html, f"<tr>{cells}", "</tr>")


def values(metric: str, size: str, ff: int, faster=FASTER) -> list[float]:
    """The fixture's values of one metric over the three repetitions."""
    return [float(synthetic_metrics(size, ff, r, faster)[metric]) for r in range(3)]  # type: ignore[arg-type]


def median(metric: str, size: str, ff: int, faster=FASTER) -> float:
    return float(np.median(values(metric, size, ff, faster)))


def test_every_chart_once_with_caption_and_png(rendered: Rendered) -> None:
    html = rendered.html
    assert re.findall(r'<svg id="(chart-[\w-]+)"', html) == CHART_IDS
    for chart_id in CHART_IDS:
        assert html.count(f'id="{chart_id}-caption"') == 1
    for png in PNGS:
        assert f'<a href="{png}">{png}</a>' in html
    for anchor in ("run", "memory", "seed", "numbers", "significance", "method", "advice"):
        assert html.count(f'<section id="{anchor}"') == 1
    # The report ends with the recommendation.
    assert html.rindex("<section") == html.index('<section id="advice">')


def test_pngs_exist_are_valid_and_not_blank(rendered: Rendered) -> None:
    out = rendered.out
    assert sorted(p.name for p in out.glob("*.png")) == PNGS
    for name in PNGS:
        assert (out / name).read_bytes().startswith(PNG_MAGIC), name
        pixels = imread(out / name)
        assert pixels.shape[0] > 300, name
        assert pixels.shape[1] > 800, name
        assert float(np.var(pixels)) > 0, name


def test_seed_table_beside_the_published_one(rendered: Rendered) -> None:
    html = rendered.html
    seed = table(html, "seed-table")
    assert re.findall(r'<th class="num">(FF=\d+)</th>', seed) == [
        "FF=100", "FF=90", "FF=80", "FF=70"
    ]  # fmt: skip
    for size in ("fits", "2x"):
        row = element(seed, f"<tr><td>{LABELS[size]}</td>", "</tr>")
        expected = [
            f"{median('update_mean_ms', size, ff):.3g} ({median('tps', size, ff):,.0f})"
            for ff in (100, 90, 80, 70)
        ]
        assert re.findall(r'<td class="num">([^<]*)</td>', row) == expected
    assert "<td>10× memory</td>" not in seed  # not measured here
    published = table(html, "published-table")
    for line in ("5.01 (374)", "4.80 (389)", "4.89 (382)", "4.98 (376)", "5.31 (363)",
                 "5.42 (353)", "6.45 (249)", "5.67 (282)", "5.61 (284)", "5.72 (279)"):  # fmt: skip
        assert f'<td class="num">{line}</td>' in published
    assert "PostgreSQL 12.2" in published


def test_significance_matches_scipy_on_the_stored_values(rendered: Rendered) -> None:
    sig = table(rendered.html, "significance-table")
    assert sig.count("<tr><td>") == 2 * 3 * 3  # sizes × fillfactors below 100 × metrics
    for size, ff, metric, label in (
        ("2x", 90, "tps", "TPS"),
        ("2x", 90, "update_mean_ms", "UPDATE mean (ms)"),
        ("fits", 80, "hot_share", "HOT share"),
        ("fits", 90, "tps", "TPS"),
    ):
        a, b = values(metric, size, ff), values(metric, size, 100)
        p = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
        row = row_of(sig, LABELS[size], f"{ff} vs 100", label)
        shown = "&lt; 0.001" if p < 0.001 else f"{p:.3f}"
        assert f'<td class="num">{shown}</td>' in row
        verdict = "significant at 5 %" if p < 0.05 else "within noise"
        assert f'<td class="num">{verdict}</td>' in row
    assert "significant at 5 %" in row_of(sig, LABELS["2x"], "90 vs 100", "TPS")
    assert "within noise" in row_of(sig, LABELS["fits"], "90 vs 100", "TPS")


def test_single_repetition_is_not_testable(store: Store, tmp_path: Path) -> None:
    html = render(store, make_fillfactor_run(store, repeat=1), tmp_path / "out")
    sig = table(html, "significance-table")
    assert sig.count("not testable (needs --repeat ≥ 2)") == sig.count("<tr><td>") == 18
    line = element(html, 'id="recommendation"', "</p>")
    assert "not testable (needs --repeat ≥ 2)" in line


def pct(value: float) -> str:
    return f"{value * 100:+.1f} %"


def hot_verdict(size: str, ff: int) -> str:
    p = stats.ttest_ind(values("hot_share", size, ff), values("hot_share", size, 100),
                        equal_var=False).pvalue  # fmt: skip
    return "significant at 5 %" if p < 0.05 else "within noise"


def test_recommendation_is_computed_from_the_data(rendered: Rendered) -> None:
    line = element(rendered.html, 'id="recommendation"', "</p>")
    m = median

    # 2×: fillfactor 90 is significantly faster (the fixture's +5 %).
    tps = m("tps", "2x", 90) / m("tps", "2x", 100) - 1
    update = m("update_mean_ms", "2x", 90) / m("update_mean_ms", "2x", 100) - 1
    hot = m("hot_share", "2x", 90) - m("hot_share", "2x", 100)
    table_cost = m("table_bytes_end", "2x", 90) / m("table_bytes_end", "2x", 100) - 1
    assert (
        f"2× memory: fillfactor 90 is faster than 100, TPS {pct(tps)} and UPDATE time "
        f"{pct(update)}, both significant at 5 %, with {hot * 100:+.1f} points of HOT updates "
        f"({hot_verdict('2x', 90)}) for {pct(table_cost)} table size"
    ) in line
    # Fits: no speed difference; the highest fillfactor with ≥ 90 % of the best HOT gain.
    gains = {ff: m("hot_share", "fits", ff) - m("hot_share", "fits", 100) for ff in (90, 80, 70)}
    chosen = max(ff for ff, g in gains.items() if g >= 0.9 * max(gains.values()))
    cost = m("table_bytes_end", "fits", chosen) / m("table_bytes_end", "fits", 100) - 1
    assert (
        f"fits in memory: fillfactor {chosen} gives {gains[chosen] * 100:+.1f} points of HOT "
        f"updates ({hot_verdict('fits', chosen)}) for {pct(cost)} table size; against 100, TPS"
    ) in line
    assert line.startswith('id="recommendation">On this workload — fits in memory:')


def test_recommendation_follows_the_data(rendered: Rendered, store: Store, tmp_path: Path) -> None:
    """Change the data and the line changes: the gain moves from 2× to fits."""
    moved = render(store, make_fillfactor_run(store, faster={("fits", 80): 0.06}), tmp_path)
    before = element(rendered.html, 'id="recommendation"', "</p>")
    after = element(moved, 'id="recommendation"', "</p>")
    assert "2× memory: fillfactor 90 is faster" in before
    assert "fits in memory: fillfactor 80 is faster" not in before
    assert "fits in memory: fillfactor 80 is faster than 100" in after
    assert "2× memory: fillfactor 90 is faster" not in after


def test_tables_show_the_stored_medians_and_means(rendered: Rendered) -> None:
    html = rendered.html
    effects = row_of(table(html, "table-table"), LABELS["fits"], "4", "80", "3")
    assert f"{median('hot_share', 'fits', 80) * 100:.1f} %" in effects
    assert f"{median('table_bytes_init', 'fits', 80) / 2**20:,.1f} MB" in effects
    assert f"{median('hit_ratio', 'fits', 80) * 100:.2f} %" in effects
    speed = row_of(table(html, "performance-table"), LABELS["2x"], "17", "100", "3")
    tps = values("tps", "2x", 100)
    half = stats.t.ppf(0.975, 2) * np.std(tps, ddof=1) / np.sqrt(3)
    mean = float(np.mean(tps))
    assert f'{mean:,.0f}<span class="ci">[{mean - half:,.0f}, {mean + half:,.0f}]</span>' in speed


def test_memory_note_says_how_memory_is_mapped(rendered: Rendered) -> None:
    note = element(rendered.html, 'id="memory-note"', "</div>")
    loaded = median("table_bytes_init", "2x", 100) + median("index_bytes_init", "2x", 100)
    assert "mapped to shared_buffers, 128.0 MB in this run" in note
    assert "2× memory: pgbench scale 17, aimed at 2× shared_buffers" in note
    assert f"{loaded / 2**20:,.1f} MB, {loaded / SHARED_BUFFERS:.2f}× shared_buffers" in note
    assert "16.0 GiB of RAM" in note
    assert "the OS page cache holds all of it" in note
    assert "not RAM" in note


def test_strings_from_the_store_are_escaped(store: Store, tmp_path: Path) -> None:
    run_id = make_fillfactor_run(store, with_xss=True)
    odd = point_params("fits", 80, 4) | {"size": XSS}
    store.record_point(run_id, odd, 0, {"tps": 1.0}, started_at=T0, ended_at=T0)
    html = render(store, run_id, tmp_path / "out")
    assert "<script" not in html.lower()
    assert XSS not in html
    escaped_tag = XSS_TAG.replace("<", "&lt;").replace(">", "&gt;")
    assert f"64-bit {escaped_tag}</td>" in html
    escaped = f"{escaped_tag} &#34;quotes&#34; &amp; ampersands"
    assert html.count(escaped) >= 3  # target, host name, note
    assert "1 point(s) with a missing or unknown size" in html


def test_html_is_self_contained_without_javascript(rendered: Rendered) -> None:
    html = rendered.html
    lowered = html.lower()
    assert "<script" not in lowered
    assert not re.search(r"\son[a-z]+\s*=", lowered)
    assert " src=" not in lowered
    assert "<link" not in lowered
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    for ref in re.findall(r'(?:xlink:href="#|url\(#)([^")]+)', html):
        assert ref in ids


@pytest.mark.parametrize("status", ["interrupted", "running"])
def test_unfinished_run_renders_with_a_notice(
    store: Store, tmp_path: Path, status: Literal["interrupted", "failed", "running"]
) -> None:
    run_id = make_fillfactor_run(store, status=status, recorded=5)
    html = render(store, run_id, tmp_path / "out")
    notice = element(html, 'id="incomplete-notice"', "</div>")
    assert "only the points recorded" in notice
    missing = "; ".join(f"2× memory, fillfactor {ff}" for ff in (100, 90, 80))
    assert f"Not measured: {missing}." in notice
    assert f'<span class="status incomplete" id="run-status">{status}</span>' in html
    assert "<td>15 of 24</td>" in html
    assert html.count("<svg") == 3


def test_missing_repetitions_are_reported(store: Store, tmp_path: Path) -> None:
    run_id = make_fillfactor_run(store, recorded=0, status="interrupted")
    metrics = synthetic_metrics("fits", 100, 0, {})
    store.record_point(run_id, point_params("fits", 100, 4), 0, metrics, started_at=T0,
                       ended_at=T0)  # fmt: skip
    html = render(store, run_id, tmp_path / "out")
    notice = element(html, 'id="incomplete-notice"', "</div>")
    assert "Missing repetitions: fits in memory, fillfactor 100: 1 of 3." in notice
    assert "nothing measured to compare" in element(html, 'id="recommendation"', "</p>")


def test_finished_run_has_no_notice(rendered: Rendered) -> None:
    html = rendered.html
    assert "incomplete-notice" not in html
    assert '<span class="status" id="run-status">done</span>' in html
    assert "<td>24 of 24</td>" in html


def test_missing_metrics_render(store: Store, tmp_path: Path) -> None:
    """pg_stat_statements unavailable, PostgreSQL 15 (no n_tup_newpage_upd)."""
    none = ("update_calls", "update_mean_ms", "update_stddev_ms", "n_tup_newpage_upd",
            "newpage_share")  # fmt: skip
    out = tmp_path / "out"
    html = render(store, make_fillfactor_run(store, none_metrics=none), out)
    assert html.count("<svg") == 3
    assert f'<td class="num">— ({median("tps", "fits", 100):,.0f})</td>' in table(
        html, "seed-table"
    )
    assert "UPDATE time —" in element(html, 'id="recommendation"', "</p>")
    for png in PNGS:
        assert (out / png).read_bytes().startswith(PNG_MAGIC)


def test_points_without_any_metric_render(store: Store, tmp_path: Path) -> None:
    run_id = store.create_run("fillfactor", {}, server_version="15.4", settings={}, machine={})
    for ff in (100, 80):
        store.record_point(run_id, point_params("fits", ff, 4), 0, {}, started_at=T0,
                           ended_at=T0 + timedelta(seconds=1))  # fmt: skip
    html = render(store, run_id, tmp_path / "out")
    assert html.count("<svg") == 3
    assert "memory was not recorded" in html


def test_rendering_is_deterministic(rendered: Rendered, tmp_path: Path) -> None:
    with Store.open(rendered.store) as store:
        again = render(store, rendered.run_id, tmp_path)
    assert again == rendered.html
    for png in PNGS:
        assert (tmp_path / png).read_bytes() == (rendered.out / png).read_bytes()


def test_shares_its_css_with_the_cost_driver_report(
    rendered: Rendered, store: Store, tmp_path: Path
) -> None:
    ff = rendered.html
    cost = render_cost_driver_report(store, make_cost_driver_run(store), tmp_path / "cost")
    style = element(ff, "<style>", "</style>")
    assert len(style) > 1000
    assert style == element(cost.read_text(encoding="utf-8"), "<style>", "</style>")


def test_template_ships_as_package_data() -> None:
    templates = resources.files("vacuumlab.report") / "templates"
    assert (templates / "fillfactor.html.j2").is_file()
