"""The one place that opens sessions to a PostgreSQL server.

Every session carries ``application_name``, a ``statement_timeout`` and a ``lock_timeout``
from its first statement (they travel in the startup packet, so no extra round trip), and an
inspecting session is read-only: ``default_transaction_read_only`` makes every implicit
transaction read-only, so a bug cannot write to a user's database.
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Self, TypeVar, cast

import psycopg
from psycopg import sql
from psycopg.rows import class_row, dict_row
from pydantic import BaseModel, TypeAdapter

from vacuumlab.errors import VacuumlabError
from vacuumlab.model.versions import MIN_MAJOR, SUPPORTED
from vacuumlab.pg import queries
from vacuumlab.records.shared import M, one_fields_set
from vacuumlab.records.snapshot import ServerInfo

APPLICATION_NAME = "vacuumlab"
MIN_VERSION_NUM = MIN_MAJOR * 10000
#: The first libpq that sends a statement's rows in chunks as they come (Session.chunks).
CHUNKED_LIBPQ = 170000
T = TypeVar("T")
#: Query parameters: positional (%s) or named (%(name)s).
Params = Sequence[Any] | Mapping[str, Any] | None
#: Statement text as psycopg takes it: a plain string or a composed, quoted statement.
Query = str | sql.SQL | sql.Composed


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Limits for every statement of a session, in milliseconds."""

    statement_ms: int = 5000
    lock_ms: int = 100
    connect_s: int = 5


@dataclass(frozen=True, slots=True)
class Opening:
    """How a session was opened, so that a sibling opens the same way."""

    read_only: bool = True
    timeouts: Timeouts = Timeouts()
    application_name: str = APPLICATION_NAME


@dataclass
class Session:
    """An open connection, what it learnt of its server, and how many statements it ran."""

    conn: psycopg.Connection[Any]
    info: ServerInfo
    dsn: str
    statements: int = field(default=0)
    opening: Opening = field(default=Opening())
    #: The size of this database's pg_class when the session opened: how many relations a
    #: catalog-wide question has to go through.
    catalog_bytes: int = 0
    #: The sibling session: not yet opened (None), opened, or refused (False).
    _sibling: Session | bool | None = field(default=None, repr=False)

    def sibling(self) -> Session | None:
        """A second session to the same database, opened as this one was (read-only, the same
        timeouts and name), for a question split in two that the server answers on two
        processes at once. It stays open until this session closes. None if it cannot be
        opened (a connection limit, say), then and for the rest of this session: the caller
        asks the whole question here instead."""
        if self._sibling is None:
            try:
                conn = _open(self.dsn, self.opening)
            except VacuumlabError:
                self._sibling = False
                return None
            self._sibling = Session(
                conn=conn, info=self.info, dsn=self.dsn, opening=self.opening, _sibling=False
            )
        return self._sibling if isinstance(self._sibling, Session) else None

    @property
    def sibling_refused(self) -> bool:
        """A sibling could not be opened, or was lost, and none will be tried again."""
        return self._sibling is False

    def forget_sibling(self) -> None:
        """Close the sibling, whose connection was lost, and open none again."""
        if isinstance(self._sibling, Session):
            self._sibling.close()
        self._sibling = False

    def fetch(self, name: str, record: type[T], params: Params = None) -> list[T]:
        """Run question ``name`` in the version its server needs; rows become ``record``."""
        return self.query(self.text_of(name), record, params)

    def text_of(self, name: str) -> str:
        """Question ``name``'s SQL in the version this server needs (VersionTooOld: none)."""
        text = queries.get(name, self.info.version_num)
        if text is None:
            raise VersionTooOld(name, self.info.version_num)
        return text

    def chunks(
        self, query: Query, params: Params = None, *, size: int, binary: bool = False
    ) -> Iterator[tuple[list[str], list[tuple[Any, ...]]]]:
        """A statement's rows in lists of up to ``size``, each with the column names, as the
        server sends them: the caller works on one list while the server computes the next.
        No rows, no lists. Chunked rows need libpq 17 (psycopg[binary] ships a newer one);
        with an older libpq the rows come in one list, after the statement ends. ``binary``:
        values in PostgreSQL's binary formats, which psycopg reads with less work than text
        (timestamps most of all)."""
        with self.conn.cursor() as cur:
            self.statements += 1
            if psycopg.pq.version() < CHUNKED_LIBPQ:
                cur.execute(query, params, binary=binary)
                if rows := cur.fetchall():
                    yield [column.name for column in cur.description or ()], rows
                return
            names: list[str] = []
            chunk: list[tuple[Any, ...]] = []
            for row in cur.stream(query, params, size=size, binary=binary):
                if not names:
                    names = [column.name for column in cur.description or ()]
                chunk.append(row)
                if len(chunk) == size:
                    yield names, chunk
                    chunk = []
            if chunk:
                yield names, chunk

    def query(self, query: Query, record: type[T], params: Params = None) -> list[T]:
        if isinstance(record, type) and issubclass(record, BaseModel):
            return cast(list[T], self._validated(query, record, params))
        with self.conn.cursor(row_factory=class_row(record)) as cur:
            self.statements += 1
            cur.execute(query, params)
            return cur.fetchall()

    def _validated(self, query: Query, record: type[M], params: Params) -> list[M]:
        with self.conn.cursor() as cur:
            self.statements += 1
            cur.execute(query, params)
            names = [column.name for column in cur.description or ()]
            return records_of(record, names, cur.fetchall())

    def execute(self, query: Query, params: Params = None) -> None:
        self.statements += 1
        self.conn.execute(query, params)

    def scalar(self, query: Query, params: Params = None) -> Any:
        self.statements += 1
        row = self.conn.execute(query, params).fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        if isinstance(self._sibling, Session):
            self._sibling.close()
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: A validator of ``list[record]`` for each record type, built once: building one takes longer
#: than validating a few rows with it.
_LISTS: dict[type[Any], TypeAdapter[Any]] = {}


def list_of(record: type[T]) -> TypeAdapter[list[T]]:
    """The validator of ``list[record]``, built once per record type."""
    adapter = _LISTS.get(record)
    if adapter is None:
        adapter = _LISTS[record] = TypeAdapter(list[record])  # type: ignore[valid-type]
    return adapter


def records_of(record: type[M], names: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> list[M]:
    """Rows of columns ``names`` as pydantic records, all validated in one call rather than one
    per row, sharing one set of the fields given (:func:`one_fields_set`). Each row is read by
    attribute from a named tuple of its columns: at 20,000 relations that costs about two
    thirds of building a dict per row to validate (and the dicts half of ``class_row``'s
    keyword call). Columns that cannot name a tuple's fields (none of vacuumlab's own) go by
    dict. (Building the records without validation, where the columns' types prove it
    needless, was tried: at 200,000 relations it saved 0.1 s of 0.8.)"""
    row_type = _row_type(tuple(names))
    if row_type is None:
        made = list_of(record).validate_python([dict(zip(names, row, strict=True)) for row in rows])
    else:
        made = list_of(record).validate_python(
            list(map(row_type._make, rows)), from_attributes=True
        )
    return one_fields_set(made)


@cache
def _row_type(names: tuple[str, ...]) -> Any:
    """A named tuple type with fields ``names``, or None where they cannot be its fields."""
    try:
        return namedtuple("Row", names)
    except ValueError:
        return None


class VersionTooOld(VacuumlabError):
    """The question has no SQL for this server version."""

    def __init__(self, name: str, version_num: int) -> None:
        need = queries.versions(name)[0]
        super().__init__(
            f"{name} needs PostgreSQL {need // 10000}; the server is {version_num // 10000}"
        )


def connect(
    dsn: str,
    *,
    read_only: bool = True,
    timeouts: Timeouts = Timeouts(),
    application_name: str = APPLICATION_NAME,
) -> Session:
    """Open an autocommit session and learn its server, or raise a one-line VacuumlabError."""
    opening = Opening(read_only, timeouts, application_name)
    conn = _open(dsn, opening)
    try:
        info, catalog_bytes = _server_info(conn)
    except BaseException:
        conn.close()
        raise
    return Session(
        conn=conn, info=info, dsn=dsn, statements=1, opening=opening, catalog_bytes=catalog_bytes
    )


def _open(dsn: str, opening: Opening) -> psycopg.Connection[Any]:
    timeouts = opening.timeouts
    options = f"-c statement_timeout={timeouts.statement_ms} -c lock_timeout={timeouts.lock_ms}"
    if opening.read_only:
        options += " -c default_transaction_read_only=on"
    try:
        return psycopg.connect(
            dsn,
            autocommit=True,
            application_name=opening.application_name,
            options=options,
            connect_timeout=timeouts.connect_s,
        )
    except psycopg.ProgrammingError as exc:  # a malformed DSN
        raise VacuumlabError(f"invalid connection string: {first_line(exc)}") from None
    except psycopg.OperationalError as exc:
        raise VacuumlabError(f"cannot connect to {redact(dsn)}: {first_line(exc)}") from None


def _server_info(conn: psycopg.Connection[Any]) -> tuple[ServerInfo, int]:
    """The server's facts, and the size of this database's pg_class in bytes."""
    version_num = conn.info.server_version
    refuse_old(version_num)
    text = queries.get("server_info", version_num)
    assert text is not None
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(text)
        row = cur.fetchone()
    assert row is not None
    catalog_bytes = row.pop("catalog_bytes")
    return ServerInfo.model_validate(row), catalog_bytes


def refuse_old(version_num: int) -> None:
    """A server older than the oldest supported major gets a one-line refusal, before any
    question is asked of it (its views lack the counters the questions read)."""
    if version_num < MIN_VERSION_NUM:
        raise VacuumlabError(
            f"PostgreSQL {version_num // 10000} is not supported: vacuumlab needs "
            f"{MIN_MAJOR} or later (supported: {SUPPORTED[0]} to {SUPPORTED[-1]})"
        )


def first_line(exc: BaseException) -> str:
    """An error message as one line: libpq's run over several (``failed:\nFATAL: …``)."""
    return " ".join(str(exc).split()) or type(exc).__name__


_PASSWORD = re.compile(r"(password\s*=\s*)(\S+)|(://[^:/@]*:)([^@]*)(@)", re.IGNORECASE)


def redact(dsn: str) -> str:
    """The DSN with any password replaced, fit to print."""
    return _PASSWORD.sub(
        lambda m: f"{m[1]}***" if m[1] else f"{m[3]}***{m[5]}",
        dsn,
    )
