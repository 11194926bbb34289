"""Applying an advice's changes for a verification, and putting every one of them back.

Table settings go through ``ALTER TABLE … SET (…)`` and come back with ``SET`` of the old value
or ``RESET``; server settings through :class:`vacuumlab.pg.target.Target` (``ALTER SYSTEM`` and
a reload, restored to their old ``postgresql.auto.conf`` value or reset). Whatever was changed
is remembered before it is changed, so :meth:`Changes.restore` undoes exactly that, and reads
everything back to say whether it now reads as before.

``ALTER TABLE … SET`` of a storage parameter takes a SHARE UPDATE EXCLUSIVE lock
(AlterTableGetRelOptionsLockLevel() in tablecmds.c), which an autovacuum of the table holds
too. Waiting longer than ``deadlock_timeout`` makes the waiting backend cancel that autovacuum
(ProcSleep() in proc.c), so the lock timeout here is longer than the default 1 s; a statement
that still times out is retried.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from vacuumlab.errors import VacuumlabError
from vacuumlab.model.whatif import Change
from vacuumlab.pg import queries
from vacuumlab.pg.connect import Session, Timeouts, connect, first_line
from vacuumlab.pg.target import Target
from vacuumlab.records.advice import Recommendation
from vacuumlab.records.snapshot import Relation
from vacuumlab.records.verification import AppliedChange

TIMEOUTS = Timeouts(statement_ms=10_000, lock_ms=3000)
ATTEMPTS = 5
#: How long a reloaded server may take to show the restored settings (reload is asynchronous).
SETTLE_S = 10.0
_SETTING = queries.tag("SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", "verify")


@dataclass(frozen=True, slots=True)
class _Options:
    oid: int
    heap_options: list[str]
    toast_options: list[str]


@dataclass(frozen=True, slots=True)
class TableChange:
    """A table setting to apply: the change, the table it goes on and the advice's SQL."""

    change: Change
    table: Relation
    rec: Recommendation

    @property
    def label(self) -> str:
        return f"{self.table.qualified_name}{' (TOAST)' if self.change.toast else ''}"


@dataclass(frozen=True, slots=True)
class _Setting:
    name: str
    setting: str


@dataclass
class Changes:
    """Changes made to one server, in the order made, and how to undo them."""

    dsn: str
    target: Target
    applied: list[AppliedChange] = field(default_factory=list)
    #: Each table change with the value it replaced, remembered before it is made.
    _tables: list[tuple[TableChange, str | None]] = field(default_factory=list)
    _server_before: dict[str, str] = field(default_factory=dict)

    def apply_tables(self, changes: list[TableChange]) -> None:
        """``ALTER TABLE … SET`` each, after reading what each table had."""
        if not changes:
            return
        with connect(self.dsn, read_only=False, timeouts=TIMEOUTS, application_name=_APP) as s:
            options = _read_options(s, [c.table.oid for c in changes])
            for tc in changes:
                previous = _option(options.get(tc.table.oid), tc.change)
                self._tables.append((tc, previous))  # first: a half-made change is undone too
                _retrying(s, _set_option(tc, tc.change.value))
                self.applied.append(
                    AppliedChange(
                        scope=tc.change.scope,
                        relation=tc.label,
                        setting=tc.change.setting,
                        value=tc.change.value,
                        previous=previous,
                        sql=tc.rec.sql,
                    )
                )

    def apply_server(self, recs: list[Recommendation]) -> None:
        """``ALTER SYSTEM SET`` each and reload, through the target (which remembers the old
        values and waits until the server shows the new ones)."""
        if not recs:
            return
        with connect(self.dsn, application_name=_APP) as s:
            self._server_before |= _settings(s, [r.setting for r in recs])
        self.target.apply({r.setting: r.value for r in recs})
        for rec in recs:
            self.applied.append(
                AppliedChange(
                    scope="server",
                    relation=None,
                    setting=rec.setting,
                    value=rec.value,
                    previous=self._server_before.get(rec.setting),
                    sql=rec.sql,
                )
            )

    def restore(self) -> list[str]:
        """Undo every change, tables first, and read each back; returns what could not be
        undone (empty: everything reads as before)."""
        problems = []
        if self._tables:
            try:
                self._restore_tables()
            except (psycopg.Error, VacuumlabError) as exc:
                problems.append(f"table settings not restored: {first_line(exc)}")
        try:
            self.target.restore()
        except (psycopg.Error, VacuumlabError) as exc:
            problems.append(f"server settings not restored: {first_line(exc)}")
        self.applied = self._checked()
        problems += [
            f"{a.relation or 'server'}: {a.setting} does not read as before"
            for a in self.applied
            if not a.restored
        ]
        return problems

    def _restore_tables(self) -> None:
        with connect(self.dsn, read_only=False, timeouts=TIMEOUTS, application_name=_APP) as s:
            for tc, previous in reversed(self._tables):
                _retrying(s, _set_option(tc, previous))

    def _checked(self) -> list[AppliedChange]:
        """Each applied change marked restored when it reads as it did before."""
        with connect(self.dsn, application_name=_APP) as s:
            options = _read_options(s, [tc.table.oid for tc, _ in self._tables])
            now = self._server_now(s)
        tables = {(tc.label, tc.change.setting): tc for tc, _ in self._tables}
        checked = []
        for applied in self.applied:
            if applied.scope == "server":
                reads = now.get(applied.setting)
            else:
                tc = tables[applied.relation or "", applied.setting]
                reads = _option(options.get(tc.table.oid), tc.change)
            checked.append(applied.model_copy(update={"restored": reads == applied.previous}))
        return checked

    def _server_now(self, session: Session) -> dict[str, str]:
        """The server settings as they read now, polled until they read as before (a reload
        is asynchronous) or for at most ``SETTLE_S``."""
        if not self._server_before:
            return {}
        deadline = time.monotonic() + SETTLE_S
        while True:
            now = _settings(session, list(self._server_before))
            if now == self._server_before or time.monotonic() > deadline:
                return now
            time.sleep(0.1)


_APP = "vacuumlab-verify"


def _settings(session: Session, names: list[str]) -> dict[str, str]:
    return {row.name: row.setting for row in session.query(_SETTING, _Setting, [names])}


def _read_options(session: Session, oids: list[int]) -> dict[int, _Options]:
    rows = session.fetch("relation_options", _Options, {"oids": sorted(set(oids))})
    return {row.oid: row for row in rows}


def _option(options: _Options | None, change: Change) -> str | None:
    """The value ``change``'s setting has on its relation now; None when not set."""
    if options is None:
        return None
    found = options.toast_options if change.toast else options.heap_options
    return parse_options(found).get(change.setting)


def parse_options(options: list[str]) -> Mapping[str, str]:
    """``pg_class.reloptions`` (``name=value`` strings) as a mapping."""
    return dict(option.split("=", 1) for option in options if "=" in option)


def _set_option(tc: TableChange, value: str | None) -> sql.Composed:
    """``ALTER TABLE t SET (name = value)``, or ``RESET (name)`` when ``value`` is None."""
    name: sql.Composable = sql.Identifier(tc.change.setting)
    if tc.change.toast:
        name = sql.SQL("toast.") + name
    table = sql.Identifier(tc.table.schema_name, tc.table.name)
    if value is None:
        return sql.SQL("ALTER TABLE {} RESET ({})").format(table, name)
    return sql.SQL("ALTER TABLE {} SET ({} = {})").format(table, name, sql.Literal(value))


def _retrying(session: Session, statement: sql.Composed) -> None:
    """Run a statement, again after a lock timeout (an autovacuum held the table)."""
    for attempt in range(ATTEMPTS):
        try:
            session.execute(statement)
            return
        except psycopg.errors.LockNotAvailable:
            if attempt == ATTEMPTS - 1:
                raise
