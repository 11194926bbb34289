"""What each panel of ``vacuumlab watch`` shows, as rows of cells: a pure function of one
:class:`~vacuumlab.records.live.LiveView` and of the view's state (sort column, filter). The
App (tui/app.py) puts the rows on the screen; the keys change only the state, so they
never cost a statement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import Enum
from typing import Final

from rich.text import Text

from vacuumlab.records.live import Holder, LiveView, RunningVacuum, TableLive, Workers, Wraparound
from vacuumlab.records.live_detail import TableDetail
from vacuumlab.units import count, duration, rate, share

DASH: Final = "–"
#: Relations the queue panel lists at most: those nearest autovacuum in the chosen order.
QUEUE_ROWS: Final = 100
BAR_WIDTH: Final = 12
#: A bar's partial cell, in eighths.
_EIGHTHS: Final = " ▏▎▍▌▋▊▉"

Cells = tuple[str | Text, ...]


class Sort(Enum):
    """The queue's sort columns, in the order ``s`` cycles through them."""

    queue = "autovacuum's order"
    progress = "progress to threshold"
    dead = "dead tuples"
    rate = "dead tuples/s"
    start = "predicted start"
    name = "name"


def _rate_key(t: TableLive) -> tuple[bool, float]:
    return t.dead_per_second is None, -(t.dead_per_second or 0.0)


def _start_key(t: TableLive) -> tuple[bool, float]:
    return t.predicted_start_s is None, t.predicted_start_s or 0.0


#: Sort keys; sorted() is stable, so ties keep autovacuum's order.
SORT_KEYS: Final[dict[Sort, Callable[[TableLive], object]]] = {
    Sort.progress: lambda t: -t.progress,
    Sort.dead: lambda t: -t.dead,
    Sort.rate: _rate_key,
    Sort.start: _start_key,
    Sort.name: lambda t: t.label,
}


@dataclass(frozen=True, slots=True)
class Query:
    """What the keys set: the queue's sort column and the name filter."""

    sort: Sort = Sort.queue
    text: str = ""

    def next_sort(self) -> Query:
        order = list(Sort)
        return replace(self, sort=order[(order.index(self.sort) + 1) % len(order)])

    def filtered(self, text: str) -> Query:
        return replace(self, text=text.strip())

    def matches(self, label: str) -> bool:
        """Case-insensitive substring of ``schema.table``, as htop's filter."""
        return self.text.lower() in label.lower()


def queue(view: LiveView, query: Query, limit: int = QUEUE_ROWS) -> tuple[list[TableLive], int]:
    """The relations to list, first ``limit`` of them, and how many match the filter."""
    rows = [t for t in view.tables if query.matches(t.label)] if query.text else view.tables
    key = SORT_KEYS.get(query.sort)
    if key is not None:
        rows = sorted(rows, key=key)  # type: ignore[arg-type]  # each key returns one type
    return rows[:limit], len(rows)


def row_key(t: TableLive) -> str:
    """A queue row's key: its oid, and its database in a view of several (oids repeat from
    one database to the next)."""
    return str(t.oid) if t.database is None else f"{t.oid}@{t.database}"


def parse_row_key(key: str) -> tuple[int, str | None]:
    """The oid and the database (None: the one database) of a row's key."""
    oid, at, database = key.partition("@")  # an oid has no @; a database name may
    return int(oid), database if at else None


def vacuums(view: LiveView, query: Query) -> list[RunningVacuum]:
    return [v for v in view.vacuums if query.matches(v.relation)] if query.text else view.vacuums


# -- cells ------------------------------------------------------------------------------------

QUEUE_COLUMNS: Final = (
    "table",
    "state",
    "dead",
    "threshold",
    "to threshold",
    "inserted / threshold",
    "dead/s",
    "starts in",
    "last vacuum took",
)
VACUUM_COLUMNS: Final = (
    "pid",
    "table",
    "by",
    "phase",
    "heap scanned",
    "vacuumed",
    "blocks",
    "index passes",
    "dead items",
    "elapsed",
    "delay",
    "ETA",
)
HOLDER_COLUMNS: Final = ("kind", "holder", "database", "user", "age", "xid age", "holds here")
WRAP_COLUMNS: Final = (
    "counter",
    "oldest age",
    "database",
    "to forcing",
    "forcing at",
    "failsafe at",
    "oldest here",
)


def bar(fraction: float, width: int = BAR_WIDTH, style: str = "green") -> Text:
    """A horizontal bar, to an eighth of a cell; past 1 it is full and turns red."""
    shown = min(max(fraction, 0.0), 1.0)
    eighths = round(shown * width * 8)
    full, part = divmod(eighths, 8)
    body = "█" * full + (_EIGHTHS[part] if part else "")
    text = Text(body, style="red" if fraction >= 1.0 else style)
    text.append("·" * (width - len(body)), style="dim")
    return text


def heap_bar(v: RunningVacuum, width: int = BAR_WIDTH) -> Text:
    """Blocks vacuumed (solid) within blocks scanned (shaded) against the heap's total."""
    vacuumed = round(v.vacuumed_share * width)
    scanned = max(round(v.scanned_share * width), vacuumed)
    text = Text("█" * vacuumed, style="green")
    text.append("▒" * (scanned - vacuumed), style="yellow")
    text.append("·" * (width - scanned), style="dim")
    text.append(f" {v.scanned_share:4.0%}")
    return text


def state(t: TableLive) -> Text:
    if t.running:
        return Text("running", style="bold green")
    if t.forced is not None:
        return Text(f"forced {t.forced}", style="bold red")
    if t.due:
        return Text("due", style="bold yellow")
    if not t.autovacuum_enabled:
        return Text("off", style="magenta")
    return Text("")


def starts_in(t: TableLive, view: LiveView) -> str:
    if t.running:
        return "now"
    if t.predicted_start_s is not None:
        return duration(t.predicted_start_s)
    # No rates before the second refresh; after it, no start within the simulated window.
    return DASH if view.interval_s is None else f"> {duration(view.horizon_s)}"


def queue_cells(t: TableLive, view: LiveView) -> Cells:
    progress = bar(t.progress)
    progress.append(f" {share(t.progress):>5}")
    inserts = "off" if t.insert_threshold is None else f"{count(t.inserted)} / "
    if t.insert_threshold is not None:
        inserts += count(t.insert_threshold)
    return (
        t.label,
        state(t),
        count(t.dead),
        count(t.vacuum_threshold),
        progress,
        inserts,
        DASH if t.dead_per_second is None else rate(t.dead_per_second),
        starts_in(t, view),
        DASH if t.last_vacuum_s is None else duration(t.last_vacuum_s),
    )


def vacuum_cells(v: RunningVacuum) -> Cells:
    passes = str(v.index_vacuum_count)
    if v.indexes_total:
        passes += f" ({v.indexes_processed or 0}/{v.indexes_total} indexes)"
    items = DASH if v.dead_items is None else count(v.dead_items)
    if v.dead_items_share is not None:
        items += f" ({share(v.dead_items_share)} of max)"
    delay = _seconds(v.delay_s)
    if v.delay_s is not None and v.elapsed_s:
        delay += f" ({share(v.delay_s / v.elapsed_s)})"
    return (
        str(v.pid),
        v.relation,
        "autovacuum" if v.is_autovacuum else "VACUUM",
        v.phase,
        heap_bar(v),
        f"{v.vacuumed_share:.0%}",
        f"{count(v.heap_blks_scanned)} / {count(v.heap_blks_total)}",
        passes,
        items,
        _seconds(v.elapsed_s),
        delay,
        _seconds(v.eta_s),
    )


def holder_cells(h: Holder) -> Cells:
    return (
        h.kind,
        h.name,
        h.database or DASH,
        h.user_name or DASH,
        _seconds(h.age_s),
        DASH if h.xid_age is None else count(h.xid_age),
        Text("yes", style="bold red") if h.holds_here else Text("no", style="dim"),
    )


def wrap_cells(w: Wraparound) -> Cells:
    fraction = w.share
    to_forcing = Text(DASH) if fraction is None else bar(fraction, style="cyan")
    if fraction is not None:
        to_forcing.append(f" {share(fraction):>5}")
    oldest = DASH
    if w.table is not None:
        oldest = f"{w.table} {count(w.table_age or 0)}"
        if w.table_forcing_age is not None:
            oldest += f" (own limit {count(w.table_forcing_age)})"
    return (
        w.counter,
        DASH if w.age is None else count(w.age),
        w.database or DASH,
        to_forcing,
        count(w.forcing_age),
        DASH if w.failsafe_age is None else count(w.failsafe_age),
        oldest,
    )


def workers_line(w: Workers) -> Text:
    text = Text("workers ", style="bold")
    text.append(f"{w.busy} busy of {w.available}", style="red" if w.busy >= w.available else "")
    text.append("   ")
    text.append(bar(w.busy / w.available if w.available else 0.0, width=w.available or 1))
    if w.cost_limit is not None:
        each = DASH if w.cost_limit_each is None else f"{w.cost_limit_each:,.0f}"
        text.append(f"   cost limit {w.cost_limit:,}, {each} each")
        text.append(f" ({w.sharing} sharing it)" if w.sharing else "")
    if w.cost_delay_ms is not None:
        text.append(f"   delay {w.cost_delay_ms:g} ms")
    return text


def status_line(
    view: LiveView | None,
    *,
    seconds: float | None,
    statements: int | None,
    every_s: float,
    paused: bool,
    query: Query,
) -> Text:
    """The top line: server, when the view was taken, what a refresh cost, the view's state."""
    text = Text("vacuumlab watch", style="bold")
    if view is not None:
        v = view.version_num
        text.append(f" · {_databases(view)} · PostgreSQL {v // 10000}.{v % 100}")
        text.append(f" · {view.taken_at.astimezone():%H:%M:%S}")
    if seconds is not None and statements is not None:
        text.append(f" · refresh {seconds:.2f} s, {statements} statements")
    text.append(f" · every {every_s:g} s")
    text.append(f" · sort: {query.sort.value}")
    if query.text:
        text.append(f" · filter: {query.text}", style="bold cyan")
    if paused:
        text.append("  PAUSED", style="bold reverse yellow")
    return text


def _databases(view: LiveView) -> str:
    """The database watched, or how many (--all-databases)."""
    if not view.databases and not view.unread:
        return view.database
    read = len(view.databases)
    text = f"{read} database{'s' if read != 1 else ''}"
    return text + (f" ({len(view.unread)} not read)" if view.unread else "")


def unread_lines(view: LiveView) -> Text:
    """A line per database not read (--all-databases): why, and the fix."""
    text = Text()
    for n, (name, note) in enumerate(view.unread.items()):
        if n:
            text.append("\n")
        text.append(f"not read: {name}", style="bold yellow")
        # The name once: the reason's "cannot connect to database NAME: " would repeat it.
        text.append(f" · {note.reason.removeprefix(f'cannot connect to database {name}: ')}")
        if note.fix:
            text.append(f" · {note.fix}", style="cyan")
    return text


def queue_title(shown: int, matched: int, view: LiveView, query: Query) -> str:
    title = f"Queue: {matched:,} relation{'s' if matched != 1 else ''}"
    if query.text:
        title += f" match {query.text!r} (of {len(view.tables):,})"
    if shown < matched:
        title += f", the first {shown:,} shown"
    if view.quiet:
        title += f"; {view.quiet:,} quiet, not listed (nothing moves them toward autovacuum)"
    return title


def vacuums_title(view: LiveView, query: Query) -> str:
    title = f"Running vacuums: {len(view.vacuums)}"
    if query.text:
        title += f", {len(vacuums(view, query))} match {query.text!r}"
    return title


def banner(error: str, every_s: float, last: datetime | None) -> str:
    text = f"connection lost: {error} · retrying every {every_s:g} s"
    if last is not None:
        text += f" · showing the view of {last.astimezone():%H:%M:%S}"
    return text


# -- details ------------------------------------------------------------------------------------


def detail_lines(d: TableDetail, row: TableLive | None, view: LiveView) -> list[Text]:
    """The details of one relation: thresholds with how they are made, freeze ages, what the
    live view says of it, the settings that apply and the last vacuums."""
    lines = [Text(d.label, style="bold"), Text(f"oid {d.oid}, {count(d.reltuples)} reltuples")]
    lines.append(Text(""))
    lines += _threshold_lines(d)
    lines.append(Text(""))
    if row is not None:
        lines.append(
            Text(
                f"state {state(row).plain or 'waiting'} · dead/s "
                f"{DASH if row.dead_per_second is None else rate(row.dead_per_second)}"
                f" · starts in {starts_in(row, view)}"
                f" · last vacuum took {_seconds(row.last_vacuum_s)}"
            )
        )
    lines.append(Text(""))
    lines.append(Text("Settings that apply", style="bold"))
    lines += [Text(f"  {s.name:<40} {s.value:<28} {s.source}") for s in d.settings]
    lines.append(Text(""))
    lines.append(Text("Last vacuums", style="bold"))
    lines += _history_lines(d)
    return lines


def _threshold_lines(d: TableDetail) -> list[Text]:
    made = f"{d.vacuum_base:g} + {d.vacuum_scale_factor:g} × {count(d.reltuples)}"
    if d.vacuum_max is not None:
        made = f"min({count(d.vacuum_max)}, {made})"
    lines = [Text("Thresholds", style="bold")]
    lines.append(Text(f"  vacuum   {count(d.dead)} dead of {count(d.vacuum_threshold)} = {made}"))
    if d.insert_threshold is None or d.insert_base is None:
        lines.append(Text("  insert   off"))
    else:
        made = f"{d.insert_base:g} + {d.insert_scale_factor:g} × {count(d.reltuples)}"
        if d.unfrozen_share < 1.0:
            made += f" × {d.unfrozen_share:.2f} unfrozen"
        lines.append(
            Text(f"  insert   {count(d.inserted)} inserted of {count(d.insert_threshold)} = {made}")
        )
    if d.analyze_threshold is not None:
        lines.append(
            Text(f"  analyze  {count(d.modified)} modified of {count(d.analyze_threshold)}")
        )
    for what, age, limit in (
        ("xid age ", d.frozenxid_age, d.freeze_max_age),
        ("mxid age", d.minmxid_age, d.multixact_freeze_max_age),
    ):
        shown = DASH if age is None else f"{count(age)} of {count(limit)}"
        lines.append(Text(f"  {what} {shown} (forced vacuum past it)"))
    if d.forced is not None:
        lines.append(Text(f"  past its {d.forced} freeze limit: vacuum forced", style="bold red"))
    if not d.autovacuum_active:
        lines.append(Text("  autovacuum is off on the server: only forced vacuums run"))
    elif not d.table_enabled:
        lines.append(Text("  autovacuum_enabled is off for it: only forced vacuums run"))
    return lines


def _history_lines(d: TableDetail) -> list[Text]:
    def ago(moment: datetime | None) -> str:
        if moment is None:
            return "never"
        return f"{moment.astimezone():%Y-%m-%d %H:%M:%S} ({duration(_since(moment, d))} ago)"

    lines = [
        Text(f"  autovacuum   {ago(d.last_autovacuum)}, {_times(d.autovacuum_count)}"),
        Text(f"  VACUUM       {ago(d.last_vacuum)}, {_times(d.vacuum_count)}"),
        Text(f"  autoanalyze  {ago(d.last_autoanalyze)}"),
        Text(f"  ANALYZE      {ago(d.last_analyze)}"),
    ]
    if d.total_autovacuum_s is not None:
        lines.append(
            Text(
                f"  time in autovacuum {_seconds(d.total_autovacuum_s)}, "
                f"in VACUUM {_seconds(d.total_vacuum_s)}"
            )
        )
    return lines


def _since(moment: datetime, d: TableDetail) -> float:
    return max((d.taken_at - moment).total_seconds(), 0.0)


def _times(n: int | None) -> str:
    return DASH if n is None else f"{n:,} time{'s' if n != 1 else ''}"


def _seconds(value: float | None) -> str:
    return DASH if value is None else duration(value)


HELP: Final[Sequence[tuple[str, str]]] = (
    ("s", "sort the queue by the next column (autovacuum's order, progress, dead tuples, "
     "dead tuples/s, predicted start, name)"),
    ("/", "filter by schema or table name, or database with --all-databases (Enter keeps it, "
     "Esc clears it)"),
    ("p, space", "pause: no refresh, no statement, until pressed again"),
    ("Enter", "the selected table's details: thresholds, settings that apply, last vacuums"),
    ("Tab", "move between the panels"),
    ("↑ ↓ PgUp PgDn", "move in a panel"),
    ("?", "this help"),
    ("q", "quit"),
)  # fmt: skip
