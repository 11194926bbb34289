"""The reports as a reader sees them: opened in headless Chromium (Debian's chromium).

Skipped when Chromium is absent; .ci/run installs it.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from html import unescape as html_unescape
from pathlib import Path
from typing import Any

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
    from vacuumlab.report.simulation.html import render_html

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


def measure(html: str, script: str, tmp_path: Path, width: int, height: int) -> Any:
    """What `script` (written into the page before ``</body>``) leaves in ``<body
    data-measured>`` as JSON, the page opened in a window of `width` × `height` px."""
    page = tmp_path / f"page-{width}.html"
    page.write_text(html.replace("</body>", script + "</body>"), encoding="utf-8")
    result = chromium(
        page,
        tmp_path / f"profile-{width}",
        "--dump-dom",
        f"--window-size={width},{height}",
        # Time for the load event, and the script after it, before the DOM is dumped.
        "--virtual-time-budget=5000",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert console_errors(result.stderr) == []
    match = re.search(r'data-measured="([^"]*)"', result.stdout)
    assert match is not None, result.stdout[-2000:]
    return json.loads(html_unescape(match[1]))


def test_evidence_tables_fit_the_page(tmp_path: Path) -> None:
    """Long text evidence wraps inside the page at 1,300 px, left-aligned; numbers stay
    right-aligned; the key column keeps each name on one line."""
    from vacuumlab.report.advice.html import render_html

    html = render_html(_advice_with_long_evidence())  # type: ignore[arg-type]
    measured = measure(html, MEASURE, tmp_path, 1300, 2000)
    assert measured["tables"] >= 1
    assert measured["right"] <= measured["page"], measured  # no table past the page
    assert measured["scroll"] <= measured["page"], measured  # nothing scrolls sideways
    assert measured["keyLines"] == 1, measured  # 'index_scan_reason' not broken up
    assert measured["keyMin"] >= 100, measured
    assert (measured["text"], measured["num"]) == ("left", "right"), measured


# -- the advice page's table of where each table stands, at a desktop's width and a small one --

#: Each word of the table's cells measured with a Range: one that spans two line boxes was
#: broken mid-word. A relation's schema and table name are its words (it may break at its
#: dot, nowhere else); everything else splits at white space.
WORDS = """<script>
addEventListener("load", () => {
  const table = document.getElementById("tables-table");
  const box = table.parentElement;
  const broken = [];
  let words = 0;
  for (const cell of table.querySelectorAll("th, td")) {
    const relation = cell.tagName === "TD" && cell.cellIndex === 0;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.data.matchAll(relation ? /[^\\s.]+\\.?|\\./g : /\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        words += 1;
        if (range.getClientRects().length !== 1) broken.push(cell.textContent);
      }
    }
  }
  const first = [...table.querySelectorAll("tbody td:first-child")];
  document.body.dataset.measured = JSON.stringify({
    words, broken: [...new Set(broken)].slice(0, 10), brokenCells: new Set(broken).size,
    page: document.documentElement.clientWidth, pageScroll: document.documentElement.scrollWidth,
    box: box.clientWidth, table: table.scrollWidth,
    relationWidth: Math.min(...first.map(td => td.getBoundingClientRect().width)),
  });
});
</script>"""

#: Where the saved pair's tables get names as long as a real schema's (the pair's are t1, t2…).
BASES = (
    "session_tokens_archive", "order_line_items", "customer_payment_methods",
    "notification_outbox", "inventory_snapshots", "audit_events_2024_q4", "invoices",
)  # fmt: skip


def _long_names(snapshot: Any, names: dict[int, tuple[str, str]]) -> Any:
    tables = [
        t.model_copy(update={"heap": t.heap.model_copy(update=dict(
            zip(("schema_name", "name"), names[t.heap.oid], strict=True)))})
        for t in snapshot.tables
    ]  # fmt: skip
    return snapshot.model_copy(update={"tables": tables})


def _advice_on_a_real_schema() -> Any:
    """The advice on the saved pair of snapshots (the golden test's, from the embedded
    PostgreSQL 18: 800 relations, a thousand findings, rates, reloptions), its tables named
    ``public.pgbench_branches``, ``tenant_0042.session_tokens_archive`` and the like."""
    from vacuumlab.advise import advise
    from vacuumlab.records.snapshot import parse_snapshot

    path = Path(__file__).parent / "data" / "advise_pair.json.gz"
    raw = json.loads(gzip.decompress(path.read_bytes()))
    pair = {key: parse_snapshot(value, key) for key, value in raw.items()}
    oids = sorted({t.heap.oid for s in pair.values() for t in s.tables})
    pgbench = [("public", f"pgbench_{n}") for n in ("accounts", "branches", "tellers", "history")]
    tenants = [(f"tenant_{i // len(BASES):04d}", BASES[i % len(BASES)]) for i in range(len(oids))]
    names = dict(zip(oids, pgbench + tenants, strict=False))
    return advise(*(_long_names(pair[key], names) for key in ("first", "later")))


@pytest.fixture(scope="module")
def advice_page() -> str:
    from vacuumlab.report.advice.html import render_html

    html = render_html(_advice_on_a_real_schema())
    assert "public.pgbench_branches" in html
    assert "tenant_0042.session_tokens_archive" in html
    return html


@pytest.mark.parametrize("width", [1280, 800])
def test_no_cell_of_the_tables_table_breaks_a_word(
    advice_page: str, tmp_path: Path, width: int
) -> None:
    """`vacuumlab advise --format html` at a desktop's width and a small one: a relation breaks
    at its dot if at all, no other word of the table breaks, the page never scrolls sideways;
    at 1,280 px the table fits without scrolling its own box either."""
    measured = measure(advice_page, WORDS, tmp_path, width, 900)
    assert measured["words"] > 5000, measured
    assert (measured["brokenCells"], measured["broken"]) == (0, []), measured
    assert measured["pageScroll"] <= measured["page"], measured
    if width >= 1280:
        assert measured["table"] <= measured["box"], measured
