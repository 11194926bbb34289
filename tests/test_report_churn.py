"""The churn HTML report, rendered from synthetic runs in a real results store (no server)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from matplotlib.image import imread

from helpers.report import T0, XSS, Rendered, make_churn_run, step_params, synthetic_step
from vacuumlab.report.churn import render_churn_report
from vacuumlab.store import Store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def render(store: Store, run_id: int, out: Path) -> str:
    path = render_churn_report(store, run_id, out)
    assert path == out / "report.html"
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    with Store.open(tmp_path_factory.mktemp("churn-report") / "r.sqlite") as store:
        yield store


@pytest.fixture(scope="module")
def shared(shared_store: Store, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rendered]:
    """The finished runs that several tests only read, each rendered once: three steps
    ("3"), and three steps whose strings carry markup ("3 xss")."""
    runs = {"3": make_churn_run(shared_store, steps=3),
            "3 xss": make_churn_run(shared_store, steps=3, with_xss=True)}  # fmt: skip
    base = tmp_path_factory.mktemp("churn-out")
    return {key: Rendered(run_id, render(shared_store, run_id, base / str(run_id)),
                          base / str(run_id)) for key, run_id in runs.items()}  # fmt: skip


def section(html: str, anchor: str) -> str:
    """The HTML of one <section id=anchor>."""
    start = html.index(f'id="{anchor}"')
    return html[start : html.index("</section>", start)]


def test_one_chart_per_step_and_one_comparison(shared: dict[str, Rendered]) -> None:
    html = shared["3"].html
    assert html.count("<svg") == 4
    assert re.findall(r'<svg id="(chart-[\w-]+)"', html) == [
        "chart-comparison",
        "chart-step-1",
        "chart-step-2",
        "chart-step-3",
    ]
    for n, name in ((1, "defaults"), (2, "cost_delay 10ms, cost_limit 10000")):
        assert f"<h2>Step {n}: {name}</h2>" in html
    assert 'id="summary-table"' in html
    assert 'id="vacuum-table"' in html
    assert "How this was measured" in html


def test_summary_shows_the_published_figures(store: Store, tmp_path: Path) -> None:
    html = render(store, make_churn_run(store, steps=4), tmp_path / "out")
    start = html.index('id="summary-table"')
    table = html[start : html.index("</table>", start)]
    assert ">4377<" in table
    assert ">3.408<" in table
    assert ">1.043<" in table
    assert ">4603<" in table  # step 2: 4602.51
    rows = table.split("<tr>")
    step4 = next(r for r in rows if '<td class="num" rowspan="1">4</td>' in r)
    assert step4.count("not published") == 3
    assert "direction of change" in html
    assert "15 pgbench clients on an 8-vCPU" in html
    assert "†" not in html  # the steps run the post's settings


def test_step_with_other_settings_marks_its_published_figures(store: Store, tmp_path: Path) -> None:
    run_id = make_churn_run(store, steps=1)
    metrics, series = synthetic_step(2)
    other = step_point(2) | {"name": "my own", "settings": {"work_mem": "1GB"}}
    store.record_point(
        run_id, other, 0, metrics, started_at=T0, ended_at=T0 + timedelta(seconds=60), series=series
    )
    html = render(store, run_id, tmp_path / "out")
    assert "4603 †" in html
    assert "shown for reference only" in html


def step_point(number: int) -> dict[str, object]:
    """A point's parameters as the study records them."""
    planned = step_params(number)
    return {"step": number} | {k: planned[k] for k in ("name", "scope", "settings")}


def test_pngs_exist_are_valid_and_not_blank(shared: dict[str, Rendered]) -> None:
    out = shared["3"].out
    names = sorted(p.name for p in out.glob("*.png"))
    assert names == ["comparison.png", "step-1.png", "step-2.png", "step-3.png"]
    for name in names:
        data = (out / name).read_bytes()
        assert data.startswith(PNG_MAGIC), name
        pixels = imread(out / name)
        assert pixels.shape[0] > 400
        assert pixels.shape[1] > 800
        assert float(np.var(pixels)) > 0, name


def test_strings_from_the_store_are_escaped(shared: dict[str, Rendered]) -> None:
    html = shared["3 xss"].html
    assert "<script" not in html
    assert "alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt; &#34;quotes&#34; &amp; ampersands"
    # step name (title, contents, both tables), setting name and value, server version,
    # target parameter, host name, note, a server setting
    assert html.count(escaped) >= 10
    assert '<td class="code">&lt;script&gt;alert(1)&lt;/script&gt;</td>' in html
    assert f"<h2>Step 1: {escaped} defaults</h2>" in html
    assert XSS not in html


@pytest.mark.parametrize("run", ["3", "3 xss"])
def test_html_is_self_contained_without_javascript(shared: dict[str, Rendered], run: str) -> None:
    html = shared[run].html
    lowered = html.lower()
    assert "<script" not in lowered
    assert not re.search(r"\son[a-z]+\s*=", lowered)  # no event handler attributes
    assert "javascript:" not in lowered
    assert " src=" not in lowered
    assert "<link" not in lowered
    assert "@import" not in lowered
    assert not re.search(r"""(href|url\()\s*=?\s*["']?https?:""", lowered)
    ids = re.findall(r'\sid="([^"]+)"', html)
    duplicates = [i for i, n in Counter(ids).items() if n > 1]
    assert duplicates == []
    for ref in re.findall(r'(?:xlink:href="#|url\(#)([^")]+)', html):
        assert ref in ids


@pytest.mark.parametrize("status", ["interrupted", "failed", "running"])
def test_unfinished_run_renders_with_a_notice(
    store: Store, tmp_path: Path, status: Literal["interrupted", "failed", "running"]
) -> None:
    run_id = make_churn_run(store, steps=2, planned=6, status=status)
    html = render(store, run_id, tmp_path / "out")
    notice = html[html.index('id="incomplete-notice"') : html.index("</div>")]
    assert "only the steps recorded" in notice
    assert "Not measured: steps 3 (+ scale_factor 0.1), 4 (+ naptime 30s)" in notice
    assert f'<span class="status incomplete" id="run-status">{status}</span>' in html
    assert html.count("<svg") == 3
    assert html.count(">not measured</td>") == 8  # steps 3 to 6, in both tables
    assert ">5268<" in html  # published figures of unmeasured steps are still shown
    assert '<tr><th scope="row">steps recorded</th><td>2 of 6</td></tr>' in html


def test_finished_run_has_no_notice(shared: dict[str, Rendered]) -> None:
    html = shared["3"].html
    assert "incomplete-notice" not in html
    assert '<span class="status" id="run-status">done</span>' in html


def test_repetitions_chart_the_first_and_tabulate_all(store: Store, tmp_path: Path) -> None:
    html = render(store, make_churn_run(store, steps=2, repeat=3), tmp_path / "out")
    assert html.count("<svg") == 3
    assert "Repetition 1 of 3 is drawn" in html
    assert '<td class="num" rowspan="3">1</td>' in html
    step2 = section(html, "step-2")
    assert step2.count('<tr><td class="num">') == 3  # one row per repetition


def test_missing_repetitions_are_reported(store: Store, tmp_path: Path) -> None:
    run_id = make_churn_run(store, steps=0, planned=2, repeat=2, status="interrupted")
    metrics, series = synthetic_step(1)
    store.record_point(run_id, step_point(1), 0, metrics, started_at=T0, ended_at=T0, series=series)
    html = render(store, run_id, tmp_path / "out")
    notice = html[html.index('id="incomplete-notice"') : html.index("</div>")]
    assert "Not measured: step 2 (cost_delay 10ms, cost_limit 10000)." in notice
    assert "Missing repetitions (step 1: 1 of 2)." in notice


def test_settings_of_each_step_with_changes_marked(shared: dict[str, Rendered]) -> None:
    html = shared["3"].html
    step1, step2 = section(html, "step-1"), section(html, "step-2")
    assert '<td class="code">autovacuum_naptime</td><td class="code">1min</td>' in step1
    assert 'class="changed"' not in step1
    assert step2.count('class="changed"') == 2
    assert 'autovacuum_vacuum_cost_delay</td><td class="code">10ms<span' in step2
    assert "Settings, applied server-wide" in step2


def test_missing_metrics_and_series_render(store: Store, tmp_path: Path) -> None:
    run_id = store.create_run(
        "churn", {"repeat": 1}, server_version="18.6", settings={}, machine={}
    )
    point = {"step": 1, "name": "defaults", "scope": "server", "settings": {}}
    store.record_point(run_id, point, 0, {"tps": None}, started_at=T0, ended_at=T0)
    out = tmp_path / "out"
    html = render(store, run_id, out)
    assert html.count("<svg") == 2
    assert "no settings recorded" in html
    assert '<td class="num">—</td>' in html
    assert (out / "step-1.png").read_bytes().startswith(PNG_MAGIC)


def test_rendering_is_deterministic(
    shared: dict[str, Rendered], shared_store: Store, tmp_path: Path
) -> None:
    """The same run rendered twice: once for the module, once here."""
    first = shared["3 xss"]
    second = render(shared_store, first.run_id, tmp_path / "b")
    assert first.html == second
    for name in ("step-1.png", "comparison.png"):
        assert (first.out / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_needs_no_server(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import psycopg

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the report must not connect to a server")

    monkeypatch.setattr(psycopg, "connect", refuse)
    monkeypatch.setattr(psycopg.Connection, "connect", refuse)
    render(store, make_churn_run(store, steps=1), tmp_path / "out")


def test_template_ships_as_package_data() -> None:
    template = resources.files("vacuumlab.report") / "templates" / "churn.html.j2"
    assert template.is_file()


def test_six_long_steps_render_every_chart(store: Store, tmp_path: Path) -> None:
    """Six steps of 300 s: every chart drawn. How long it takes is a benchmark's to measure
    (under three test processes on two cores it took 12-36 s)."""
    run_id = make_churn_run(store, steps=6, seconds=300)
    html = render(store, run_id, tmp_path / "out")
    assert html.count("<svg") == 7
