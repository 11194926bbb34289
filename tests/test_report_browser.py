"""The reports as a reader sees them: opened in headless Chromium (Debian's chromium).

Skipped when Chromium is absent; .ci/run installs it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from helpers.report import make_churn_run
from vacuumlab.report.churn import render_churn_report
from vacuumlab.store import Store

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

#: Flags for a headless run on a machine with no network and as root (the probe's set).
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--enable-logging=stderr", "--v=0",
)  # fmt: skip


def chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def console_errors(stderr: str) -> list[str]:
    """Console messages at error level and uncaught exceptions, as Chromium logs them."""
    return [
        line
        for line in stderr.splitlines()
        if "CONSOLE" in line and ("Uncaught" in line or "ERROR" in line.split("CONSOLE")[0])
    ]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("browser")
    with Store.open(directory / "results.sqlite") as store:
        run_id = make_churn_run(store, steps=3, with_xss=True)
        return render_churn_report(store, run_id, directory / "report")


def test_the_console_check_can_fail(tmp_path: Path) -> None:
    """A page with a script error is caught: the check below is not vacuous."""
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    result = chromium(page, tmp_path / "profile", "--dump-dom")
    assert console_errors(result.stderr), result.stderr[-2000:]


def test_no_console_errors_and_escaped_text(report: Path, tmp_path: Path) -> None:
    result = chromium(report, tmp_path / "profile", "--dump-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    assert console_errors(result.stderr) == []
    dom = result.stdout
    # The XSS strings in step names and settings arrive as text, never as elements.
    assert "<script" not in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert dom.count("<svg") == 4  # three steps and the comparison, all rendered inline


def test_charts_are_visible(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    result = chromium(
        report, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1280,2400"
    )
    assert shot.exists(), result.stderr[-2000:]
    pixels = image.imread(shot)[..., :3]
    not_white = (pixels < 0.95).any(axis=-1).mean()
    assert pixels.std() > 0.05
    assert not_white > 0.05  # text, tables and charts, not a blank page
    # The charts have colour (lines, shading), not only black text on white.
    saturated = (pixels.max(axis=-1) - pixels.min(axis=-1)) > 0.25
    assert np.count_nonzero(saturated) > 5000


def test_the_simulation_page_opens_clean_with_its_timeline(tmp_path: Path) -> None:
    """`vacuumlab simulate --format html` as a reader opens it: its worker timeline drawn,
    a table named like markup shown as text."""
    from helpers.advise import changed, relation, snapshot
    from vacuumlab.model.forecast import forecast
    from vacuumlab.records.snapshot import Table
    from vacuumlab.report.simulation import render_html

    name = "<script>alert(1)</script>"
    queue = relation(100, name, reltuples=1000.0, relpages=20, n_live_tup=1000)
    later = changed(queue, n_dead_tup=6000, n_tup_del=6000)
    sim = forecast(
        snapshot(Table(heap=queue, toast=None)),
        snapshot(Table(heap=later, toast=None), seconds=60),
        hours=2,
    )
    page = tmp_path / "simulation.html"
    page.write_text(render_html(sim))
    result = chromium(page, tmp_path / "profile", "--dump-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    assert console_errors(result.stderr) == []
    dom = result.stdout
    assert "<script" not in dom
    assert "public.&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert dom.count("<svg") == 1


#: Written into the page under test: the page's width and every evidence table's extent and
#: cells, as attributes of <body> that --dump-dom shows.
MEASURE = """<script>
const page = document.documentElement.clientWidth;
const tables = [...document.querySelectorAll("table")];
const right = Math.max(...tables.map(t => t.getBoundingClientRect().right));
const keys = [...document.querySelectorAll("table.evidence th.key")];
const lines = el => { const r = document.createRange(); r.selectNodeContents(el);
  return r.getClientRects().length; };
const align = cls => [...new Set([...document.querySelectorAll("table.evidence td." + cls)]
  .map(td => getComputedStyle(td).textAlign))].join(",");
document.body.dataset.measured = JSON.stringify({
  page, right, scroll: document.documentElement.scrollWidth, tables: tables.length,
  keyMin: Math.min(...keys.map(k => k.getBoundingClientRect().width)),
  keyLines: Math.max(...keys.map(lines)),
  text: align("text"), num: align("num"),
});
</script>"""


def _advice_with_long_evidence() -> object:
    from datetime import UTC, datetime

    from vacuumlab.records.advice import Advice, Finding
    from vacuumlab.records.snapshot import ServerInfo

    server = ServerInfo(
        version_num=180000, version="PostgreSQL 18.0", database="shop", user="dba",
        is_superuser=True, in_recovery=False, block_size=8192, can_read_all_stats=True,
        extensions=frozenset(), columns=frozenset(),
    )  # fmt: skip
    evidence: dict[str, str | int | float | None] = {
        "dead_tuples": 1_234_567,
        "dead_rate_from": "n_dead_tup between the two snapshots, less the tuples the "
        "autovacuum that ran in between removed (its count moved, so the raw difference "
        "would be too low), spread over the 60 s between them",
        "index_scan_reason": "fewer than 2 % of the heap's pages hold dead items, so "
        "vacuumlazy.c bypasses index vacuuming (BYPASS_THRESHOLD_PAGES) and leaves the "
        "dead index entries for the next vacuum that finds more",
        "vacuum_seconds": 12.5,
        "unbroken": "x" * 400,
    }
    finding = Finding(
        question="thresholds", severity="warning", relation="public.orders",
        title="vacuum comes late", detail="why", evidence=evidence,
    )  # fmt: skip
    return Advice(
        vacuumlab_version="0.1.0",
        taken_at=datetime(2026, 1, 1, tzinfo=UTC),
        server=server,
        findings=[finding],
    )


def test_evidence_tables_fit_the_page(tmp_path: Path) -> None:
    """Long text evidence wraps inside the page at 1,300 px, left-aligned; numbers stay
    right-aligned; the key column keeps each name on one line."""
    import json
    import re

    from vacuumlab.report.advice_html import render_html

    html = render_html(_advice_with_long_evidence())  # type: ignore[arg-type]
    page = tmp_path / "advice.html"
    page.write_text(html.replace("</body>", MEASURE + "</body>"))
    result = chromium(page, tmp_path / "profile", "--dump-dom", "--window-size=1300,2000")
    assert result.returncode == 0, result.stderr[-2000:]
    match = re.search(r'data-measured="([^"]*)"', result.stdout)
    assert match is not None, result.stdout[-2000:]
    measured = json.loads(match[1].replace("&quot;", '"'))
    assert measured["tables"] >= 1
    assert measured["right"] <= measured["page"], measured  # no table past the page
    assert measured["scroll"] <= measured["page"], measured  # nothing scrolls sideways
    assert measured["keyLines"] == 1, measured  # 'index_scan_reason' not broken up
    assert measured["keyMin"] >= 100, measured
    assert (measured["text"], measured["num"]) == ("left", "right"), measured
