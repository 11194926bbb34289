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

from report_fixtures import make_churn_run
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
    from advise_fixtures import changed, relation, snapshot
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
