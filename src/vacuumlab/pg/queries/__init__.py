"""SQL lives in ``.sql`` files here, one per question per minimum server version.

``tables.sql`` serves every supported version (13 and later); ``tables_post_160000.sql``
replaces it from PostgreSQL 16 on. :func:`get` picks the closest file at or below the
server's ``server_version_num`` and tags the text (:func:`tag`) so vacuumlab's own statements can be
told apart in ``pg_stat_statements`` and ``pg_stat_activity``.

A file that reads an extension's view writes ``{schema}`` where the extension's schema goes;
:func:`vacuumlab.collect.probes.fetch_in_schema` fills it in as an identifier. A file may also
leave an expression to its caller, in braces, from ``fragments/`` (:func:`fragment`): the
tables question takes the way it measures sizes so, because a role that may not call a
function cannot run a statement that names it, even in a branch it never takes.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from vacuumlab.errors import VacuumlabError

#: Oldest server version a base file (one without ``_post_``) is written for.
BASE_VERSION = 130000
_FILE = re.compile(r"^(?P<name>[a-z0-9_]+?)(?:_post_(?P<version>\d{6}))?\.sql$")


@cache
def _catalog() -> dict[str, dict[int, str]]:
    """Map each question to {minimum version: file name}, read once."""
    catalog: dict[str, dict[int, str]] = {}
    for entry in resources.files(__package__).iterdir():
        match = _FILE.match(entry.name)
        if match:
            version = int(match["version"] or BASE_VERSION)
            catalog.setdefault(match["name"], {})[version] = entry.name
    return catalog


@cache
def _text(file_name: str) -> str:
    return resources.files(__package__).joinpath(file_name).read_text(encoding="utf-8")


def names() -> list[str]:
    """Every question the catalog can answer, sorted."""
    return sorted(_catalog())


def versions(name: str) -> list[int]:
    """The minimum server versions for which ``name`` has a file, ascending."""
    return sorted(_versions(name))


def get(name: str, server_version_num: int) -> str | None:
    """The SQL for ``name`` on a server of ``server_version_num``.

    None when the question cannot be asked of that version (its oldest file is newer).
    """
    usable = [v for v in _versions(name) if v <= server_version_num]
    if not usable:
        return None
    return tag(_text(_versions(name)[max(usable)]), name)


def fragment(name: str) -> str:
    """The SQL expression in ``fragments/<name>.sql``, its leading comment left out (it is
    spliced into a statement, and pg_stat_statements keeps the statement's text)."""
    try:
        text = _text(f"fragments/{name}.sql")
    except FileNotFoundError:
        raise VacuumlabError(f"internal: no SQL fragment {name!r}") from None
    return "\n".join(line for line in text.splitlines() if not line.startswith("--")).strip()


def tag(text: str, name: str) -> str:
    """Mark a statement as vacuumlab's own. The tag goes last: pg_stat_statements keeps the
    text from the first token of the statement on, so a leading comment would be lost."""
    return f"{text.rstrip()}\n/* vacuumlab:{name} */"


def _versions(name: str) -> dict[int, str]:
    try:
        return _catalog()[name]
    except KeyError:
        raise VacuumlabError(f"internal: no SQL file for question {name!r}") from None
