"""The TOAST HTML report, rendered from synthetic runs in a real results store (no server).

Expected figures are computed here from the fixture's own values, with numpy, not with the
report's aggregation code.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from matplotlib.image import imread

from helpers.report import T0, XSS
from helpers.toast import (
    FREEZE_AFTER_VACUUM_S,
    LOCK_WAIT,
    ROWS,
    XSS_TAG,
    heap_bytes,
    make_toast_run,
    seconds_of,
    storage_metrics,
)
from vacuumlab.records.toast_spec import storage_params
from vacuumlab.report.toast import render_toast_report, seconds, size
from vacuumlab.store import Store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CHART_IDS = ["chart-sizes", "chart-timings", "chart-work", "chart-timeline"]
PNGS = ["sizes.png", "timeline.png", "timings.png", "work.png"]
SECTIONS = ("run", "sizes", "timings", "work", "freeze", "autovacuum", "parallel", "method")


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """The store of the runs that several tests only read."""
    with Store.open(tmp_path_factory.mktemp("toast-store") / "r.sqlite") as s:
        yield s


@pytest.fixture(scope="module")
def default(shared_store: Store, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The default synthetic run (every table and arm, once), rendered once for the tests
    that only read it; returns the HTML and the output directory."""
    out = tmp_path_factory.mktemp("toast-report") / "out"
    return render(shared_store, make_toast_run(shared_store), out), out


@pytest.fixture(scope="module")
def repeated_xss(
    shared_store: Store, tmp_path_factory: pytest.TempPathFactory
) -> tuple[int, str, Path]:
    """Two repetitions whose strings carry markup, rendered once: the run's id, the HTML and
    the output directory."""
    out = tmp_path_factory.mktemp("toast-xss") / "out"
    run_id = make_toast_run(shared_store, repeat=2, with_xss=True)
    return run_id, render(shared_store, run_id, out), out


def render(store: Store, run_id: int, out: Path) -> str:
    path = render_toast_report(store, run_id, out)
    assert path == out / "report.html"
    return path.read_text(encoding="utf-8")


def element(html: str, marker: str, end: str) -> str:
    start = html.index(marker)
    return html[start : html.index(end, start)]


def table(html: str, table_id: str) -> str:
    return element(html, f'id="{table_id}"', "</table>")


def row_of(html: str, first_cell: str) -> str:
    return element(html, f"<tr><td>{first_cell}</td>", "</tr>")


def cells(row: str) -> list[str]:
    """The text of each numeric cell, interquartile range left out."""
    return re.findall(r'<td class="num(?: post)?">([^<]*)', row)


def median(storage: str, target: int, step: int, repeat: int) -> float:
    return float(np.median([seconds_of(storage, target, step, r) for r in range(repeat)]))


def test_every_chart_once_with_caption_and_png(default: tuple[str, Path]) -> None:
    html = default[0]
    assert re.findall(r'<svg id="(chart-[\w-]+)"', html) == CHART_IDS
    for chart_id in CHART_IDS:
        assert html.count(f'id="{chart_id}-caption"') == 1
    for png in PNGS:
        assert f'<a href="{png}">{png}</a>' in html
    for anchor in SECTIONS:
        assert html.count(f'<section id="{anchor}"') == 1


def test_pngs_exist_are_valid_and_not_blank(default: tuple[str, Path]) -> None:
    out = default[1]
    assert sorted(p.name for p in out.glob("*.png")) == PNGS
    for name in PNGS:
        assert (out / name).read_bytes().startswith(PNG_MAGIC), name
        pixels = imread(out / name)
        assert pixels.shape[0] > 300, name
        assert pixels.shape[1] > 800, name
        assert float(np.var(pixels)) > 0, name


def test_published_figures_stand_beside_the_measured_ones(default: tuple[str, Path]) -> None:
    html = default[0]
    sizes = table(html, "sizes-table")
    assert cells(row_of(sizes, "extended"))[-4:] == ["29 MB", "1,302 MB", "57 MB", "1,302 MB"]
    assert cells(row_of(sizes, "main"))[-4:] == ["1,302 MB", "0 MB", "2,604 MB", "0 MB"]
    assert cells(row_of(sizes, "external"))[-4:] == ["—"] * 4  # the seed has no such table
    timings = table(html, "timings-table")
    assert cells(row_of(timings, "extended"))[-3:] == ["2.06", "14.5", "32.8"]
    assert cells(row_of(timings, "main"))[-3:] == ["80.3", "42.8", "31.1"]
    ratio = element(timings, 'id="ratio-row"', "</tr>")
    assert cells(ratio)[-3:] == ["38.9×", "3.0×", "0.9×"]
    prose = element(html, '<section id="timings"', "</section>")
    assert "2.06 s against main 80.26 s" in prose


def test_main_is_set_against_plain(default: tuple[str, Path]) -> None:
    note = element(default[0], 'id="timing-note"', "</div>")
    main, plain = seconds_of("main", 2032, 0, 0), seconds_of("plain", 2032, 0, 0)
    assert f"yet main&#39;s took {seconds(main)} s and plain&#39;s {seconds(plain)} s" in note
    assert "heap_toast_insert_or_update" in note


def test_sizes_and_timings_are_the_stored_metrics(store: Store, tmp_path: Path) -> None:
    html = render(store, make_toast_run(store, repeat=3), tmp_path / "out")
    sizes = cells(row_of(table(html, "sizes-table"), "main"))
    assert sizes[:2] == [size(heap_bytes("main", "loaded")), "0 kB"]
    assert sizes[2] == size(heap_bytes("main", "updated"))
    assert sizes[4] == "1.0"  # one 4 kB row per heap page
    timings = table(html, "timings-table")
    for storage in ("extended", "main", "plain"):
        row = row_of(timings, storage)
        for step, column in ((0, 0), (1, 1), (2, 2)):
            expected = seconds(median(storage, 2032, step, 3))
            assert cells(row)[column] == expected, (storage, step)
        assert '<span class="ci">[' in row  # three repetitions: an interquartile range
    ratio = cells(element(timings, 'id="ratio-row"', "</tr>"))
    update = median("main", 2032, 0, 3) / median("extended", 2032, 0, 3)
    assert ratio[0] == f"{update:.1f}×"


def test_freeze_section_shows_both_timings_and_says_why(default: tuple[str, Path]) -> None:
    html = default[0]
    row = cells(row_of(table(html, "freeze-table"), "extended"))
    assert row[0] == seconds(seconds_of("extended", 2032, 2, 0))
    assert row[3] == seconds(FREEZE_AFTER_VACUUM_S) == "0.0011"
    assert row[4] == "2"  # one page of each relation
    assert row[5:] == ["100 %", "100 %"]
    note = element(html, 'id="freeze-note"', "</div>")
    assert "(b) is nearly free because the plain VACUUM had already frozen the pages" in note
    assert "with data_checksums on" in note
    assert "compare with (a)" not in note
    assert "(a) is the nearest measurement here" in note
    fastest = min(seconds_of(s, 2032, 2, 0) for s in ("extended", "main", "external", "plain"))
    assert f"against {seconds(min(fastest, seconds_of('extended', 128, 2, 0)))}" in note


def test_heap_and_toast_as_autovacuum_sees_them(default: tuple[str, Path]) -> None:
    html = default[0]
    av = table(html, "autovacuum-table")
    updated = element(av, "<tr><td>extended</td><td>after UPDATE</td>", "</tr>")
    assert cells(updated) == [f"{ROWS:,}", f"{ROWS:,}", "0 / 0", "4", f"{3 * ROWS:,}", "0",
                              "0 / 0", "4"]  # fmt: skip
    vacuumed = element(av, "<tr><td>main</td><td>after VACUUM</td>", "</tr>")
    assert cells(vacuumed)[2] == f"{2 * ROWS:,} / {2 * ROWS:,}"
    assert "must be frozen on its own" in element(html, '<section id="autovacuum"', "</section>")


def test_who_waited_for_whom(default: tuple[str, Path]) -> None:
    html = default[0]
    overlapping = element(html, 'id="arm-overlapping"', "</div>")
    waited = seconds(LOCK_WAIT[1] - LOCK_WAIT[0])
    assert (
        f"the table session waited {waited} s (sampled, from {seconds(LOCK_WAIT[0])} s to "
        f"{seconds(LOCK_WAIT[1])} s) for a ShareUpdateExclusiveLock on the TOAST relation, held "
        "by the TOAST session" in overlapping
    )
    assert "Truncation was not skipped" in overlapping
    separate = element(html, 'id="arm-separate"', "</div>")
    assert "Neither session was sampled waiting for a lock held by the other." in separate
    assert "One session: nobody to wait for." in element(html, 'id="arm-sequential"', "</div>")
    note = element(html, 'id="parallel-note"', "</div>")
    assert "That is the post&#39;s wait." in note
    assert "Side by side saves at most the shorter of the two" in note
    assert "JoinWaitQueue" in note
    parallel = table(html, "parallel-table")
    assert cells(row_of(parallel, "overlapping"))[4] == "1 of 1"


def test_a_truncation_given_up_is_reported(store: Store, tmp_path: Path) -> None:
    html = render(store, make_toast_run(store, skipped=True), tmp_path / "out")
    overlapping = element(html, 'id="arm-overlapping"', "</div>")
    assert "Truncation was skipped: the TOAST session gave up" in overlapping
    assert "JoinWaitQueue" not in element(html, 'id="parallel-note"', "</div>")
    assert cells(row_of(table(html, "parallel-table"), "overlapping"))[-1] == "1"


def test_strings_from_the_store_are_escaped(store: Store, tmp_path: Path) -> None:
    run_id = make_toast_run(store, with_xss=True)
    odd = storage_params("extended", 2032, ROWS, 4096) | {"storage": XSS}
    store.record_point(run_id, odd, 0, storage_metrics("main", 2032, 0), started_at=T0,
                       ended_at=T0)  # fmt: skip
    html = render(store, run_id, tmp_path / "out")
    assert "<script" not in html.lower()
    assert XSS not in html
    escaped_tag = XSS_TAG.replace("<", "&lt;").replace(">", "&gt;")
    assert f'<th scope="row">wal_level</th><td>{escaped_tag}</td>' in html
    assert f"&#34;pg_toast_4242{escaped_tag}&#34;</code>" in html  # the TOAST session's VACUUM
    escaped = f"{escaped_tag} &#34;quotes&#34; &amp; ampersands"
    assert html.count(escaped) >= 4  # target, host name, note, the odd storage's rows
    assert html.count("<svg") == 4


def test_html_is_self_contained_without_javascript(repeated_xss: tuple[int, str, Path]) -> None:
    html = repeated_xss[1]
    lowered = html.lower()
    assert "<script" not in lowered
    assert not re.search(r"\son[a-z]+\s*=", lowered)
    assert "javascript:" not in lowered
    assert " src=" not in lowered
    assert "<link" not in lowered
    ids = re.findall(r'\sid="([^"]+)"', html)
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    for ref in re.findall(r'(?:xlink:href="#|url\(#)([^")]+)', html):
        assert ref in ids


def test_rendering_is_deterministic(
    repeated_xss: tuple[int, str, Path], shared_store: Store, tmp_path: Path
) -> None:
    """The same run rendered twice: once for the module, once here."""
    run_id, first, directory = repeated_xss
    second = render(shared_store, run_id, tmp_path / "b")
    assert first == second
    for png in PNGS:
        assert (directory / png).read_bytes() == (tmp_path / "b" / png).read_bytes()


@pytest.mark.parametrize("status", ["interrupted", "failed", "running"])
def test_unfinished_run_renders_with_a_notice(
    store: Store, tmp_path: Path, status: Literal["interrupted", "failed", "running"]
) -> None:
    html = render(store, make_toast_run(store, status=status, recorded=2), tmp_path / "out")
    notice = element(html, 'id="incomplete-notice"', "</div>")
    assert "only the points recorded" in notice
    assert "Not measured: main; external; plain; parallel sequential" in notice
    assert f'<span class="status incomplete" id="run-status">{status}</span>' in html
    assert html.count("<svg") == 4


def test_missing_repetitions_are_reported(store: Store, tmp_path: Path) -> None:
    run_id = make_toast_run(store, repeat=2, recorded=9, status="interrupted")
    notice = element(render(store, run_id, tmp_path / "out"), 'id="incomplete-notice"', "</div>")
    # the first 9 points: every table and arm once, then the first table again
    assert "Missing repetitions: extended, toast_tuple_target 128: 1 of 2; main: 1 of 2;" in notice
    assert "extended: 1 of 2" not in notice


def test_finished_run_has_no_notice(default: tuple[str, Path]) -> None:
    html = default[0]
    assert "incomplete-notice" not in html
    assert '<span class="status" id="run-status">done</span>' in html


def test_plain_left_out_is_said(store: Store, tmp_path: Path) -> None:
    run_id = make_toast_run(store, storages=("extended", "main"), width=10_000)
    notice = element(render(store, run_id, tmp_path / "out"), 'id="incomplete-notice"', "</div>")
    assert "Plain storage is left out: a 10,000-byte value cannot be stored" in notice


def test_an_unreadable_timeline_is_noticed(store: Store, tmp_path: Path) -> None:
    html = render(store, make_toast_run(store, broken_timeline=True), tmp_path / "out")
    notice = element(html, 'id="incomplete-notice"', "</div>")
    assert "The timeline of the overlapping arm could not be read." in notice
    assert "No timeline is recorded for this arm." in element(html, 'id="arm-separate"', "</div>")
    assert html.count("<svg") == 4


def test_missing_metrics_render_as_dashes(store: Store, tmp_path: Path) -> None:
    none = ("update_s", "heap_bytes_loaded", "heap_relallfrozen_vacuumed", "wall_s")
    out = tmp_path / "out"
    html = render(store, make_toast_run(store, none_metrics=none), out)
    assert cells(row_of(table(html, "timings-table"), "main"))[0] == "—"
    assert cells(row_of(table(html, "sizes-table"), "main"))[0] == "—"
    assert cells(row_of(table(html, "freeze-table"), "main"))[5] == "—"
    for png in PNGS:
        assert (out / png).read_bytes().startswith(PNG_MAGIC)


def test_without_the_parallel_experiment(store: Store, tmp_path: Path) -> None:
    html = render(store, make_toast_run(store, parallel=False), tmp_path / "out")
    assert "The parallel experiment was not run." in html
    assert 'id="parallel-table"' not in html
    assert html.count("<svg") == 4


def test_points_without_any_metric_render(store: Store, tmp_path: Path) -> None:
    run_id = store.create_run("toast", {}, server_version="18.6", settings={}, machine={})
    store.record_point(run_id, storage_params("main", 2032, 1000, 4096), 0, {}, started_at=T0,
                       ended_at=T0)  # fmt: skip
    html = render(store, run_id, tmp_path / "out")
    assert html.count("<svg") == 4
    assert "No table has both FREEZE timings." in html


def test_template_ships_as_package_data() -> None:
    templates = resources.files("vacuumlab.report") / "templates"
    assert (templates / "toast.html.j2").is_file()
