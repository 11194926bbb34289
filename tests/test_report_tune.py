"""The tune report, rendered from a real results store holding a small tune: the answer and
its SQL, the space and the simulator, every trial, the front, the settings' importance, the
current settings against the winner, the simulator's calibration, and a tune that did not
finish."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
from markupsafe import escape

from helpers.tune_report import IMPORTANCE, SPACE_LINES, SQL, TABLE, TRIALS, make_tune_run
from vacuumlab.records.tune import TrialSettings
from vacuumlab.report import RENDERERS
from vacuumlab.stats.significance import mean_interval, p_text, welch
from vacuumlab.store import Store

CURRENT, WINNER, FLAGGED = TRIALS[0], TRIALS[3], TRIALS[4]


def _render(store: Store, out: Path, **kwargs: object) -> str:
    run_id = make_tune_run(store, **kwargs)
    return RENDERERS["tune"](store, run_id, out).read_text(encoding="utf-8")


def _text(html: str) -> str:
    """The page without its inline charts."""
    return re.sub(r"<svg.*?</svg>", "", html, flags=re.DOTALL)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("tune")
    with Store.open(root / "results.sqlite") as store:
        yield _render(store, root / "report"), root / "report"


@pytest.fixture(scope="module")
def html(rendered: tuple[str, Path]) -> str:
    return rendered[0]


@pytest.fixture(scope="module")
def unfinished(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("tune-unfinished")
    with Store.open(root / "results.sqlite") as store:
        return _text(_render(store, root / "report", finished=False, objective="both", ray=True))


def test_the_answer_shows_the_verdict_and_its_sql_escaped(html: str) -> None:
    assert "trial 4 beats the current settings beyond the noise" in html
    assert f'<pre id="verdict-sql"><code>{escape(SQL)}</code></pre>' in html
    # The table's "<" reaches the page escaped, never raw: not in the SQL, the settings, the
    # importance, the flag, nor in the charts' SVG.
    assert TABLE not in html
    assert "orders&lt;x&gt;" in html
    assert "did not finish" not in html


def test_the_winner_against_the_current_settings(html: str) -> None:
    """Each side's mean with its 95 % interval, the difference and Welch's p, recomputed."""
    page = _text(html)
    for trial in (CURRENT, WINNER):
        interval = mean_interval(trial.dead)
        assert interval is not None
        assert f"{interval.mean:,.0f} (mean of 3)" in page
        assert f"95 % [{interval.low:,.0f}, {interval.high:,.0f}]" in page
    difference = statistics.mean(WINNER.dead) - statistics.mean(CURRENT.dead)
    assert f"−{abs(difference):,.0f}" in page
    comparison = page[page.index('id="comparison"') :]
    assert escape(p_text(welch(WINNER.dead, CURRENT.dead).p_value)) in comparison
    latency = welch(WINNER.p99, CURRENT.p99)
    assert "the latency check passes" in page.lower()
    assert f"Welch&#39;s p = {escape(p_text(latency.p_value))}" in page


def test_the_space_and_the_simulator(html: str) -> None:
    page = _text(html)
    for line in SPACE_LINES:
        assert f"<code>{escape(line)}</code>" in page
    assert "scored 2,000 candidates in 3.4 s" in page
    assert "Its front holds 4" in page
    # The pick's predicted peak against the current settings': 8,000 against 45,000.
    assert '<td>dead-tuple peak</td><td class="num">45,000</td><td class="num">8,000</td>' in page


def test_every_trial_appears_with_its_settings_and_the_flag(html: str) -> None:
    page = _text(html)
    rows = page[
        page.index('id="trial-table"') : page.index("</table>", page.index('id="trial-table"'))
    ]
    for trial in TRIALS:
        row = rows[rows.index(f'id="trial-{trial.number}"') :]
        row = row[: row.index("</tr>")]
        for key, value in TrialSettings.of(trial.values).flat().items():
            assert f"<div>{escape(f'{key}={value}')}</div>" in row
        assert f"{trial.predicted_peak:,.0f}" in row
        assert ("replay off" in row) == (trial is FLAGGED)
    winner = rows[rows.index('id="trial-4"') :]
    assert '<span class="tag">winner</span>' in winner[: winner.index("</tr>")]
    assert "replay off: orders&lt;x&gt; updates 60.0 against 100.0 captured" in rows


def test_the_charts_are_drawn(rendered: tuple[str, Path]) -> None:
    html, out = rendered
    for png in ("trials.png", "pareto.png", "importance.png", "dead-tuples.png", "latency.png"):
        assert (out / png).is_file(), png
        assert f'href="{png}"' in html
    assert html.count("<svg") == 5


def test_the_calibration_line_is_computed_from_the_trials(html: str) -> None:
    """Per trial: |predicted − mean measured| / mean measured; the median and the worst over
    the trials whose replay kept the captured rates."""
    errors = [
        abs(t.predicted_peak - statistics.mean(t.dead)) / statistics.mean(t.dead)
        for t in TRIALS
        if t is not FLAGGED
    ]
    median, worst = statistics.median(errors), max(errors)
    line = (
        f"peaks were within {100 * median:.0f} % of the measured ones (median), "
        f"worst {100 * worst:.0f} %, over {len(errors)} trials"
    )
    assert line in html
    assert "1 trial whose replay missed the captured rates left out" in html


def test_the_importance_appears_largest_first(html: str) -> None:
    page = _text(html)
    table = page[page.index('id="importance-table"') :]
    table = table[: table.index("</table>")]
    shown = re.findall(r'<td class="code">([^<]*)</td><td class="num">(\d+) %</td>', table)
    expected = sorted(IMPORTANCE.items(), key=lambda kv: -kv[1])
    assert shown == [(str(escape(k)), f"{100 * v:.0f}") for k, v in expected]


def test_too_few_trials_to_tell_the_importance(tmp_path: Path, store: Store) -> None:
    page = _text(_render(store, tmp_path / "out", importance={}))
    assert "Too few measured trials to tell which settings mattered" in page
    assert 'id="importance-table"' not in page


def test_too_few_trials_shows_the_simulator_s_ranking(tmp_path: Path, store: Store) -> None:
    ranked = {"server.autovacuum_naptime": 0.8, "orders<x>.autovacuum_vacuum_scale_factor": 0.2}
    page = _text(_render(store, tmp_path / "out", importance={}, simulated_importance=ranked))
    assert "Too few measured trials to tell" in page
    assert "Among the simulator&#39;s candidates" in page
    table = page[page.index('id="importance-table"') :]
    table = table[: table.index("</table>")]
    shown = re.findall(r'<td class="code">([^<]*)</td><td class="num">(\d+) %</td>', table)
    assert shown == [("server.autovacuum_naptime", "80"),
                     (str(escape("orders<x>.autovacuum_vacuum_scale_factor")), "20")]  # fmt: skip


def test_a_tune_without_a_verdict_says_it_did_not_finish(unfinished: str) -> None:
    assert "The tune did not finish: it recorded no verdict" in unfinished
    assert "This tune did not finish" in unfinished  # the notice at the top
    # The leader so far: trial 4 (trial 5 is lower but its replay missed the rates).
    assert "Compared: the leader so far, trial 4 (the search)" in unfinished
    assert '<span class="tag">leader so far</span>' in unfinished
    assert 'id="verdict-sql"' not in unfinished
    assert "importance is computed when the tune ends" in unfinished
    assert "not testable (each needs two measurements or more" in unfinished


def test_the_objective_both_draws_the_measured_front(unfinished: str) -> None:
    assert "Below, the measured trials&#39; mean dead-tuple peak" in unfinished
    header = unfinished[unfinished.index('id="trial-table"') :]
    header = header[: header.index("</thead>")]
    assert header.count('<span class="tag">objective</span>') == 2


def test_a_ray_run_says_the_trials_shared_the_node(html: str, unfinished: str) -> None:
    assert 'id="ray-notice"' in unfinished
    assert "timings of a shared node" in unfinished
    assert 'id="ray-notice"' not in html
