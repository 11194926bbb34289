"""Checks the version facts of ``vacuumlab.model.versions`` against a real server.

:func:`check_server` is a plain function of a DSN, so that a version matrix can run it on a
server of every supported major: it reads the server's version, ``pg_settings`` and the
columns of every view and catalog the tables name, and lists each disagreement. Views of an
extension (pg_stat_statements) are checked in the DSN's database when the extension is
installed there, and skipped otherwise; :func:`database_with_extensions` gives a database
that has them where the server ships them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql

from helpers.db import fresh_database
from vacuumlab.model import versions


def check_server(dsn: str) -> list[str]:
    """Every disagreement between the server of ``dsn`` and the version tables, one line each
    (an empty list when they agree)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT current_setting('server_version_num')::int").fetchone()
        assert row is not None
        major = row[0] // 10000
        problems = [] if major in versions.SUPPORTED else [f"{major} is not in SUPPORTED"]
        problems += _check_settings(conn, major)
        problems += _check_columns(conn, major)
        problems += _check_behaviours(conn, major)
    return [f"PostgreSQL {major}: {p}" for p in problems]


@contextmanager
def database_with_extensions(admin_dsn: str) -> Iterator[str]:
    """A fresh database with every extension the column table names that the server ships,
    dropped afterwards; yields its DSN. CREATE EXTENSION installs the major's default version,
    the one the table describes (the view exists without the library being loaded)."""
    extensions = sorted({c.extension for c in versions.COLUMNS if c.extension is not None})
    with contextmanager(fresh_database)(admin_dsn) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            shipped = conn.execute(
                "SELECT name FROM pg_available_extensions WHERE name = ANY(%s) ORDER BY name",
                (extensions,),
            ).fetchall()
            for (name,) in shipped:
                conn.execute(sql.SQL("CREATE EXTENSION {}").format(sql.Identifier(name)))
        yield dsn


def _check_settings(conn: psycopg.Connection[tuple[object, ...]], major: int) -> list[str]:
    boot = {
        str(name): str(value)
        for name, value in conn.execute("SELECT name, boot_val FROM pg_settings")
    }
    problems = []
    for s in versions.SETTINGS.values():
        if s.exists_in(major) != (s.name in boot):
            has = "has" if s.name in boot else "lacks"
            problems.append(f"the server {has} setting {s.name}; the table says {_span(s)}")
        elif s.name in boot and (default := s.default_in(major)) not in (None, boot[s.name]):
            problems.append(f"{s.name}: boot_val {boot[s.name]!r}, the table says {default!r}")
    # pg/queries/settings.sql reads every setting whose name has "vacuum".
    problems += [
        f"setting {name} (settings.sql reads it) is not in the table"
        for name in sorted(boot)
        if "vacuum" in name and name not in versions.SETTINGS
    ]
    return problems


def _check_columns(conn: psycopg.Connection[tuple[object, ...]], major: int) -> list[str]:
    problems = []
    relations = sorted({(c.relation, c.extension) for c in versions.COLUMNS}, key=str)
    for relation, extension in relations:
        found = _columns_of(conn, relation, extension)
        if found is None:  # an optional extension, not installed in this database
            continue
        for c in versions.COLUMNS:
            if (c.relation, c.extension) != (relation, extension):
                continue
            if c.exists_in(major) != (c.name in found):
                has = "has" if c.name in found else "lacks"
                problems.append(f"the server {has} {relation}.{c.name}; the table says {_span(c)}")
    return problems


def _columns_of(
    conn: psycopg.Connection[tuple[object, ...]], relation: str, extension: str | None
) -> set[str] | None:
    """The columns of ``relation`` (none when the server has no such view); None for the view
    of an extension this database has not installed."""
    schema = "pg_catalog"
    if extension is not None:
        row = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = %s",
            (extension,),
        ).fetchone()
        if row is None:
            return None
        schema = str(row[0])
    qualified = sql.Identifier(schema, relation).as_string(conn)
    rows = conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s)"
        " AND attnum > 0 AND NOT attisdropped",
        (qualified,),
    )
    return {str(r[0]) for r in rows}


def _check_behaviours(conn: psycopg.Connection[tuple[object, ...]], major: int) -> list[str]:
    problems = []
    for b in versions.BEHAVIOURS:
        probe = PROBES.get(b.name)
        if probe is None:
            problems.append(f"behaviour {b.name} has no probe in helpers/version_facts.py")
        elif probe(conn) != (major >= b.since):
            shows = "shows" if major < b.since else "does not show"
            problems.append(f"the server {shows} {b.name}; the table says from {b.since}")
    return problems


def _reltuples_unknown(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    """Whether a partitioned table nobody analyzed has reltuples -1 (a temporary one, in a
    transaction rolled back)."""
    with conn.transaction(force_rollback=True):
        conn.execute("CREATE TEMP TABLE vl_version_probe (a int) PARTITION BY RANGE (a)")
        row = conn.execute(
            "SELECT reltuples FROM pg_class WHERE oid = 'vl_version_probe'::regclass"
        ).fetchone()
    assert row is not None
    return row[0] == -1


def _io_counts_wal(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    """Whether pg_stat_io (16+) has rows for WAL."""
    row = conn.execute("SELECT to_regclass('pg_catalog.pg_stat_io') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return False
    found = conn.execute("SELECT EXISTS (SELECT 1 FROM pg_stat_io WHERE object = 'wal')")
    return bool((found.fetchone() or (False,))[0])


#: A probe for each of versions.BEHAVIOURS: whether the server shows it.
PROBES: dict[str, Callable[[psycopg.Connection[tuple[object, ...]]], bool]] = {
    "reltuples_unknown": _reltuples_unknown,
    "io_counts_wal": _io_counts_wal,
}


def _span(fact: versions.Setting | versions.Column) -> str:
    if fact.until is None:
        return f"from {fact.since}"
    return f"{fact.since} to {fact.until}"
