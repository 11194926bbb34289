"""The shared-buffers probe: where the ``pg_buffercache`` extension is installed and the role
may read it, how many of each changed relation's pages (and its indexes') are in shared
buffers, counted from the ``pg_buffercache`` view (pg/queries/pages_cached.sql) instead of
estimated from the relation's size against shared_buffers.

The advisor never installs the extension. Reading the view walks every buffer header once
(pg_buffercache_pages() in pg_buffercache_pages.c), whatever the relations: so one statement
per snapshot, for the relations whose next vacuum the advice times (the visibility probe's
candidates). A missing extension costs nothing; a missing privilege, a timeout or a lock
turns the probe off with a note, and the advice estimates the pages missed instead.
"""

from __future__ import annotations

import psycopg

from vacuumlab.collect.probes import extension_note, per_relation
from vacuumlab.collect.visibility import candidates
from vacuumlab.pg.connect import Session
from vacuumlab.records.snapshot import PagesCached, ProbeNote, Relation, Snapshot

PROBE = "buffercache"
EXTENSION = "pg_buffercache"
#: pg_buffercache 1.2 (PostgreSQL 10+) grants its view and function to this role only.
_FIXES = ("GRANT pg_monitor TO {user};", "the server is busy; try again")
_REASON = (
    "shared buffers could not be read ({error}): the pages a vacuum reads in estimated from "
    "the relations' sizes"
)


def with_buffercache(
    session: Session, snapshot: Snapshot, earlier: Snapshot | None = None
) -> Snapshot:
    """The snapshot with its changed relations' pages in shared buffers, and a note when the
    probe could not run; unchanged when pg_buffercache is not installed."""
    if EXTENSION not in session.info.extensions:
        return snapshot
    relations = candidates(snapshot, earlier)
    if not relations:
        return snapshot
    cached, notes = pages_cached(session, relations)
    return snapshot.model_copy(update={"cached": cached, "notes": [*snapshot.notes, *notes]})


def pages_cached(
    session: Session, relations: list[Relation]
) -> tuple[list[PagesCached], list[ProbeNote]]:
    """Each relation's pages in shared buffers, in one statement; a note instead when the
    probe fails."""
    try:
        oids = [r.oid for r in relations]
        return per_relation(session, EXTENSION, "pages_cached", PagesCached, oids), []
    except psycopg.DatabaseError as exc:
        if isinstance(exc, psycopg.OperationalError) and session.conn.closed:
            raise
        return [], [extension_note(session, exc, PROBE, _REASON, _FIXES)]
