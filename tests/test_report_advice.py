"""The advice reports (Markdown and HTML), rendered from hand-built Advice models."""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from helpers.advice_record import advice, finding, full_advice, rec, server, status
from vacuumlab import units
from vacuumlab.records.advice import (
    QUESTIONS,
    Advice,
)
from vacuumlab.records.snapshot import ProbeNote
from vacuumlab.report.advice.html import render_html
from vacuumlab.report.advice.markdown import render_markdown
from vacuumlab.report.advice.text import render as render_text
from vacuumlab.report.advice.view import NOTHING_TO_CHANGE, number, percent, seconds
from vacuumlab.report.markdown import md_code, md_fence, md_paragraph, md_text

XSS = "<script>alert(1)</script>"
QUOTES = '"quo|tes"'


def hostile_advice() -> Advice:
    """Database strings with markup, pipes, quotes, backticks and newlines everywhere."""
    names = [XSS, QUOTES, "a`b|c\nd", "public.ünïcode table"]
    return advice(
        server=server(database=f"db|{XSS}", user=QUOTES),
        findings=[
            finding(
                "bloat",
                f"Bloated {name}",
                relation=name,
                evidence={f"key|{i}": name},
                recommendations=[rec("fillfactor", 0.5, relation=name, evidence=name)],
            )
            for i, name in enumerate(names)
        ],
        tables=[status(name, overridden=[name]) for name in names],
        notes=[ProbeNote(probe=XSS, reason=QUOTES, fix="x|y")],
    )


def unescaped_pipes(line: str) -> int:
    """Pipes that delimit GFM table cells: those not preceded by a backslash escape."""
    count, escaped = 0, False
    for char in line:
        if char == "|" and not escaped:
            count += 1
        escaped = char == "\\" and not escaped
    return count


def table_blocks(markdown: str) -> list[list[str]]:
    return [block.splitlines() for block in markdown.split("\n\n") if block.startswith("| ")]


def section(html: str, anchor: str) -> str:
    start = html.index(f'id="{anchor}"')
    return html[start : html.index("</section>", start)]


# -- ranking and sections -----------------------------------------------------------------


def test_recommendations_are_ranked_by_impact_in_markdown() -> None:
    md = render_markdown(full_advice())
    changes = md.split("## What to change")[1].split("\n## ")[0]
    numbered = re.findall(r"^(\d+)\. .*$", changes, flags=re.MULTILINE)
    assert numbered == ["1", "2", "3", "4"]
    order = [changes.index(f"Sets `{s}`") for s in ("autovacuum_freeze_max_age", "fillfactor")]
    order += [changes.index(f"Sets `{s}`") for s in ("autovacuum_vacuum_scale_factor",)]
    order += [changes.index("Sets `toast.fillfactor`")]
    assert order == sorted(order)
    assert "   ```sql\n   VACUUM FREEZE;\n   ```" in changes


def test_recommendations_are_ranked_by_impact_in_html() -> None:
    html = section(render_html(full_advice()), "changes")
    settings = re.findall(r"Sets <code>([^<]+)</code>", html)
    assert settings == [
        "autovacuum_freeze_max_age",
        "fillfactor",
        "autovacuum_vacuum_scale_factor",
        "toast.fillfactor",
    ]
    assert re.findall(r'<li id="change-(\d+)">', html) == ["1", "2", "3", "4"]


def test_sections_follow_question_order_and_only_with_findings() -> None:
    a = full_advice()
    expected = [h for q, h in QUESTIONS.items() if q in {"wraparound", "thresholds", "hot"}]
    assert expected == ["Wraparound", "Thresholds", "HOT and fillfactor"]
    md_headings = re.findall(r"^## (.+)$", render_markdown(a), flags=re.MULTILINE)
    assert md_headings == [
        "What to change",
        *expected,
        "Where each table stands",
        "Not collected",
    ]
    html_headings = re.findall(r"<h2>(.+?)</h2>", render_html(a))
    assert html_headings == [
        "What to change",
        "Wraparound",
        "Thresholds",
        "HOT and fillfactor",
        "Where each table stands",
        "Not collected",
    ]


def test_findings_show_severity_relation_evidence_and_their_changes() -> None:
    md = render_markdown(full_advice())
    wrap = md.split("## Wraparound")[1].split("\n## ")[0]
    assert wrap.index("### \\[CRITICAL\\] server: Freeze age is high") < wrap.index(
        "### \\[INFO\\] public.items: A minor note"
    )
    assert "| age | 1,500,000,000 |" in wrap
    assert "| enabled | yes |" in wrap
    assert "| unknown | — |" in wrap
    assert "To change: #1 under “What to change”." in wrap
    hot = md.split("## HOT and fillfactor")[1]
    assert "To change: #2, #4 under" in hot
    html = section(render_html(full_advice()), "q-wraparound")
    assert '<span class="sev critical">critical</span> <code>server</code>' in html
    assert '<a href="#change-1">#1</a>' in html


# -- numbers --------------------------------------------------------------------------------


def test_numbers_are_formatted_in_the_tables_table() -> None:
    md = render_markdown(full_advice())
    assert "| n\\_dead\\_tup | 1,234,567 |" not in md  # intraword underscores stay readable
    assert "| n_dead_tup | 1,234,567 |" in md
    assert "| scale_factor | 0.200 |" not in md
    assert "| scale_factor | 0.2 |" in md
    assert "| share | 0.0042 |" in md
    rows = table_blocks(md.split("## Where each table stands")[1])[0]
    assert rows[0].endswith("| dead tuples/s | reaches threshold in | vacuum takes about |")
    assert rows[1] == "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |"
    assert rows[2] == (
        "| public.orders | on | 12,345 / 20,050 (62 %) | 1,000 / 21,000 | 3 / 10,025 "
        "| autovacuum_vacuum_scale_factor | — | — | — |"
    )
    assert rows[3] == (
        "| public.orders (TOAST) | on | 12,345 / 20,050 (62 %) | 1,000 / off | — | — "
        "| 12.3/s | 2.0 h | 42 s |"
    )
    html = section(render_html(full_advice()), "tables")
    assert '<td class="num">12,345 / 20,050 (62 %)</td>' in html
    assert '<td class="num">2.0 h</td>' in html


def test_a_table_far_past_its_threshold_reads_as_a_multiple() -> None:
    """1,000 times its vacuum threshold reads "1,000×", not "100000%" (defect 4)."""
    far = advice(tables=[status("public.q", dead=20_050_000, vacuum_progress=1000.0)])
    text = io.StringIO()
    Console(file=text, width=160, color_system=None).print(render_text(far))
    assert "1,000×" in text.getvalue()
    assert "100000%" not in text.getvalue()
    md = render_markdown(far)
    assert "| public.q | on | 20,050,000 / 20,050 (1,000×) |" in md
    assert "100,000 %" not in md


def test_number_wording_is_a_leaf_module() -> None:
    """units.py words numbers for the advisor and the reports alike, so it imports neither."""
    tree = ast.parse(Path(units.__file__).read_text(encoding="utf-8"))
    imported = [
        name
        for node in ast.walk(tree)
        for name in (
            [a.name for a in node.names] if isinstance(node, ast.Import)
            else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        )
    ]  # fmt: skip
    assert not [name for name in imported if name.startswith("vacuumlab")]
    assert units.share(0.9) == "90%"
    assert units.share(1000.0) == "1,000×"


def test_rate_columns_only_when_some_table_has_rates() -> None:
    md = render_markdown(advice(tables=[status("public.t")]))
    assert "dead tuples/s" not in md
    assert "dead tuples/s" not in render_html(advice(tables=[status("public.t")]))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "—"),
        (0.25, "0.25 s"),
        (42.0, "42 s"),
        (600.0, "10 min"),
        (7200.0, "2.0 h"),
        (3 * 86400.0, "3.0 d"),
        (float("inf"), "never"),
    ],
)
def test_seconds(value: float | None, text: str) -> None:
    assert seconds(value) == text


@pytest.mark.parametrize(
    ("share", "text"),
    [(0.0, "0.0 %"), (0.0123, "1.2 %"), (0.5, "50 %"), (10.0, "1,000 %"), (12.5, "12×")],
)
def test_percent(share: float, text: str) -> None:
    assert percent(share) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(3.0, "3"), (1234.5678, "1,235"), (3.14159, "3.14"), (0.000123, "0.000123")],
)
def test_number(value: float, text: str) -> None:
    assert number(value) == text


def test_header_shows_server_database_user_time_and_interval() -> None:
    md = render_markdown(full_advice())
    assert md.startswith("# Vacuum advice for shop\n\n- **server:** PostgreSQL 17.2\n")
    for line in (
        "- **database:** shop",
        "- **user:** dba",
        "- **taken at:** 2025-03-04 05:06:07 UTC",
        "- **interval:** 60 s between two snapshots",
    ):
        assert line in md
    assert "interval" not in render_markdown(advice())
    html = render_html(full_advice())
    assert '<tr><th scope="row">interval</th><td>60 s between two snapshots</td></tr>' in html


# -- escaping -------------------------------------------------------------------------------


def test_markdown_table_rows_are_not_broken_by_database_strings() -> None:
    md = render_markdown(hostile_advice())
    tables = table_blocks(md)
    assert len(tables) == 4 + 2  # one evidence table per finding, the tables, the notes
    for table in tables:
        widths = {unescaped_pipes(line) for line in table}
        assert len(widths) == 1, table
    stands = table_blocks(md.split("## Where each table stands")[1])[0]
    assert len(stands) == 2 + 4
    assert "| a\\`b\\|c d |" in md


def test_markdown_has_no_raw_markup_from_the_database() -> None:
    md = render_markdown(hostile_advice())
    outside_sql = re.sub(r"```sql\n.*?```", "", md, flags=re.DOTALL)
    assert "ALTER TABLE" not in outside_sql
    assert "<script>" not in outside_sql
    assert "\\<script\\>alert(1)\\</script\\>" in md
    assert "# Vacuum advice for db\\|\\<script\\>" in md
    assert "ünïcode table" in md


def test_markdown_code_spans_and_fences_outlast_backticks() -> None:
    assert md_code("a`b") == "``a`b``"
    assert md_code("`x`") == "`` `x` ``"
    assert md_code("two\nlines") == "`two lines`"
    sql = 'ALTER TABLE "```" SET (fillfactor = 90);'
    assert md_fence(sql) == ["````sql", sql, "````"]
    md = render_markdown(
        advice(findings=[finding("hot", "t", recommendations=[rec("fillfactor", 1, sql=sql)])])
    )
    assert f"   ````sql\n   {sql}\n   ````" in md


def test_markdown_text_escaping() -> None:
    assert md_text("a|b") == "a\\|b"
    assert md_text("x\\|y") == "x\\\\\\|y"
    assert md_text("snake_case _em_ *b*") == "snake_case \\_em\\_ \\*b\\*"
    assert md_text("line\r\nbreak\u2028here") == "line break here"
    assert md_paragraph("1. not a list") == "1\\. not a list"
    assert md_paragraph("- not a list") == "\\- not a list"


def test_html_escapes_every_database_string() -> None:
    html = render_html(hostile_advice())
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert QUOTES not in html
    assert "&#34;quo|tes&#34;" in html
    assert "<title>Vacuum advice for db|&lt;script&gt;" in html
    assert "a`b|c\nd" in html  # escaped text may keep its newline: HTML ignores it


def test_a_relation_breaks_only_at_its_dot_in_the_tables_table() -> None:
    """A relation may break after its schema's dot (``<wbr>``) and nowhere else; the schema and
    the table name are each escaped (test_report_browser.py measures the breaks)."""
    names = [f"{XSS}.a&b", "public.orders (TOAST)", "no dot"]
    html = section(render_html(advice(tables=[status(name) for name in names])), "tables")
    cells = re.findall(r'<td class="code rel">(.*?)</td>', html)
    assert cells == [
        "&lt;script&gt;alert(1)&lt;/script&gt;.<wbr>a&amp;b",
        "public.<wbr>orders (TOAST)",
        "no dot",
    ]


def test_html_is_self_contained() -> None:
    html = render_html(full_advice())
    assert html.startswith("<!DOCTYPE html>")
    assert "<style>" in html
    assert "border-collapse" in html  # the shared stylesheet
    for banned in ("<script", "<link", "src=", "http://", "https://", "@import"):
        assert banned not in html


# -- determinism and the empty case ---------------------------------------------------------


def test_rendering_is_deterministic_and_survives_json() -> None:
    a = full_advice()
    again = Advice.model_validate_json(a.dump_json())
    assert render_markdown(a) == render_markdown(a) == render_markdown(again)
    assert render_html(a) == render_html(a) == render_html(again)


def test_empty_advice_says_nothing_to_change() -> None:
    md = render_markdown(advice())
    assert f"## What to change\n\n{NOTHING_TO_CHANGE}\n" in md
    assert re.findall(r"^## (.+)$", md, flags=re.MULTILINE) == ["What to change"]
    html = render_html(advice())
    assert f'<p id="nothing-to-change">{NOTHING_TO_CHANGE}</p>' in html
    assert re.findall(r"<h2>(.+?)</h2>", html) == ["What to change"]


def test_findings_without_recommendations_still_say_nothing_to_change() -> None:
    a = advice(findings=[finding("timing", "Vacuums are short", severity="info")])
    md = render_markdown(a)
    assert NOTHING_TO_CHANGE in md
    assert "## When and how long" in md
    assert "To change" not in md


def test_the_quiet_relations_are_counted_under_the_status_table() -> None:
    """Quiet relations (nothing moves them toward autovacuum) are counted, not listed: in
    every format, with or without rows beside them, and not at all when there are none."""
    counted = "Not listed: 12,345 quiet relations"
    for a in (advice(tables=[status("public.t")], quiet=12_345), advice(quiet=12_345)):
        md = render_markdown(a)
        assert "## Where each table stands" in md
        assert counted in md
        html = render_html(a)
        assert counted in section(html, "tables")
        assert ('id="tables-table"' in html) == bool(a.tables)
        out = io.StringIO()
        Console(file=out, width=200).print(render_text(a))
        assert counted in out.getvalue()
        assert ("dead / threshold" in out.getvalue()) == bool(a.tables)  # no empty table
    one = render_markdown(advice(quiet=1))
    assert "Not listed: 1 quiet relation," in one
    assert "Not listed" not in render_markdown(advice(tables=[status("public.t")]))
