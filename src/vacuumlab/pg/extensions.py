"""Extensions on the connected database: where one is installed, for qualified calls."""

from __future__ import annotations

from dataclasses import dataclass

from vacuumlab.pg.connect import Session


@dataclass(frozen=True, slots=True)
class _Installed:
    schema_name: str


def extension_schema(session: Session, name: str) -> str | None:
    """The schema extension ``name`` is installed in, unquoted, or None when it is not.

    Quote it with ``sql.Identifier(schema, function)``: an extension may live in any schema,
    including one whose name needs quoting.
    """
    rows = session.fetch("extension_schema", _Installed, {"name": name})
    return rows[0].schema_name if rows else None
