"""A verification (``advise --verify``) in the terminal and in Markdown: per watched relation,
the simulator's prediction beside the measurement before and after the changes; a verdict per
recommendation; what was changed and restored, and what was skipped.

Pure: it reads the :class:`~vacuumlab.records.verification.Verification` record only. Names
and values came from the database or the advice: never markup in the terminal, escaped in
Markdown.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from vacuumlab.records.verification import TableResult, Verification, WindowFigures
from vacuumlab.report.markdown import md_table, md_text
from vacuumlab.units import count, duration

TABLE_COLUMNS = (
    "relation",
    "peak dead: predicted without → with",
    "measured before → after",
    "mean dead before → after",
    "vacuums/h: predicted without → with",
    "measured before → after",
    "size growth before → after",
)
OUTCOME_COLUMNS = ("change", "on", "promised", "verdict", "detail")
CHANGE_COLUMNS = ("change", "on", "value", "was", "restored")
SKIPPED_COLUMNS = ("setting", "on", "why")
JOINT = (
    "All changes were applied together: a verdict says whether the relation moved the way "
    "that recommendation promised, not how much of the move it caused."
)
_VERDICT_STYLE = {
    "moved as advised": "green",
    "did not move": "bold red",
    "not measurable here": "dim",
}


def headline(v: Verification) -> str:
    a = v.advice
    where = (
        f"Advice verified on {a.server.database} ({a.server.version.split(' on ')[0]}): "
        f"advised over {a.interval_s or 0:.0f} s"
    )
    if not v.applied:
        return f"{where}; nothing was changed, so nothing was measured"
    return (
        f"{where}, then {duration(v.window_s)} before and {duration(v.window_s)} after the "
        f"changes (after {duration(v.settle_s)} to settle)"
    )


def restore_line(v: Verification) -> str:
    if not v.applied:
        return "Nothing was changed."
    if v.restored:
        return f"Every one of the {len(v.applied)} changed settings was restored and read back."
    return "NOT EVERYTHING WAS RESTORED: " + "; ".join(v.notes)


def _pair(low: float | None, high: float | None, fmt: str = "count") -> str:
    def one(value: float | None) -> str:
        if value is None:
            return "—"
        return count(value) if fmt == "count" else f"{value:,.0f}"

    return f"{one(low)} → {one(high)}"


def _growth(figures: WindowFigures) -> str:
    grown = figures.growth_bytes
    if grown is None:
        return "—"
    return f"{grown / 1024:+,.0f} kB"


def table_row(t: TableResult) -> list[str]:
    p = t.prediction
    return [
        t.relation,
        "—" if p is None else _pair(p.peak_dead_without, p.peak_dead_with),
        _pair(t.before.peak_dead, t.after.peak_dead),
        _pair(t.before.mean_dead, t.after.mean_dead),
        "—" if p is None else _pair(p.vacuums_per_hour_without, p.vacuums_per_hour_with, "n"),
        _pair(t.before.vacuums_per_hour, t.after.vacuums_per_hour, "n"),
        f"{_growth(t.before)} → {_growth(t.after)}",
    ]


def outcome_rows(v: Verification) -> list[list[str]]:
    return [
        [
            f"{o.setting} = {o.value}",
            o.relation or "server",
            ", ".join(o.promised) or "—",
            o.verdict,
            o.detail,
        ]
        for o in v.outcomes
    ]


def change_rows(v: Verification) -> list[list[str]]:
    return [
        [
            a.setting,
            a.relation or "server",
            a.value,
            a.previous if a.previous is not None else "(not set)",
            "yes" if a.restored else "NO",
        ]
        for a in v.applied
    ]


def skipped_rows(v: Verification) -> list[list[str]]:
    return [[s.setting, s.relation or "server", s.reason] for s in v.skipped]


def render(v: Verification) -> RenderableType:
    """The verification as rich tables; nothing from the database is read as markup."""
    parts: list[RenderableType] = [Text(headline(v), style="bold")]
    parts.append(_table("Measured against predicted", TABLE_COLUMNS, map(table_row, v.tables)))
    outcomes = Table(*OUTCOME_COLUMNS, title="Verdicts", title_justify="left", show_lines=True)
    for row in outcome_rows(v):
        style = _VERDICT_STYLE.get(row[3], "")
        outcomes.add_row(*[Text(c, style=style if i == 3 else "") for i, c in enumerate(row)])
    if v.outcomes:
        parts += [outcomes, Text(JOINT, style="dim")]
    if v.applied:
        parts.append(_table("Changed, then restored", CHANGE_COLUMNS, change_rows(v)))
    if v.skipped:
        parts.append(_table("Not applied", SKIPPED_COLUMNS, skipped_rows(v)))
    parts.append(Text(restore_line(v), style="green" if v.restored else "bold red"))
    parts += [Text(f"note: {n}", style="dim") for n in v.notes if v.restored]
    return Group(*parts)


def _table(title: str, columns: tuple[str, ...], rows: Iterable[Sequence[str]]) -> Table:
    table = Table(*columns, title=title, title_justify="left")
    for row in rows:
        table.add_row(*[Text(cell) for cell in row])
    return table


def render_markdown(v: Verification) -> str:
    """The verification as Markdown; database text is escaped."""
    lines = [f"# {md_text(headline(v))}", ""]
    lines += ["## Measured against predicted", ""]
    lines += [md_table(TABLE_COLUMNS, [table_row(t) for t in v.tables]), ""]
    if v.outcomes:
        lines += ["## Verdicts", "", md_table(OUTCOME_COLUMNS, outcome_rows(v)), "", JOINT, ""]
    if v.applied:
        lines += ["## Changed, then restored", "", md_table(CHANGE_COLUMNS, change_rows(v)), ""]
    if v.skipped:
        lines += ["## Not applied", "", md_table(SKIPPED_COLUMNS, skipped_rows(v)), ""]
    lines += [md_text(restore_line(v)), ""]
    lines += [f"- {md_text(n)}" for n in v.notes if v.restored]
    return "\n".join(lines).rstrip() + "\n"
