"""pg/extensions.py against the real embedded server."""

from __future__ import annotations

from psycopg import sql

from helpers.db import execute
from vacuumlab.pg.connect import connect
from vacuumlab.pg.extensions import extension_schema

AWKWARD = 'Odd "schema"'


def test_extension_schema_is_none_until_installed_then_its_schema(embedded_database: str) -> None:
    with connect(embedded_database) as session:
        assert extension_schema(session, "pg_visibility") is None
    execute(
        embedded_database,
        sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(AWKWARD)),
        sql.SQL("CREATE EXTENSION pg_visibility SCHEMA {}").format(sql.Identifier(AWKWARD)),
        "CREATE EXTENSION pgstattuple",
    )
    with connect(embedded_database) as session:
        assert extension_schema(session, "pg_visibility") == AWKWARD
        assert extension_schema(session, "pgstattuple") == "public"
        assert extension_schema(session, "no_such_extension") is None
        # The name comes back unquoted, fit for sql.Identifier.
        function = sql.Identifier(AWKWARD, "pg_visibility_map_summary")
        query = sql.SQL("SELECT all_visible FROM {}('pg_class'::regclass)").format(function)
        assert session.scalar(query) is not None
