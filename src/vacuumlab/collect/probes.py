"""The small monitoring questions the lab and its studies ask, each a ``pg/queries`` file read
into a record: a table's oid and size, its dead tuples and block I/O, settings as shown, the
WAL position, a lock, how the server stores pages, and the views of extensions."""

from __future__ import annotations

from collections.abc import Collection
from typing import TypeVar

import psycopg
from psycopg import errors, sql

from vacuumlab.pg.connect import Params, Session, first_line
from vacuumlab.pg.extensions import extension_schema
from vacuumlab.records.probes import (
    DeadTuples,
    LockHeld,
    RelationSize,
    ServerFacts,
    TableIo,
    VisibilityMap,
    WalPosition,
)
from vacuumlab.records.snapshot import ProbeNote, Setting

T = TypeVar("T")


def fetch_in_schema(
    session: Session, name: str, record: type[T], schema: str, params: Params = None
) -> list[T]:
    """Question ``name`` about an extension's view or function, which lives in ``schema``:
    the file says ``{schema}`` where the quoted name goes."""
    text = session.text_of(name)
    return session.query(sql.SQL(text).format(schema=sql.Identifier(schema)), record, params)


def per_relation(
    session: Session, extension: str, name: str, record: type[T], oids: list[int]
) -> list[T]:
    """Question ``name`` about the relations ``oids``, in one statement through
    ``extension``'s view or function; nothing when the extension's schema is not found."""
    schema = extension_schema(session, extension)
    if schema is None:
        return []
    return fetch_in_schema(session, name, record, schema, {"oids": oids})


def extension_note(
    session: Session, exc: psycopg.DatabaseError, probe: str, reason: str, fixes: tuple[str, str]
) -> ProbeNote:
    """The note of a probe through an extension that failed: ``reason`` with the error's
    first line; the fix for a missing privilege (``{user}`` filled in) or for a busy server,
    as ``fixes`` says, or for a lock."""
    privilege, busy = fixes
    fix = None
    if isinstance(exc, errors.InsufficientPrivilege):
        fix = privilege.format(user=session.info.user)
    elif isinstance(exc, errors.QueryCanceled):
        fix = busy
    elif isinstance(exc, errors.LockNotAvailable):
        fix = "a table was locked; try again"
    return ProbeNote(probe=probe, reason=reason.format(error=first_line(exc)), fix=fix)


def relation_size(session: Session, name: str) -> RelationSize:
    """The oid and main-fork size of relation ``name`` ("schema.table", quoted as needed)."""
    [row] = session.fetch("relation_size", RelationSize, {"relation": name})
    return row


def dead_tuples(session: Session, relid: int) -> int | None:
    """The table's n_dead_tup as the statistics system holds it; None for no such table."""
    rows = session.fetch("dead_tuples", DeadTuples, {"relid": relid})
    return rows[0].n_dead_tup if rows else None


def table_io(session: Session, relid: int) -> TableIo:
    [row] = session.fetch("table_io", TableIo, {"relid": relid})
    return row


def settings(session: Session, names: Collection[str] | None = None) -> dict[str, str]:
    """pg_settings' raw values of the settings vacuum depends on (``names`` of them only)."""
    rows = session.fetch("settings", Setting)
    return {r.name: r.setting for r in rows if names is None or r.name in names}


def shown_settings(session: Session) -> dict[str, str]:
    """The settings vacuum depends on, as the server shows them (``SHOW``): "128MB", not the
    raw 16384 with its unit "8kB" appended."""
    rows = session.fetch("settings", Setting)
    return {r.name: r.shown or r.setting for r in rows}


def wal_position(session: Session, since: str | None = None) -> WalPosition:
    """The WAL insert position now, and the bytes written since position ``since``."""
    [row] = session.fetch("wal_lsn", WalPosition, {"since": since})
    return row


def holds_lock(session: Session, pid: int, relid: int) -> bool:
    """Whether backend ``pid`` holds a granted lock on relation ``relid``."""
    return bool(session.fetch("relation_locked", LockHeld, {"pid": pid, "relid": relid}))


def server_facts(session: Session) -> ServerFacts:
    [row] = session.fetch("server_facts", ServerFacts)
    return row


def visibility_map(session: Session, schema: str, relid: int) -> VisibilityMap:
    """pg_visibility_map_summary of the relation, pg_visibility being in ``schema``."""
    [row] = fetch_in_schema(session, "visibility_map", VisibilityMap, schema, {"relid": relid})
    return row
