"""SQL lives in ``.sql`` files here, one per question per minimum server version.

``vacuums.sql`` serves every supported version (13 and later); ``vacuums_post_170000.sql``
replaces it from PostgreSQL 17 on. :func:`get` picks the closest file at or below the
server's ``server_version_num`` and tags the text (:func:`tag`) so vacuumlab's own statements can be
told apart in ``pg_stat_statements`` and ``pg_stat_activity``.

A file that reads an extension's view writes ``{schema}`` where the extension's schema goes;
:func:`vacuumlab.collect.probes.fetch_in_schema` fills it in as an identifier. A file may also
leave an expression to its caller, in braces, from ``fragments/`` (:func:`fragment`): the
tables question takes the way it measures sizes so, because a role that may not call a
function cannot run a statement that names it, even in a branch it never takes.

Where versions differ in a few columns only, one file serves them all with version fragments:
``{name:alias}`` in the file is filled by :func:`get` from the closest
``fragments/<name>[_post_NNNNNN].sql`` at or below the server's version, with ``{rel}`` in
it the alias given (the tables question's relallfrozen, n_tup_newpage_upd and vacuum times).
One file per version stays the rule where the whole question differs.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from vacuumlab.errors import VacuumlabError

#: Oldest server version a base file (one without ``_post_``) is written for.
BASE_VERSION = 130000
_FILE = re.compile(r"^(?P<name>[a-z0-9_]+?)(?:_post_(?P<version>\d{6}))?\.sql$")


#: A version fragment in a question's file: the fragment's name and the alias of the relation
#: it reads (its ``{rel}``).
_VERSIONED = re.compile(r"\{(?P<name>[a-z0-9_]+):(?P<rel>[a-z_][a-z0-9_]*)\}")


@cache
def _catalog(folder: str = "") -> dict[str, dict[int, str]]:
    """Map each question (or, in ``fragments/``, each fragment) to {minimum version: file
    name}, read once."""
    catalog: dict[str, dict[int, str]] = {}
    root = resources.files(__package__)
    for entry in (root.joinpath(folder) if folder else root).iterdir():
        match = _FILE.match(entry.name)
        if match:
            version = int(match["version"] or BASE_VERSION)
            catalog.setdefault(match["name"], {})[version] = folder + entry.name
    return catalog


@cache
def _text(file_name: str) -> str:
    return resources.files(__package__).joinpath(file_name).read_text(encoding="utf-8")


def names() -> list[str]:
    """Every question the catalog can answer, sorted."""
    return sorted(_catalog())


def versions(name: str) -> list[int]:
    """The minimum server versions from which ``name`` reads differently, ascending: those of
    its files and of the version fragments they take."""
    found = set(_versions(name))
    oldest = min(found)
    for file_name in _versions(name).values():
        for match in _VERSIONED.finditer(_text(file_name)):
            found.update(v for v in _fragment_versions(match["name"]) if v > oldest)
    return sorted(found)


def get(name: str, server_version_num: int) -> str | None:
    """The SQL for ``name`` on a server of ``server_version_num``.

    None when the question cannot be asked of that version (its oldest file is newer).
    """
    usable = [v for v in _versions(name) if v <= server_version_num]
    if not usable:
        return None
    text = _text(_versions(name)[max(usable)])
    return tag(with_versions(text, server_version_num), name)


def with_versions(text: str, server_version_num: int) -> str:
    """``text`` with each version fragment (``{name:alias}``) filled in for the server."""

    def filled(match: re.Match[str]) -> str:
        return fragment(match["name"], server_version_num).replace("{rel}", match["rel"])

    return _VERSIONED.sub(filled, text)


def fragment(name: str, server_version_num: int | None = None) -> str:
    """The SQL expression in ``fragments/<name>.sql`` (with a server version, the closest
    ``_post_`` file at or below it), its leading comment left out (it is spliced into a
    statement, and pg_stat_statements keeps the statement's text)."""
    found = _fragment_versions(name)
    usable = [v for v in found if server_version_num is None or v <= server_version_num]
    if not usable:
        raise VacuumlabError(f"internal: no SQL fragment {name!r} for {server_version_num}")
    text = _text(found[min(usable) if server_version_num is None else max(usable)])
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


def _fragment_versions(name: str) -> dict[int, str]:
    try:
        return _catalog("fragments/")[name]
    except KeyError:
        raise VacuumlabError(f"internal: no SQL fragment {name!r}") from None
