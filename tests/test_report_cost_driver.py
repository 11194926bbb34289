"""The cost-driver HTML report, rendered from synthetic runs in a real results store (no server).

Expected figures are computed here with numpy from the fixture's own values, not with the
report's aggregation code.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from html import unescape
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from matplotlib.image import imread

from helpers.cost_driver import (
    ROWS,
    XSS_TAG,
    autovacuum_duration,
    make_cost_driver_run,
    manual_duration,
    synthetic_metrics,
)
from helpers.report import T0, XSS, Rendered, make_churn_run
from vacuumlab.model.versions import CHANGES
from vacuumlab.records.cost_driver_spec import STUDY, point_params
from vacuumlab.report.churn import render_churn_report
from vacuumlab.report.cost_driver import render_cost_driver_report
from vacuumlab.store import Store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHART_IDS = ["chart-dirty", "chart-indexes", "chart-heatmap", "chart-writers", "chart-predicted"]
PNGS = ["dirty.png", "heatmap.png", "indexes.png", "predicted.png", "writers.png"]
WRITES = (
    "writes_worker_pages",
    "writes_checkpointer_pages",
    "writes_bgwriter_pages",
    "writes_other_pages",
)


def render(store: Store, run_id: int, out: Path) -> str:
    path = render_cost_driver_report(store, run_id, out)
    assert path == out / "report.html"
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    with Store.open(tmp_path_factory.mktemp("cost-driver-store") / "r.sqlite") as s:
        yield s


@pytest.fixture(scope="module")
def shared(shared_store: Store, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rendered]:
    """The finished runs that several tests only read, each rendered once: the default run
    (autovacuum only), one with manual VACUUMs, and one with manual VACUUMs whose strings
    carry markup."""
    runs = {
        "default": make_cost_driver_run(shared_store),
        "manual": make_cost_driver_run(shared_store, manual=True),
        "manual xss": make_cost_driver_run(shared_store, manual=True, with_xss=True),
    }
    base = tmp_path_factory.mktemp("cost-driver-out")
    return {
        key: Rendered(run_id, render(shared_store, run_id, base / str(run_id)), base / str(run_id))
        for key, run_id in runs.items()
    }


def element(html: str, marker: str, end: str) -> str:
    """The HTML from `marker` to the first `end` after it."""
    start = html.index(marker)
    return html[start : html.index(end, start)]


def table(html: str, table_id: str) -> str:
    return element(html, f'id="{table_id}"', "</table>")


def section(html: str, anchor: str) -> str:
    return element(html, f'<section id="{anchor}"', "</section>")


def row_of(html: str, first_cell: str) -> str:
    """The table row whose first cell is `first_cell`."""
    return element(html, f'<tr>\n<td class="num">{first_cell}</td>', "</tr>")


def seconds(value: float) -> str:
    """The report's format for seconds, restated."""
    if value < 10:
        return f"{value:.2f}"
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def medians(distribution: str, dead: int, indexes: int, repeat: int = 3) -> float:
    return float(
        np.median([autovacuum_duration(distribution, dead, indexes, r) for r in range(repeat)])
    )


def test_every_chart_once_with_caption_and_png(shared: dict[str, Rendered]) -> None:
    html = shared["default"].html
    assert html.count("<svg") == 5
    assert re.findall(r'<svg id="(chart-[\w-]+)"', html) == CHART_IDS
    for chart_id in CHART_IDS:
        assert html.count(f'id="{chart_id}-caption"') == 1
        assert html.count(f'<svg id="{chart_id}"') == 1
    for png in PNGS:
        assert f'<a href="{png}">{png}</a>' in html
    for anchor in ("run", "seed", "blocks", "method"):
        assert html.count(f'<section id="{anchor}"') == 1
    assert "<h2>Pages, not tuples</h2>" in html
    assert "How this was measured" in html


def test_pngs_exist_are_valid_and_not_blank(shared: dict[str, Rendered]) -> None:
    out = shared["default"].out
    assert sorted(p.name for p in out.glob("*.png")) == PNGS
    for name in PNGS:
        assert (out / name).read_bytes().startswith(PNG_MAGIC), name
        pixels = imread(out / name)
        assert pixels.shape[0] > 250, name
        assert pixels.shape[1] > 800, name
        assert float(np.var(pixels)) > 0, name


@pytest.mark.parametrize("manual", [False, True])
def test_seed_table_beside_the_published_one(shared: dict[str, Rendered], manual: bool) -> None:
    html = shared["manual" if manual else "default"].html
    seed = table(html, "seed-table")
    published = {
        "10 %": ("5.0", "43.6", "8.7×"),
        "25 %": ("11.5", "43.6", "3.8×"),
        "50 %": ("21.8", "43.4", "2.0×"),
    }
    for dead, values in published.items():
        row = row_of(seed, dead)
        assert "".join(f'<td class="num post">{v}</td>\n' for v in values) in row
    for dead in (10, 50):
        compact, spread = medians("compact", dead, 0), medians("spread", dead, 0)
        row = row_of(seed, f"{dead} %")
        assert f'<td class="num">{seconds(compact)}<span class="ci">' in row
        assert f'<td class="num">{seconds(spread)}<span class="ci">' in row
        assert f'<td class="num">{spread / compact:.1f}×</td>' in row
    assert row_of(seed, "25 %").count('<td class="num">—</td>') == 3  # not measured here
    assert "compare the ratios" in section(html, "seed")


def test_slope_table_shows_the_fitted_seconds_per_index(shared: dict[str, Rendered]) -> None:
    indexes = (0, 1, 3)  # the default run's
    html = shared["default"].html
    slopes = table(html, "slope-table")
    for distribution in ("compact", "spread"):
        for dead in (10, 50):
            x = [k for k in indexes for _ in range(3)]
            y = [autovacuum_duration(distribution, dead, k, r) for k in indexes for r in range(3)]
            slope, intercept = np.polyfit(x, y, 1)
            r2 = float(np.corrcoef(x, y)[0, 1] ** 2)
            head = f'<tr><td>{distribution}</td><td class="num">{dead} %</td>'
            row = element(slopes, head, "</tr>")
            cells = re.findall(r'<td class="num">([^<]*)</td>', row)
            assert cells == [
                f"{dead} %",
                f"{slope:.2f}",
                seconds(intercept),
                f"{slope / intercept * 100:.0f} %",
                f"{r2:.3f}",
                "9",
            ]
    published = element(slopes, 'id="published-slope"', "</tr>")
    assert "≈5 s per index" in published
    assert f">{np.polyfit(range(6), [21.8, 28.1, 32.6, 37.6, 42.3, 47.4], 1)[0]:.2f}<" in published
    by_index = table(html, "by-index-table")
    assert ">47.4<" in by_index
    assert f">{seconds(medians('compact', 50, 3))}<" in by_index


def test_strings_from_the_store_are_escaped(store: Store, tmp_path: Path) -> None:
    run_id = make_cost_driver_run(store, with_xss=True)
    odd = point_params("compact", 10, 0, ROWS, "autovacuum") | {"distribution": XSS}
    metrics = synthetic_metrics("spread", 10, 0, 0, "autovacuum")
    store.record_point(run_id, odd, 0, metrics, started_at=T0, ended_at=T0)
    html = render(store, run_id, tmp_path / "out")
    assert "<script" not in html.lower()
    assert "alert(1)</script>" not in html
    assert XSS not in html
    escaped_tag = XSS_TAG.replace("<", "&lt;").replace(">", "&gt;")
    assert f'<td class="code">{escaped_tag}</td>' in table(html, "cost-settings")
    assert f"64-bit {escaped_tag}</td>" in html  # the server version
    escaped = f"{escaped_tag} &#34;quotes&#34; &amp; ampersands"
    # target, host name, note, and the odd distribution in the slope and blocks tables
    assert html.count(escaped) >= 5
    assert html.count("<svg") == 5


@pytest.mark.parametrize("run", ["manual", "manual xss"])
def test_html_is_self_contained_without_javascript(shared: dict[str, Rendered], run: str) -> None:
    html = shared[run].html
    lowered = html.lower()
    assert "<script" not in lowered
    assert not re.search(r"\son[a-z]+\s*=", lowered)
    assert "javascript:" not in lowered
    assert " src=" not in lowered
    assert "<link" not in lowered
    assert not re.search(r"""(href|url\()\s*=?\s*["']?https?:""", lowered)
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    for ref in re.findall(r'(?:xlink:href="#|url\(#)([^")]+)', html):
        assert ref in ids


@pytest.mark.parametrize("status", ["interrupted", "failed", "running"])
def test_unfinished_run_renders_with_a_notice(
    store: Store, tmp_path: Path, status: Literal["interrupted", "failed", "running"]
) -> None:
    run_id = make_cost_driver_run(store, status=status, recorded=5)
    html = render(store, run_id, tmp_path / "out")
    notice = element(html, 'id="incomplete-notice"', "</div>")
    assert "only the combinations recorded" in notice
    assert "Not measured (autovacuum): compact 50 %, 3 indexes; spread 10 %, 0 indexes;" in notice
    assert f'<span class="status incomplete" id="run-status">{status}</span>' in html
    assert "<td>15 of 36</td>" in html
    assert html.count("<svg") == 5


def test_missing_repetitions_are_reported(store: Store, tmp_path: Path) -> None:
    run_id = make_cost_driver_run(store, repeat=3, recorded=0, status="interrupted")
    metrics = synthetic_metrics("compact", 10, 0, 0, "autovacuum")
    params = point_params("compact", 10, 0, ROWS, "autovacuum")
    store.record_point(run_id, params, 0, metrics, started_at=T0, ended_at=T0)
    html = render(store, run_id, tmp_path / "out")
    notice = element(html, 'id="incomplete-notice"', "</div>")
    assert "Missing repetitions (autovacuum): compact 10 %, 0 indexes: 1 of 3." in notice


def test_points_that_do_not_fit_are_left_out_with_a_notice(store: Store, tmp_path: Path) -> None:
    run_id = store.create_run("cost-driver", {}, server_version="18.6", settings={}, machine={})
    metrics = synthetic_metrics("compact", 10, 0, 0, "manual")
    manual = point_params("compact", 10, 0, ROWS, "manual")
    for params in (manual, manual | {"mode": "other"}, {"distribution": "compact"}):
        store.record_point(run_id, params, 0, metrics, started_at=T0, ended_at=T0)
    html = render(store, run_id, tmp_path / "out")
    notice = element(html, 'id="incomplete-notice"', "</div>")
    assert "No autovacuum point is recorded" in notice
    assert "2 point(s) with a missing or unknown distribution" in notice
    assert html.count("<svg") == 5
    assert table(html, "manual-table").count("<tr><td>") == 1
    assert '<th scope="row">manual VACUUM runs recorded</th><td>1</td>' in html


def test_finished_run_has_no_notice(shared: dict[str, Rendered]) -> None:
    html = shared["default"].html
    assert "incomplete-notice" not in html
    assert '<span class="status" id="run-status">done</span>' in html
    assert "<td>36 of 36</td>" in html


def test_cost_settings_and_duration_source_are_shown(shared: dict[str, Rendered]) -> None:
    html = shared["default"].html
    cost = table(html, "cost-settings")
    assert '<td class="code">autovacuum_vacuum_cost_delay</td><td class="code">2ms</td>' in cost
    assert '<td class="code">vacuum_cost_page_dirty</td><td class="code">20</td>' in cost
    assert cost.count("<tr><td") == 10
    source = element(html, 'id="duration-source"', "</p>")
    assert "duration_stats_s" in source
    assert "duration_stats_s (the server" in source
    assert "for 36 of 36 points." in source
    assert "duration_log_s" not in source


def test_with_manual_points(shared: dict[str, Rendered]) -> None:
    html = shared["manual"].html
    manual = table(html, "manual-table")
    assert manual.count("<tr><td>") == 12
    unthrottled = float(np.median([manual_duration("spread", 50, 3, r) for r in range(3)]))
    throttled = medians("spread", 50, 3)
    row = element(
        manual, '<tr><td>spread</td><td class="num">50 %</td><td class="num">3</td>', "</tr>"
    )
    assert f"{seconds(unthrottled)}<span" in row
    assert f"{seconds(throttled)}<span" in row
    assert f">{throttled / unthrottled:.1f}×<" in row
    assert f">{(1 - unthrottled / throttled) * 100:.0f} %<" in row
    assert "<td>72 of 72</td>" not in html  # autovacuum and manual are counted apart
    assert "<td>36 of 36</td>" in html
    caption = element(html, 'id="chart-predicted-caption"', "</figcaption>")
    assert "For 36 of 36 runs the median duration of the manual" in caption


def test_without_manual_points(shared: dict[str, Rendered]) -> None:
    html = shared["default"].html
    assert 'id="manual"' not in html
    assert 'id="manual-table"' not in html
    caption = element(html, 'id="chart-predicted-caption"', "</figcaption>")
    assert "work time is taken as 0" in caption


def test_missing_metrics_render(store: Store, tmp_path: Path) -> None:
    none = (
        *WRITES,
        "delay_time_s",
        "duration_stats_s",
        "idx_blks_hit",
        "index_pages_newly_deleted",
    )
    run_id = make_cost_driver_run(store, manual=True, none_metrics=none)
    out = tmp_path / "out"
    html = render(store, run_id, out)
    assert html.count("<svg") == 5
    source = element(html, 'id="duration-source"', "</p>")
    assert "duration_log_s" in source
    assert "duration_stats_s" not in source
    blocks = table(html, "blocks-table")
    assert blocks.count('<td class="num">—</td>') == 3 * 12  # index blocks, share, newly deleted
    manual = table(html, "manual-table")
    assert manual.count('<td class="num">—</td>') == 12  # asleep, measured
    for png in PNGS:
        assert (out / png).read_bytes().startswith(PNG_MAGIC)


def test_points_without_any_metric_render(store: Store, tmp_path: Path) -> None:
    run_id = store.create_run("cost-driver", {}, server_version="15.4", settings={}, machine={})
    params = point_params("spread", 10, 0, ROWS, "autovacuum")
    store.record_point(run_id, params, 0, {}, started_at=T0, ended_at=T0 + timedelta(seconds=1))
    html = render(store, run_id, tmp_path / "out")
    assert html.count("<svg") == 5
    assert "No point has a duration" in html
    assert html.count("not recorded") == 10  # every cost setting


def test_rendering_is_deterministic(
    shared: dict[str, Rendered], shared_store: Store, tmp_path: Path
) -> None:
    """The same run rendered twice: once for the module, once here."""
    first = shared["manual xss"]
    second = render(shared_store, first.run_id, tmp_path / "b")
    assert first.html == second
    for png in PNGS:
        assert (first.out / png).read_bytes() == (tmp_path / "b" / png).read_bytes()


def test_shares_its_css_with_the_churn_report(
    shared: dict[str, Rendered], store: Store, tmp_path: Path
) -> None:
    cost = shared["default"].html
    churn_path = render_churn_report(store, make_churn_run(store, steps=1), tmp_path / "churn")
    churn = churn_path.read_text(encoding="utf-8")
    style = element(cost, "<style>", "</style>")
    assert len(style) > 1000
    assert style == element(churn, "<style>", "</style>")


def test_templates_ship_as_package_data() -> None:
    templates = resources.files("vacuumlab.report") / "templates"
    for name in ("cost_driver.html.j2", "_style.css.j2", "churn.html.j2"):
        assert (templates / name).is_file()


# -- the PostgreSQL version and what in it bears on the figures ---------------------------------

ON_16 = "PostgreSQL 16.14 on x86_64-pc-linux-gnu, compiled by gcc, 64-bit"


def cost_driver_changes(major: int) -> list[str]:
    """The list the note should show for a run on ``major``, from the versions table."""
    return [
        f"since {c.since}: {c.what}" for c in CHANGES if c.since <= major and STUDY in c.studies
    ]


def version_note(html: str) -> str:
    return element(html, 'id="version-note"', "</div>")


def listed(note: str) -> list[str]:
    return [unescape(item) for item in re.findall(r"<li>(.*?)</li>", note)]


def run_on(store: Store, version: str, index_scans: dict[int, int | None]) -> int:
    """A small cost-driver run on ``version``: compact 50 %, one point per index count in
    ``index_scans``, each recording that many index passes (None: not recorded)."""
    run_id = store.create_run(STUDY, {}, server_version=version, settings={}, machine={})
    for indexes, scans in index_scans.items():
        metrics = synthetic_metrics("compact", 50, indexes, 0, "autovacuum")
        metrics["index_scans"] = scans
        params = point_params("compact", 50, indexes, ROWS, "autovacuum")
        store.record_point(run_id, params, 0, metrics, started_at=T0, ended_at=T0)
    store.finish_run(run_id, "done")
    return run_id


def test_the_version_note_differs_between_16_and_18(
    shared: dict[str, Rendered], store: Store, tmp_path: Path
) -> None:
    """The default run is on 18.6; one on 16 lacks what 17 and 18 brought."""
    on_18 = version_note(shared["default"].html)
    on_16 = version_note(render(store, run_on(store, ON_16, {0: 0, 1: 0, 2: 1, 3: 2}), tmp_path))
    assert on_18 != on_16
    assert "Measured on PostgreSQL 18. What this version does" in on_18
    assert "Measured on PostgreSQL 16. What this version does" in on_16
    assert listed(on_18) == cost_driver_changes(18)
    assert listed(on_16) == cost_driver_changes(16)
    assert [item.split(":")[0] for item in listed(on_18)] == [
        "since 14", "since 16", "since 17", "since 18", "since 18",
    ]  # fmt: skip
    assert [item.split(":")[0] for item in listed(on_16)] == ["since 14", "since 16"]
    # 8 combinations with indexes, 3 repetitions each, one index pass each (the helper's)
    assert "of the 24 autovacuums of a table with indexes, 24 made one." in on_18
    assert "of the 3 autovacuums of a table with indexes, 1 made one, 1 made none" in on_16
    assert "1 made more than one" in on_16


def test_the_version_note_without_index_passes_or_changes(store: Store, tmp_path: Path) -> None:
    """A run on 13 predates every change the table tracks; points that do not record index
    passes leave the sentence out; a version that names no major leaves the note out."""
    note = version_note(render(store, run_on(store, "13.22", {1: None}), tmp_path / "a"))
    assert "Measured on PostgreSQL 13, older than every change" in note
    assert "<li>" not in note
    assert "Index passes" not in note
    html = render(store, run_on(store, "unknown", {1: 1}), tmp_path / "b")
    assert 'id="version-note"' not in html
