"""The databases of a server that a role may visit, and what to say of one it cannot: shared by
``snapshot``/``advise --all-databases`` (lab/all_databases.py) and by the live side's
``watch``/``exporter --all-databases`` (watch/all_databases.py), which sits below the lab.
"""

from __future__ import annotations

from psycopg import sql

from vacuumlab.pg.connect import Session, redact
from vacuumlab.records.all_databases import DatabaseName
from vacuumlab.records.snapshot import ProbeNote


def connectable(session: Session) -> list[str]:
    """The names of the databases that accept connections and are not templates, in name
    order (pg/queries/connectable_databases.sql): pg_database is shared, so any database's
    session reads the whole server's list."""
    return [row.name for row in session.fetch("connectable_databases", DatabaseName)]


def failure(conninfo: str, message: str) -> str:
    """libpq's message once :func:`vacuumlab.pg.connect.connect`'s prefix (``cannot connect to
    DSN: ``) is taken off it."""
    return message.removeprefix(f"cannot connect to {redact(conninfo)}: ")


def refused(name: str, user: str, message: str) -> ProbeNote:
    """The note for a database whose connection failed, from libpq's message (``connection
    failed: … FATAL: reason DETAIL: …``): the server's reason, and the fix where there is
    one."""
    reason = message.split("FATAL:", 1)[-1].split(" DETAIL:", 1)[0].strip()
    fix = None
    if "permission denied for database" in reason:
        fix = (
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {};")
            .format(sql.Identifier(name), sql.Identifier(user))
            .as_string()
        )
    elif "too many connections" in reason or "connection limit" in reason:
        fix = (
            "the database's CONNECTION LIMIT or the server's max_connections is reached: try "
            "again later, or raise the limit"
        )
    return ProbeNote(
        probe="connect", reason=f"cannot connect to database {name}: {reason}", fix=fix
    )
