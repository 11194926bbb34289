"""``vacuumlab capture``: a workload profile of some tables over a window, read-only.

The shape and statistics come from the catalogs (:mod:`vacuumlab.collect.table_shape`); the
workload from two reads, ``seconds`` apart, of ``pg_stat_statements`` and of the tables'
counters in ``pg_stat_all_tables``. Each statement's text is parsed (pglast) into its
structure and dropped: a profile never holds a query text, a parameter or a row value.

Without ``pg_stat_statements`` (not installed, not loaded, not readable) the profile comes
from the counters alone (``source="counters"``), with a note saying why. Statements the
extension cannot see (with ``track = top``, those inside functions and DO blocks) show as a
share of the counters the visible statements do not explain.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import psycopg
from psycopg import errors

from vacuumlab import __version__
from vacuumlab.collect.parse import Structure, Target, structure
from vacuumlab.collect.probes import fetch_in_schema
from vacuumlab.collect.table_shape import Resolved, Shaped, resolve, shape_of
from vacuumlab.errors import Interrupted, VacuumlabError
from vacuumlab.pg.connect import Session, Timeouts, connect, first_line
from vacuumlab.pg.extensions import extension_schema
from vacuumlab.records.profile import (
    CapturedTable,
    Note,
    Profile,
    Rates,
    Setting,
    Statement,
)
from vacuumlab.records.snapshot import Setting as ServerSetting

#: Read-only (connect()'s default) and giving way at once to any lock.
TIMEOUTS = Timeouts(statement_ms=10_000, lock_ms=100)
APPLICATION_NAME = "vacuumlab-capture"
#: Below this share of the counters' row changes explained by visible statements, a note
#: says that statements are missing, and why.
EXPLAINED_ENOUGH = 0.9
#: The session's own settings (connect() sets them), not the server's.
_OWN_SETTINGS = {"statement_timeout", "lock_timeout"}
_CHANGES = {"insert", "update", "delete"}
_PRIVILEGE_FIX = "GRANT pg_monitor TO {user}"


@dataclass(frozen=True, slots=True)
class _SessionFacts:
    track: str | None
    search_path: list[str]
    block_size: int


@dataclass(frozen=True, slots=True)
class _Counters:
    relid: int
    leaf: int
    inserts: int
    updates: int
    hot_updates: int
    newpage_updates: int | None
    deletes: int
    dead_tuples: int
    autovacuums: int
    autoanalyzes: int


@dataclass(frozen=True, slots=True)
class _Entry:
    """One queryid's figures in pg_stat_statements (None: other roles' hidden entries)."""

    queryid: int | None
    calls: int
    rows: int
    total_ms: float
    query: str | None


@dataclass
class _Notes:
    """The notes so far, each handed on as it is taken (the terminal shows it at once)."""

    on_note: Callable[[Note], None]
    taken: list[Note] = field(default_factory=list)

    def add(self, what: str, reason: str) -> None:
        self.take(Note(what=what, reason=reason))

    def take(self, note: Note) -> None:
        self.taken.append(note)
        self.on_note(note)


def capture(
    dsn: str,
    tables: Sequence[str],
    seconds: float,
    *,
    wait: Callable[[float], None] = time.sleep,
    on_note: Callable[[Note], None] = lambda note: None,
) -> Profile:
    """A profile of ``tables`` (names as SQL writes them) over ``seconds``.

    ``wait`` passes the window (the CLI's shows a countdown); Ctrl-C in it ends the window
    early, and the profile covers the shorter window, saying so.
    """
    if not tables:
        raise VacuumlabError("capture needs at least one --table")
    with open_session(dsn) as session:
        return _Capture(session, _Notes(on_note)).run(tables, seconds, wait)


def open_session(dsn: str) -> Session:
    """The capture's session: read-only (``default_transaction_read_only``), so a write
    fails, and giving way at once to any lock."""
    return connect(dsn, read_only=True, timeouts=TIMEOUTS, application_name=APPLICATION_NAME)


class _Capture:
    def __init__(self, session: Session, notes: _Notes) -> None:
        self.session = session
        self.notes = notes
        [self.facts] = session.fetch("capture_session", _SessionFacts)

    def run(self, names: Sequence[str], seconds: float, wait: Callable[[float], None]) -> Profile:
        s = self.session
        captured_at = datetime.now(UTC)
        resolved = list({t.oid: t for t in (resolve(s, name) for name in names)}.values())
        shaped = [shape_of(s, table) for table in resolved]
        for table in shaped:
            for note in table.notes:
                self.notes.take(note)
        schema = self._statements_schema()
        before = self._counters(resolved)
        entries = self._entries(schema, showtext=False) if schema is not None else None
        if entries is None:
            schema = None
        started = time.monotonic()
        self._wait(wait, seconds)
        # Rounded as the profile keeps it, so that its rates × seconds give the counts back.
        elapsed = round(time.monotonic() - started, 3)
        after = self._counters(resolved)
        later = self._entries(schema, showtext=True) if schema is not None else None
        if entries is None or later is None:
            return self._profile(captured_at, elapsed, shaped, before, after, None)
        found = self._statements(shaped, entries, later, elapsed)
        return self._profile(captured_at, elapsed, shaped, before, after, found)

    # -- the window ----------------------------------------------------------------------

    def _wait(self, wait: Callable[[float], None], seconds: float) -> None:
        started = time.monotonic()
        try:
            wait(seconds)
        except (Interrupted, KeyboardInterrupt):
            self.notes.add(
                "the window",
                f"ended early (Ctrl-C) after {time.monotonic() - started:.0f} s of "
                f"{seconds:.0f} s: the rates are over the shorter window",
            )

    def _counters(self, tables: Iterable[Resolved]) -> dict[int, dict[int, _Counters]]:
        """Each captured table's leaves' counters (a table outside a partition tree is its
        own only leaf), by the table's oid, then the leaf's."""
        rows = self.session.fetch("capture_counters", _Counters, {"oids": [t.oid for t in tables]})
        found: dict[int, dict[int, _Counters]] = {}
        for row in rows:
            found.setdefault(row.relid, {})[row.leaf] = row
        return found

    # -- pg_stat_statements --------------------------------------------------------------

    def _statements_schema(self) -> str | None:
        """The schema of pg_stat_statements, or None (and a note) where it cannot be read."""
        schema = extension_schema(self.session, "pg_stat_statements")
        if schema is None:
            self._counters_only(
                f"pg_stat_statements is not installed in database {self.session.info.database}"
                " (CREATE EXTENSION pg_stat_statements, with the library in "
                "shared_preload_libraries)"
            )
        elif self.facts.track is None:
            self._counters_only(
                "pg_stat_statements is installed but its library is not loaded: add it to "
                "shared_preload_libraries (a restart)"
            )
            return None
        return schema

    def _counters_only(self, reason: str) -> None:
        self.notes.add(
            "statements",
            f"{reason}; the profile comes from the table counters alone, and replays as a "
            "synthetic mix at their rates",
        )

    def _entries(self, schema: str, *, showtext: bool) -> dict[int | None, _Entry] | None:
        """This database's entries by queryid; None (and a note) when they cannot be read."""
        try:
            rows = fetch_in_schema(
                self.session, "capture_statements", _Entry, schema, {"showtext": showtext}
            )
        except psycopg.DatabaseError as exc:
            if self.session.conn.closed:
                raise VacuumlabError(f"lost the connection: {first_line(exc)}") from None
            fix = ""
            if isinstance(exc, errors.InsufficientPrivilege):
                fix = f" ({_PRIVILEGE_FIX.format(user=self.session.info.user)})"
            self._counters_only(f"pg_stat_statements could not be read: {first_line(exc)}{fix}")
            return None
        return {row.queryid: row for row in rows}

    def _statements(
        self,
        shaped: Sequence[Shaped],
        before: dict[int | None, _Entry],
        after: dict[int | None, _Entry],
        seconds: float,
    ) -> list[Statement]:
        targets = [
            Target(t.shape.schema_name, t.shape.name, frozenset(c.name for c in t.shape.columns))
            for t in shaped
        ]
        found: list[Statement] = []
        for entry in after.values():
            calls, rows, total_ms = _delta(before.get(entry.queryid), entry)
            if calls <= 0:
                continue
            if entry.queryid is None:
                self.notes.add(
                    f"{calls} calls of other roles' statements",
                    f"their text is hidden from role {self.session.info.user} without "
                    "pg_read_all_stats (pg_monitor has it): they count as unexplained",
                )
                continue
            if entry.query is None:
                continue
            shape = structure(entry.query, targets, self.facts.search_path)
            if shape is not None:
                found.append(_statement(entry.queryid, shape, calls, rows, total_ms, seconds))
        return sorted(found, key=lambda st: (-st.calls_per_s, st.queryid))

    # -- the profile ---------------------------------------------------------------------

    def _profile(
        self,
        captured_at: datetime,
        seconds: float,
        shaped: Sequence[Shaped],
        before: dict[int, dict[int, _Counters]],
        after: dict[int, dict[int, _Counters]],
        statements: list[Statement] | None,
    ) -> Profile:
        tables = []
        for table in shaped:
            then, now = before.get(table.oid, {}), after.get(table.oid, {})
            if moved := sorted(then.keys() ^ now.keys()):
                self.notes.add(
                    table.shape.qualified,
                    f"{len(moved)} partition(s) attached, detached, created or dropped during "
                    "the window: their counters are left out of the rates, which come from the "
                    f"{len(then.keys() & now.keys())} partition(s) there from start to end",
                )
            rates, changed = _rates(then, now, seconds)
            explained = 0.0
            if statements is not None:
                explained = self._explained(table, statements, changed, seconds)
            tables.append(CapturedTable(shape=table.shape, rates=rates, explained=explained))
        return Profile(
            vacuumlab_version=__version__,
            captured_at=captured_at,
            seconds=seconds,
            server_version_num=self.session.info.version_num,
            block_size=self.facts.block_size,
            tables=tables,
            source="counters" if statements is None else "pg_stat_statements",
            statements=statements or [],
            track=self.facts.track,
            settings=self._settings(),
            literals=list(dict.fromkeys(v for t in shaped for v in t.literals)),
            notes=self.notes.taken,
        )

    def _explained(
        self, table: Shaped, statements: Sequence[Statement], changed: int, seconds: float
    ) -> float:
        """The share of the table's row changes its visible statements explain; a note where
        too many are unexplained, with the likely reason."""
        seen = sum(
            st.calls_per_s * st.rows_per_call * seconds
            for st in statements
            if st.table == table.shape.qualified and st.kind in _CHANGES
        )
        if changed <= 0:
            return 1.0
        share = min(1.0, seen / changed)
        if share < EXPLAINED_ENOUGH:
            self.notes.add(
                f"{1 - share:.0%} of the row changes of {table.shape.qualified}",
                f"came from statements pg_stat_statements did not show: {self._why_unseen()}; "
                "they replay as a synthetic mix at the counters' rates",
            )
        return round(share, 4)

    def _why_unseen(self) -> str:
        if self.facts.track == "top":
            return (
                "with pg_stat_statements.track = top, statements run inside functions and DO "
                "blocks are invisible (track = all shows them)"
            )
        if self.facts.track == "none":
            return "pg_stat_statements.track = none tracks no statement"
        return (
            "statements of other roles hidden from this one, entries evicted "
            "(pg_stat_statements.max), or changes made by COPY or triggers"
        )

    def _settings(self) -> list[Setting]:
        rows = self.session.fetch("settings", ServerSetting)
        return [
            Setting(name=r.name, setting=r.setting, unit=r.unit, source=r.source)
            for r in rows
            if r.name not in _OWN_SETTINGS
        ]


def _delta(before: _Entry | None, after: _Entry) -> tuple[int, int, float]:
    """An entry's calls, rows and time over the window; all of it when the entry is new, or
    was reset or evicted and made again in the window."""
    if before is None or after.calls < before.calls:
        return after.calls, after.rows, after.total_ms
    return after.calls - before.calls, after.rows - before.rows, after.total_ms - before.total_ms


def _statement(
    queryid: int, shape: Structure, calls: int, rows: int, total_ms: float, seconds: float
) -> Statement:
    return Statement(
        queryid=queryid,
        kind=shape.kind,
        table=shape.table,
        sets=list(shape.sets),
        filters=list(shape.filters),
        skip_locked=shape.skip_locked,
        limit=shape.limit,
        reads=list(shape.reads),
        calls_per_s=calls / seconds,
        rows_per_call=rows / calls,
        mean_ms=total_ms / calls,
    )


def _rates(
    before: dict[int, _Counters], after: dict[int, _Counters], seconds: float
) -> tuple[Rates, int]:
    """The counters' rates over the window, and the rows changed (inserts, updates, deletes),
    summed over the leaves counted at both ends: a partition attached during the window
    brings its counters from before it (and one detached takes its own away), which are no
    rate. A counter that went back (a statistics reset) counts from zero."""
    pairs = [(before[leaf], after[leaf]) for leaf in sorted(before.keys() & after.keys())]

    def grew(name: str) -> int:
        total = 0
        for old_row, new_row in pairs:
            old, new = getattr(old_row, name), getattr(new_row, name)
            total += int(new if new < old else new - old)
        return total

    newpage = None
    if pairs and all(
        old.newpage_updates is not None and new.newpage_updates is not None for old, new in pairs
    ):
        newpage = grew("newpage_updates") / seconds
    rates = Rates(
        inserts=grew("inserts") / seconds,
        updates=grew("updates") / seconds,
        hot_updates=grew("hot_updates") / seconds,
        newpage_updates=newpage,
        deletes=grew("deletes") / seconds,
        dead_tuples=sum(new.dead_tuples - old.dead_tuples for old, new in pairs) / seconds,
        autovacuums=grew("autovacuums"),
        autoanalyzes=grew("autoanalyzes"),
    )
    return rates, grew("inserts") + grew("updates") + grew("deletes")
