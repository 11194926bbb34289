"""Collect a :class:`~vacuumlab.records.snapshot.Snapshot` in a fixed number of queries.

Each probe is one query whatever the number of tables. A probe that fails for a reason the
user can fix (a missing privilege, a timeout, a lock) or that the server is too old for is
turned off with a note; the others go on.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, cast

import psycopg
from psycopg import errors, sql

from vacuumlab import __version__
from vacuumlab.errors import VacuumlabError
from vacuumlab.memory import collector_paused
from vacuumlab.pg import queries
from vacuumlab.pg.connect import Session, VersionTooOld, first_line, records_of
from vacuumlab.records import snapshot as m
from vacuumlab.records.shared import one_fields_set


@dataclass(frozen=True, slots=True)
class Probe:
    """One question asked of the server, and where its answer goes in the snapshot."""

    field: str
    query: str
    record: type[m.Record]
    single: bool = False
    #: Whether the query takes ``measure`` (see collect()).
    sized: bool = False


PROBES: tuple[Probe, ...] = (
    Probe("settings", "settings", m.Setting),
    Probe("tables", "tables", m.Relation, sized=True),
    Probe("partitioned", "partitioned", m.Partitioned),
    Probe("io", "io", m.IoRow),
    Probe("checkpointer", "checkpointer", m.Checkpointer, single=True),
    Probe("bgwriter", "bgwriter", m.Bgwriter, single=True),
    Probe("wal", "wal", m.Wal, single=True),
    Probe("xids", "xids", m.XidState, single=True),
    Probe("databases", "databases", m.Database),
    Probe("backends", "backends", m.Backend),
    Probe("slots", "slots", m.ReplicationSlot),
    Probe("prepared", "prepared", m.PreparedXact),
    Probe("vacuums", "vacuums", m.VacuumProgress),
    Probe("workers", "autovacuum_workers", m.AutovacuumWorker),
)

Sizes = Literal["measured", "estimated"]

_PRIVILEGE_FIX = "GRANT pg_monitor TO {user};"


def collect(
    session: Session,
    *,
    sizes: Sizes = "measured",
    kept: Kept | None = None,
    halves: bool = False,
    quiet: QuietFilter | None = None,
) -> m.Snapshot:
    """Ask every probe; build the snapshot from what answered and notes for what did not.

    ``sizes="estimated"`` takes every relation's size from ``pg_class.relpages`` instead of
    opening it (pg/queries/tables.sql): the same statements, in a fraction of the server's
    time at 10,000 tables. For the live view, whose thresholds and simulation work from
    reltuples, the statistics and pages, as autovacuum does; the snapshot says so
    (``Snapshot.sizes``). ``kept``: the relations of the caller's previous collect (see
    :class:`Kept`). ``halves``: on a large catalog, ask the tables question in two halves on
    two sessions at once (see tables()). Off by default: with the client's work cut down, the
    client is the longer part, and two halves on two cores only made it wait: at 100,000
    tables a snapshot and its advice took 3.14 s in halves against 2.93 s whole, at 10,000
    0.32 s against 0.33 s (2026-11-28, 2 cores); and whole, a snapshot sends the same
    statements at any size. ``quiet``: list
    only the tables something moves toward autovacuum (pg/queries/fragments/quiet.sql), and
    count the rest (``Snapshot.quiet``): a live view of a large database."""
    with collector_paused():
        return _collect(session, sizes, kept, halves, quiet)


@dataclass(frozen=True, slots=True)
class QuietFilter:
    """What leaves a table out of a live view's tables question (fragments/quiet.sql)."""

    xid_age: float  # an age of either of its relations past this keeps it; so does
    mxid_age: float  # a multixact age past this,
    window_s: float  # and a vacuum or analyze within this many seconds


def _collect(
    session: Session, sizes: Sizes, kept: Kept | None, halves: bool, quiet: QuietFilter | None
) -> m.Snapshot:
    taken_at = datetime.now(UTC)
    values: dict[str, Any] = {}
    notes: list[m.ProbeNote] = []
    for probe in PROBES:
        rows: list[Any]
        try:
            if probe.sized:
                text = sized_query(session, probe.query, sizes, quiet=quiet is not None)
                params: dict[str, Any] = {"measure": sizes == "measured"}
                if quiet is not None:
                    params |= {
                        "quiet_xid": quiet.xid_age,
                        "quiet_mxid": quiet.mxid_age,
                        "window": quiet.window_s,
                    }
                rows = tables(session, text, params, kept, halves=halves)
                if quiet is not None:
                    every = session.scalar(session.text_of("relation_count"))
                    listed = sum(1 + (t.toast is not None) for t in rows)
                    values["quiet"] = max(int(every) - listed, 0)
            else:
                rows = session.fetch(probe.query, probe.record)
        except VacuumlabError as exc:
            if not isinstance(exc, VersionTooOld):
                raise
            notes.append(m.ProbeNote(probe=probe.query, reason=str(exc)))
            continue
        except psycopg.DatabaseError as exc:
            notes.append(_note(probe, exc, session))
            continue
        values[probe.field] = (rows[0] if rows else None) if probe.single else rows
    values["tables"] = in_name_order(values.get("tables", []))
    notes.extend(_visibility_notes(session))
    return m.Snapshot(
        vacuumlab_version=__version__,
        taken_at=taken_at,
        server=session.info,
        sizes=sizes,
        notes=notes,
        **values,
    )


def sized_query(session: Session, name: str, sizes: Sizes, *, quiet: bool = False) -> sql.Composed:
    """Question ``name`` (the tables) with its ``{sizes}`` filled in, each relation's size
    read from the files (pg/queries/fragments/file_bytes.sql) when the sizes are measured and
    the role may call pg_stat_file(), else by pg_relation_size(). At 10,000 tables and as
    many TOAST relations, in a new session, the files take about a third of the server time
    pg_relation_size() does (bench/snapshot_scale.py)."""
    by_file = sizes == "measured" and session.info.can_stat_files
    return with_sizes(session.text_of(name), by_file=by_file, quiet=quiet)


def with_sizes(text: str, *, by_file: bool, quiet: bool = False) -> sql.Composed:
    """A tables query's text with its sizes filled in (queries/fragments/sizes.sql, the same in
    every version), and their two size expressions (see sized_query)."""
    size = sql.SQL(queries.fragment("file_bytes" if by_file else "relation_bytes"))
    sizes = sql.SQL(queries.fragment("sizes")).format(
        heap_bytes=size.format(rel=sql.Identifier("c")),
        index_bytes=size.format(rel=sql.Identifier("i_c")),
    )
    filtered = sql.SQL(queries.fragment("quiet") if quiet else "")
    return sql.SQL(text).format(sizes=sizes, quiet=filtered)


#: Rows of the tables question made into relations at a time, while the server computes the
#: next ones (see relations()).
CHUNK_ROWS = 1000
#: A database whose pg_class is at least this large (about 2,000 tables, each with a TOAST
#: relation and an index) has its tables question asked in two halves on two sessions at once.
SPLIT_CATALOG_BYTES = 2 * 1024 * 1024


def tables(
    session: Session,
    text: sql.Composed,
    params: dict[str, Any],
    kept: Kept | None,
    *,
    halves: bool = True,
) -> list[m.Table]:
    """The tables question's tables, in no order, their relations validated (or kept) a chunk
    of rows at a time as the server sends them. The query computes its rows one relation at
    a time (tables.sql), so the client's work runs beside the server's instead of after it.
    On a large catalog the question is asked in two halves at once, one on a sibling session
    (Session.sibling()), so that two server processes compute it. At 10,000 tables, taken in
    turn on 2 cores (bench/against_start.py --rev), a snapshot took 0.244-0.287 s against
    0.270-0.321 s with the question whole: the server is the longer part of the work, and
    here its two processes share the cores with the client. Below about 2,000 tables the two
    took the same time, and the question is asked whole, on one session."""
    if kept is not None:
        kept.begin()
    if halves and session.catalog_bytes >= SPLIT_CATALOG_BYTES and not session.sibling_refused:
        found = _in_halves(session, text, params, kept)
    else:
        whole = TableRows(kept)
        _stream(session, text, params, whole)
        found = whole.done()
    if kept is not None:
        kept.end()
    return found


def _stream(
    session: Session,
    text: sql.Composed,
    params: dict[str, Any],
    into: TableRows,
    *,
    part: int = 0,
    parts: int = 1,
) -> None:
    """Half ``part`` of ``parts`` (0 of 1: the whole question) into ``into``."""
    params = {**params, "parts": parts, "part": part}
    for names, rows in session.chunks(text, params, size=CHUNK_ROWS, binary=True):
        into.add(names, rows)


def _in_halves(
    session: Session, text: sql.Composed, params: dict[str, Any], kept: Kept | None
) -> list[m.Table]:
    """Half 0 here and half 1 on a thread through the sibling session, which the thread opens
    if it is not open yet (while half 0 runs). Each table and its TOAST relation are in one
    half, so each half pairs its own. The two threads take turns at Python's work, but each
    waits on its own server process. With no sibling (it could not be opened, or its
    connection was lost: an idle session timeout, a terminated backend), half 1 is asked here
    after half 0; any other failure of either half is the question's, as if asked whole."""
    halves = [TableRows(kept), TableRows(kept)]
    asked: list[Session] = []
    failed: list[BaseException] = []
    stop = threading.Event()

    def other_half() -> None:
        try:
            sibling = session.sibling()
            if sibling is None or stop.is_set():
                return
            asked.append(sibling)
            _stream(sibling, text, params, halves[1], part=1, parts=2)
        except BaseException as exc:  # handed to the main thread below
            failed.append(exc)

    thread = threading.Thread(target=other_half, name="vacuumlab-tables-half", daemon=True)
    thread.start()
    try:
        _stream(session, text, params, halves[0], part=0, parts=2)
    except BaseException:
        stop.set()
        if asked:  # stop the other half rather than wait for it
            with contextlib.suppress(psycopg.Error):
                asked[0].conn.cancel_safe()
        raise
    finally:
        thread.join()
        session.statements += len(asked)
    if failed:
        lost = asked and isinstance(failed[0], psycopg.OperationalError) and asked[0].conn.closed
        if not lost:
            raise failed[0]
        session.forget_sibling()
    if failed or not asked:
        halves[1] = TableRows(kept)
        _stream(session, text, params, halves[1], part=1, parts=2)
    return halves[0].done() + halves[1].done()


class TableRows:
    """Tables made from the tables question's rows as the rows come. A TOAST relation's row
    comes before its table's (the query sends them first), so each heap's row is filled in
    with its ``toast_bytes`` (the TOAST relation's heap and index bytes) and paired with its
    TOAST relation as soon as it comes. A TOAST row that comes after its heap's all the same
    (the query has no ORDER BY) makes the table again once every row is in."""

    def __init__(self, kept: Kept | None) -> None:
        self.kept = kept
        self.tables: list[m.Table] = []
        #: Each table's TOAST relation and its bytes (None: it was locked), by the table's oid.
        self.toasts: dict[int, m.Relation] = {}
        self.toast_bytes: dict[int, int | None] = {}
        #: Each table's place in ``tables``, by its heap's oid.
        self.heaps: dict[int, int] = {}
        #: Tables whose TOAST row came after their heap's.
        self.late: list[int] = []

    def add(self, names: list[str], rows: list[tuple[Any, ...]]) -> None:
        toast_of, heap_bytes, index_bytes, toast_bytes = (
            names.index(name) for name in ("toast_of", "heap_bytes", "index_bytes", "toast_bytes")
        )
        filled: list[tuple[Any, ...]] = []
        for row in rows:
            table = row[toast_of]
            if table is not None:
                heap, index = row[heap_bytes], row[index_bytes]
                self.toast_bytes[table] = None if heap is None or index is None else heap + index
            else:
                size = self.toast_bytes.get(row[0])
                if size is not None:
                    row = (*row[:toast_bytes], size, *row[toast_bytes + 1 :])
            filled.append(row)
        if self.kept is not None:
            made = self.kept.relations(names, filled)
        else:
            made = records_of(m.Relation, names, filled)
        toasts, heaps, found, kept = self.toasts, self.heaps, self.tables, self.kept
        for rel in made:
            if rel.toast_of is not None:
                toasts[rel.toast_of] = rel
                if rel.toast_of in heaps:
                    self.late.append(rel.toast_of)
            else:
                heaps[rel.oid] = len(found)
                toast = toasts.get(rel.oid)
                found.append(
                    m.Table(heap=rel, toast=toast) if kept is None else kept.table(rel, toast)
                )

    def done(self) -> list[m.Table]:
        for oid in self.late:
            at = self.heaps[oid]
            heap = _replaced(self.tables[at].heap, toast_bytes=self.toast_bytes[oid])
            self.tables[at] = m.Table(heap=heap, toast=self.toasts[oid])
        return one_fields_set(self.tables)  # 21 MB at 100,000 tables


#: The tables query's last columns: they move with every transaction anywhere (age()), so a
#: relation nothing else changed for still has a new row.
AGES = ("frozenxid_age", "minmxid_age")


class Kept:
    """The relations of a caller's previous collect (a live view's), each with the row it was
    built from, by oid. A row that comes back the same but for its ages (most, between two
    refreshes seconds apart) keeps its record, copied with the new ages, rather than being
    validated again: at 20,000 relations, with every age moved, the snapshot's client time
    falls from 0.27 to 0.16 s. Records are immutable, so two snapshots may share one.

    A collect calls :meth:`begin`, then :meth:`relations` for each chunk of rows, then
    :meth:`end`; one that fails before its end leaves the previous relations in place. The
    two halves of a split question call :meth:`relations` from two threads: each call reads
    the previous rows, which do not change until :meth:`end`, and adds its own to the next."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[tuple[Any, ...], m.Relation]] = {}
        self._next: dict[int, tuple[tuple[Any, ...], m.Relation]] = {}
        #: The previous collect's tables by their heap's oid, and the next one's.
        self.tables: dict[int, m.Table] = {}
        self._next_tables: dict[int, m.Table] = {}

    def begin(self) -> None:
        self._next = {}
        self._next_tables = {}

    def relations(self, names: list[str], rows: list[tuple[Any, ...]]) -> list[m.Relation]:
        if tuple(names[-len(AGES) :]) != AGES or names[0] != "oid":
            raise VacuumlabError("internal: the tables query must start with oid, end in ages")
        cut = len(names) - len(AGES)
        xid, mxid = cut, cut + 1
        previous, following = self.rows, self._next
        found: list[m.Relation | None] = []
        fresh: list[int] = []
        for row in rows:
            oid = row[0]
            hit = previous.get(oid)
            if hit is None or hit[0] != row[:cut]:
                fresh.append(len(found))
                found.append(None)
                continue
            rel = hit[1]
            if rel.frozenxid_age != row[xid] or rel.minmxid_age != row[mxid]:
                rel = _replaced(rel, frozenxid_age=row[xid], minmxid_age=row[mxid])
                hit = hit[0], rel
            following[oid] = hit  # its row, without a second copy of it
            found.append(rel)
        if fresh:
            made = records_of(m.Relation, names, [rows[i] for i in fresh])
            for i, rel in zip(fresh, made, strict=True):
                found[i] = rel
                row = rows[i]
                following[row[0]] = row[:cut], rel
        return cast(list[m.Relation], found)

    def table(self, heap: m.Relation, toast: m.Relation | None) -> m.Table:
        """The table of ``heap`` and ``toast``: the previous collect's when it held these very
        records (most, between two refreshes), else a new one. At 100,000 tables, making
        each anew took 0.15 s of a refresh."""
        old = self.tables.get(heap.oid)
        if old is None or old.heap is not heap or old.toast is not toast:
            old = m.Table(heap=heap, toast=toast)
        self._next_tables[heap.oid] = old
        return old

    def end(self) -> None:
        self.rows, self._next = self._next, {}
        self.tables, self._next_tables = self._next_tables, {}


def _replaced(rel: m.Relation, **values: Any) -> m.Relation:
    """``rel`` with other ``values``, as pydantic's own shallow copy makes it
    (BaseModel.__copy__) but sharing what no one changes: model_copy() took longer than
    validating the row anew. The values are the server's own (bigint ages, sums of bigint
    sizes), of the fields' types already; the set of fields given is the same, and a frozen
    record never changes it."""
    new = m.Relation.__new__(m.Relation)
    fields = rel.__dict__.copy()
    fields.update(values)
    object.__setattr__(new, "__dict__", fields)
    object.__setattr__(new, "__pydantic_extra__", None)  # extra="forbid"
    object.__setattr__(new, "__pydantic_fields_set__", rel.__pydantic_fields_set__)
    object.__setattr__(new, "__pydantic_private__", None)  # no private attributes
    return new


def _note(probe: Probe, exc: psycopg.DatabaseError, session: Session) -> m.ProbeNote:
    """A note for a failed probe, or re-raise when the failure is not the probe's own."""
    if isinstance(exc, psycopg.OperationalError) and session.conn.closed:
        raise VacuumlabError(f"lost the connection to the server: {first_line(exc)}") from None
    fix = None
    if isinstance(exc, errors.InsufficientPrivilege):
        fix = _PRIVILEGE_FIX.format(user=session.info.user)
    elif isinstance(exc, errors.QueryCanceled):
        fix = "the server is busy or the query too slow; try again or raise the timeout"
    elif isinstance(exc, errors.LockNotAvailable):
        fix = "a relation was locked; try again"
    return m.ProbeNote(probe=probe.query, reason=first_line(exc), fix=fix)


def _visibility_notes(session: Session) -> Iterable[m.ProbeNote]:
    if not session.info.can_read_all_stats:
        yield m.ProbeNote(
            probe="backends",
            reason="other roles' sessions show no xmin or query without pg_read_all_stats",
            fix=_PRIVILEGE_FIX.format(user=session.info.user),
        )


def in_name_order(tables: list[m.Table]) -> list[m.Table]:
    """Tables in ``schema.name`` order. The query leaves the order to us: names compare as
    PostgreSQL's ``name`` type does (collation "C", byte order, which UTF-8 shares with code
    points)."""
    return sorted(tables, key=_name_of)


def _name_of(table: m.Table) -> tuple[str, str]:
    return table.heap.schema_name, table.heap.name
