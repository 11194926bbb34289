"""What ``vacuumlab watch --record`` keeps of each refresh: one point of a run of kind
``watch`` in the results store (store.py), whose metrics the report draws its timelines from
(report/watch/). Pure, records only: the recorder writes these names, the report reads them.

A point's parameters are ``{"refresh": N}`` (1, 2, …), its start the moment the snapshot was
taken (or the failed refresh began) and its end that plus the refresh's wall time. Its metrics:

- ``up`` 1 when the refresh read the server, 0 when it did not (``error`` says why);
- the refresh's cost: ``refresh_s`` and ``statements``;
- the server: ``relations``, ``due``, ``vacuums``, ``workers_busy``, ``workers_available``,
  ``cost_limit_each``, ``xid_age`` and ``mxid_age`` with their forcing ages, and
  ``oldest_holder_xid_age``;
- ``dead|schema.table`` for every relation with dead tuples or being vacuumed, up to
  :data:`RECORD_TABLES` of them, those with the most first; ``dead_relations`` counts how many
  had dead tuples, so a reader knows whether a relation absent from a point had none;
- ``vacuum|schema.table`` for every vacuum running in the database: the share of its heap
  scanned;
- ``ended|schema.table`` for every relation whose last vacuum (manual or auto) ended since the
  previous refresh: that end in seconds since the epoch, and ``took|schema.table`` its length
  when known (18's total vacuum times: watch/view.py) — so a vacuum shorter than the time
  between two refreshes, which no refresh sees running, is still on the timeline;
- ``snapshot_zlib_b64``: the snapshot itself (its JSON, zlib-compressed, base64), so a watched
  period can be replayed: :func:`snapshot_of` reads it back.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Final

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.live import LiveView, Wraparound
from vacuumlab.records.snapshot import Snapshot, parse_snapshot

STUDY: Final = "watch"
DEAD: Final = "dead"
VACUUM: Final = "vacuum"
ENDED: Final = "ended"
TOOK: Final = "took"
SNAPSHOT: Final = "snapshot_zlib_b64"
#: Relations whose dead tuples one point keeps at most (about 40 bytes each).
RECORD_TABLES: Final = 500

Metrics = dict[str, float | int | str | None]


def table_metric(kind: str, label: str) -> str:
    """``dead|public.jobs``: one relation's value in a point's metrics."""
    return f"{kind}|{label}"


def split_metric(name: str) -> tuple[str, str] | None:
    """``("dead", "public.jobs")`` for a relation's metric, None for any other."""
    kind, sep, label = name.partition("|")
    return (kind, label) if sep else None


def view_metrics(
    view: LiveView, snapshot: Snapshot | None = None, *, seconds: float, statements: int
) -> Metrics:
    """A refresh that read the server: its figures, its relations' dead tuples and vacuums
    (the vacuums that ended since the previous refresh need its ``snapshot``)."""
    wrap: dict[str, Wraparound] = {w.counter: w for w in view.wraparound}
    holder = view.oldest_holder()
    found: Metrics = {
        "up": 1,
        "error": None,
        "refresh_s": round(seconds, 4),
        "statements": statements,
        "relations": view.relations,  # every one, those without a row too
        "due": view.due,
        "vacuums": len(view.vacuums),
        "workers_busy": view.workers.busy,
        "workers_available": view.workers.available,
        "cost_limit_each": view.workers.cost_limit_each,
        "oldest_holder_xid_age": None if holder is None else holder.xid_age,
    }
    for counter in ("xid", "mxid"):
        w = wrap.get(counter)
        found[f"{counter}_age"] = None if w is None else w.age
        found[f"{counter}_forcing_age"] = None if w is None else w.forcing_age
    dirty = [t for t in view.tables if t.dead > 0 or t.running]
    found["dead_relations"] = sum(1 for t in dirty if t.dead > 0)
    for t in sorted(dirty, key=lambda t: (not t.running, -t.dead))[:RECORD_TABLES]:
        found[table_metric(DEAD, t.label)] = t.dead
    here = {t.label for t in view.tables}
    for v in view.vacuums:
        if v.relation in here:
            found[table_metric(VACUUM, v.relation)] = round(v.scanned_share, 4)
    if snapshot is not None:
        found |= ended(view, snapshot)
    return found


def ended(view: LiveView, snapshot: Snapshot) -> Metrics:
    """The vacuums that ended since the previous refresh (none on the first: no interval)."""
    if not view.interval_s:
        return {}
    since = view.taken_at - timedelta(seconds=view.interval_s)
    live = {t.oid: t for t in view.tables}
    found: Metrics = {}
    for table in snapshot.tables:
        for rel in (table.heap, table.toast):
            row = live.get(rel.oid) if rel is not None else None
            if rel is None or row is None:
                continue
            end = max((m for m in (rel.last_vacuum, rel.last_autovacuum) if m), default=None)
            if end is not None and end > since:
                found[table_metric(ENDED, row.label)] = end.timestamp()
                found[table_metric(TOOK, row.label)] = row.last_vacuum_s
    return found


def error_metrics(error: str, *, seconds: float) -> Metrics:
    """A refresh that could not read the server."""
    return {"up": 0, "error": error, "refresh_s": round(seconds, 4), "statements": 0}


def pack_snapshot(snapshot: Snapshot) -> str:
    return base64.b64encode(zlib.compress(snapshot.model_dump_json().encode(), 1)).decode()


def snapshot_of(metrics: Mapping[str, object], origin: str) -> Snapshot | None:
    """The snapshot a point kept, or None for a refresh that failed."""
    packed = metrics.get(SNAPSHOT)
    if not isinstance(packed, str):
        return None
    try:
        raw = json.loads(zlib.decompress(base64.b64decode(packed, validate=True)))
    except (binascii.Error, zlib.error, ValueError):
        raise VacuumlabError(f"{origin}: the recorded snapshot is damaged") from None
    return parse_snapshot(raw, origin)


def watched_period(
    points: Sequence[Mapping[str, object]], origin: str
) -> tuple[Snapshot, Snapshot]:
    """The first and the last snapshot a recorded watch kept, for rates over the whole period
    it watched (``simulate --run``); refreshes that failed are passed over."""
    kept = [
        snap
        for i, metrics in enumerate(points, start=1)
        if (snap := snapshot_of(metrics, f"{origin}, point {i}")) is not None
    ]
    if len(kept) < 2:
        raise VacuumlabError(
            f"{origin} kept {len(kept)} snapshot{'s' if len(kept) != 1 else ''}: rates need two "
            "(watch --record for two refreshes or more)"
        )
    return kept[0], kept[-1]
