"""The terminal view of a snapshot: pure, it reads only the model.

Every string that came from the database is wrapped in :class:`rich.text.Text`, which never
interprets markup, so a table called ``[red]x`` prints as itself. Times are shown relative to
when the snapshot was taken, so a saved snapshot renders exactly as it did live.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from rich.console import Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from vacuumlab.model import horizon as hm
from vacuumlab.records.snapshot import Relation, Snapshot, Table

#: Settings shown in the summary, in reading order: when, how much, how fast, freezing.
KEY_SETTINGS = (
    "autovacuum",
    "autovacuum_naptime",
    "autovacuum_max_workers",
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_max_threshold",
    "autovacuum_vacuum_insert_threshold",
    "autovacuum_vacuum_insert_scale_factor",
    "autovacuum_analyze_threshold",
    "autovacuum_analyze_scale_factor",
    "autovacuum_vacuum_cost_delay",
    "autovacuum_vacuum_cost_limit",
    "vacuum_cost_limit",
    "vacuum_cost_page_hit",
    "vacuum_cost_page_miss",
    "vacuum_cost_page_dirty",
    "autovacuum_freeze_max_age",
    "autovacuum_multixact_freeze_max_age",
    "maintenance_work_mem",
    "autovacuum_work_mem",
)


def render(snapshot: Snapshot, *, limit: int = 25) -> RenderableType:
    """Everything worth reading at a glance, most pressing first."""
    parts: list[RenderableType] = [header(snapshot), settings_table(snapshot)]
    parts.append(tables_table(snapshot, limit=limit))
    options = options_table(snapshot)
    if options is not None:
        parts.append(options)
    parts.extend(horizon_tables(snapshot))
    if snapshot.vacuums:
        parts.append(vacuums_table(snapshot))
    parts.extend(activity_lines(snapshot))
    if snapshot.notes:
        parts.append(notes_table(snapshot))
    return Group(*parts)


def header(snapshot: Snapshot) -> Text:
    server = snapshot.server
    version = server.version.split(" on ")[0]
    text = Text(f"{version}", style="bold")
    text.append(f" · database {server.database} · user {server.user}")
    text.append(f" · taken {snapshot.taken_at:%Y-%m-%d %H:%M:%S %Z}")
    text.append(f" · vacuumlab {snapshot.vacuumlab_version}")
    return text


def settings_table(snapshot: Snapshot) -> RichTable:
    table = RichTable(title="Autovacuum settings", title_justify="left", expand=False)
    for column in ("setting", "value", "source"):
        table.add_column(column)
    for name in KEY_SETTINGS:
        setting = snapshot.setting(name)
        if setting is None:
            continue
        value = setting.setting + (f" {setting.unit}" if setting.unit else "")
        style = "" if setting.source == "default" else "bold"
        table.add_row(name, Text(value, style=style), Text(setting.source))
    return table


_TABLE_COLUMNS = (
    "table",
    "live",
    "dead",
    "dead %",
    "ins since vac",
    "last autovac",
    "autovacs",
    "heap",
    "indexes",
    "toast",
    "xid age",
)


def tables_table(snapshot: Snapshot, *, limit: int) -> RichTable:
    """The tables with the most dead tuples, each followed by its TOAST relation."""
    ranked = sorted(snapshot.tables, key=_dead_rank)
    shown = ranked[:limit]
    title = f"Tables by dead tuples ({len(shown)} of {len(snapshot.tables)})"
    if snapshot.sizes == "estimated":  # a live view's snapshot (watch/source.py), replayed
        title += ", sizes estimated from pg_class.relpages"
    table = RichTable(title=title, title_justify="left")
    for column in _TABLE_COLUMNS:
        if column == "table":
            table.add_column(column, no_wrap=True)
        else:
            table.add_column(column, justify="right", no_wrap=True)
    for entry in shown:
        table.add_row(*_relation_cells(entry.heap, snapshot.taken_at, entry))
        if entry.toast is not None and _in_use(entry.toast):
            table.add_row(*_relation_cells(entry.toast, snapshot.taken_at, None), style="dim")
    return table


def _in_use(toast: Relation) -> bool:
    """An empty TOAST relation (nothing stored, nothing dead) is not worth a row."""
    return bool(toast.heap_bytes or toast.n_dead_tup or toast.n_live_tup)


def _dead_rank(table: Table) -> tuple[int, str, str]:
    dead = (table.heap.n_dead_tup or 0) + (table.toast.n_dead_tup or 0 if table.toast else 0)
    return (-dead, table.heap.schema_name, table.heap.name)


def _relation_cells(rel: Relation, now: datetime, table: Table | None) -> list[Text]:
    name = Text(rel.qualified_name) if table is not None else Text("  ↳ toast")
    live, dead = rel.n_live_tup or 0, rel.n_dead_tup or 0
    share = f"{100 * dead / (live + dead):.1f}" if live + dead else "-"
    return [
        name,
        Text(_count(rel.n_live_tup)),
        Text(_count(rel.n_dead_tup)),
        Text(share),
        Text(_count(rel.n_ins_since_vacuum)),
        Text(ago(rel.last_autovacuum, now)),
        Text(_count(rel.autovacuum_count)),
        Text(size(rel.heap_bytes)),
        Text(f"{size(rel.index_bytes)} ({rel.n_indexes})"),
        Text(size(rel.toast_bytes) if table is not None else ""),
        Text(_count(rel.frozenxid_age)),
    ]


def options_table(snapshot: Snapshot) -> RichTable | None:
    """Per-table settings (reloptions), the TOAST relation's as ``toast.*``."""
    table = _titled("Per-table settings", "table", "settings")
    for entry in sorted(snapshot.tables, key=lambda t: (t.heap.schema_name, t.heap.name)):
        options = dict(entry.heap.reloptions)
        if entry.toast is not None:
            options |= {f"toast.{k}": v for k, v in entry.toast.reloptions.items()}
        if options:
            text = ", ".join(f"{k}={v}" for k, v in sorted(options.items()))
            table.add_row(Text(entry.heap.qualified_name), Text(text))
    return table if table.row_count else None


def horizon_tables(snapshot: Snapshot) -> Iterator[RichTable]:
    """Who holds the xmin horizon back: sessions (a running lazy VACUUM is none, see
    model/horizon.py), replication slots, prepared transactions."""
    now = snapshot.taken_at
    backends = hm.holding(snapshot).backends
    if backends:
        table = _titled(
            "Sessions holding the xmin horizon",
            "pid",
            "state",
            "xmin age",
            "transaction for",
            "user",
            "application",
            "query",
        )
        for b in backends:
            table.add_row(
                str(b.pid),
                Text(b.state or b.backend_type or "?"),
                _count(b.xmin_age),
                ago(b.xact_start, now, suffix=""),
                Text(b.user_name or ""),
                Text(b.application_name or ""),
                Text(_one_line(b.query, 60)),
            )
        yield table
    if snapshot.slots:
        table = _titled(
            "Replication slots", "slot", "type", "active", "xmin age", "catalog xmin age"
        )
        for s in snapshot.slots:
            table.add_row(
                Text(s.slot_name),
                s.slot_type,
                "yes" if s.active else "no",
                _count(s.xmin_age),
                _count(s.catalog_xmin_age),
            )
        yield table
    if snapshot.prepared:
        table = _titled("Prepared transactions", "gid", "xid age", "prepared", "owner", "database")
        for p in snapshot.prepared:
            table.add_row(
                Text(p.gid),
                _count(p.xid_age),
                ago(p.prepared, now),
                Text(p.owner),
                Text(p.database),
            )
        yield table


def vacuums_table(snapshot: Snapshot) -> RichTable:
    table = _titled(
        "Vacuums running",
        "pid",
        "relation",
        "kind",
        "phase",
        "scanned",
        "vacuumed",
        "index passes",
        "running for",
    )
    for v in snapshot.vacuums:
        total = v.heap_blks_total or 1
        table.add_row(
            str(v.pid),
            Text(v.relation or str(v.relid)),
            "auto" if v.is_autovacuum else "manual",
            Text(v.phase),
            f"{100 * v.heap_blks_scanned / total:.0f} %",
            f"{100 * v.heap_blks_vacuumed / total:.0f} %",
            str(v.index_vacuum_count),
            ago(v.started, snapshot.taken_at, suffix=""),
        )
    return table


def activity_lines(snapshot: Snapshot) -> Iterator[Text]:
    """One line each for autovacuum I/O, checkpoints, the background writer, WAL and xids."""
    # Tables and indexes: from 18 pg_stat_io also counts WAL (object 'wal'), shown below.
    workers = [
        r for r in snapshot.io if r.backend_type == "autovacuum worker" and r.object != "wal"
    ]
    if workers:
        read = sum(r.read_bytes or 0 for r in workers)
        written = sum(r.write_bytes or 0 for r in workers)
        hits = sum(r.hits or 0 for r in workers)
        yield Text(
            f"autovacuum worker I/O: read {size(read)}, wrote {size(written)}, "
            f"{_count(hits)} buffer hits"
        )
    if snapshot.checkpointer:
        c = snapshot.checkpointer
        yield Text(
            f"checkpoints: {c.num_timed} timed, {c.num_requested} requested, "
            f"{_count(c.buffers_written)} buffers written"
        )
    if snapshot.wal and snapshot.wal.wal_bytes is not None:
        w = snapshot.wal
        yield Text(
            f"WAL: {size(w.wal_bytes)} in {_count(w.wal_records)} records, "
            f"{_count(w.wal_fpi)} full-page images; insert position {w.lsn}"
        )
    if snapshot.xids and snapshot.databases:
        oldest = max(snapshot.databases, key=lambda d: d.frozenxid_age)
        yield Text(
            f"next xid {_count(snapshot.xids.next_xid)}; oldest database "
            f"{oldest.name} at xid age {_count(oldest.frozenxid_age)}"
        )


def notes_table(snapshot: Snapshot) -> RichTable:
    table = _titled("Not collected", "probe", "why", "fix")
    for note in snapshot.notes:
        table.add_row(note.probe, Text(note.reason), Text(note.fix or ""))
    return table


def _titled(title: str, *columns: str) -> RichTable:
    table = RichTable(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    return table


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _one_line(text: str | None, width: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def size(value: int | None) -> str:
    """Bytes in the units PostgreSQL's pg_size_pretty uses (powers of 1024)."""
    if value is None:
        return "-"
    amount = float(value)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(amount) < 1024 or unit == "TB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    raise AssertionError("unreachable")


def ago(moment: datetime | None, now: datetime, *, suffix: str = " ago") -> str:
    """``moment`` relative to ``now``: ``3m 20s ago``; ``never`` when None."""
    if moment is None:
        return "never"
    seconds = max(0, int((now - moment).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")]
    shown = [f"{n}{u}" for n, u in parts if n][:2] or ["0s"]
    return " ".join(shown) + suffix
