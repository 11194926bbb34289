"""One view of several databases (``watch`` and ``exporter --all-databases``), from the views
of each (watch/view.py, their rows naming their database). Pure: records only.

- **The queue is ranked together**: those being vacuumed, then those due, then the others by
  the start each database's simulation predicts and by how close they are to a threshold.
  A worker takes one database at a time and the launcher turns from one database to the next
  (autovacuum.c, do_start_worker()), so among those being vacuumed or due, each database's
  first comes before any database's second: its own order is kept, and the databases take
  turns. A cap (``--max-tables``) keeps the head of that ranking across the server; each
  database's view, capped at as many rows, holds every row the head can take.
- **What the server shares is said once**: the workers, the vacuums running (each as its
  own database's view tells it: the time left needs the relation's row), the horizon holders
  (one holds vacuum back when it holds back any database read), and the cluster's wraparound
  ages with the oldest relation of all the databases read.
- **The counts** (relations, the queue, dead tuples, past each threshold) are the sums, and
  each database's own are kept in ``databases``; the databases that could not be read are in
  ``unread`` with the reason and the fix.

Each database's predicted starts come from a simulation of that database alone, with every
worker free for it: the launcher's round of the databases (model/simulator/cluster.py) is
not applied to the live view.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from vacuumlab.records.live import (
    DatabaseLive,
    Holder,
    LiveView,
    PastThreshold,
    RunningVacuum,
    TableLive,
    Wraparound,
)
from vacuumlab.records.snapshot import ProbeNote
from vacuumlab.watch.view import row_key

#: The rank of a row among every database's (see ranked()).
Rank = tuple[int, float, float, int, str]


def merged(
    views: Sequence[LiveView],
    *,
    home: str,
    unread: Mapping[str, ProbeNote],
    limit: int | None = None,
) -> LiveView:
    """The view of every database of ``views`` (at least one, rows naming their database),
    ``home`` (the DSN's database) giving what the server shares when it is among them."""
    first = next((v for v in views if v.database == home), views[0])
    past = [v.past_threshold for v in views]
    return LiveView(
        taken_at=min(v.taken_at for v in views),
        database=first.database,
        version_num=first.version_num,
        interval_s=first.interval_s,
        horizon_s=first.horizon_s,
        vacuums=vacuums(views, first),
        tables=ranked(views, limit),
        relations=sum(v.relations for v in views),
        quiet=sum(v.quiet for v in views),
        due=sum(v.due for v in views),
        dead_tuples=sum(v.dead_tuples for v in views),
        past_threshold=PastThreshold(
            vacuum=sum(p.vacuum for p in past),
            insert=sum(p.insert for p in past),
            analyze=sum(p.analyze for p in past),
        ),
        workers=first.workers,
        holders=holders(views, first),
        wraparound=[_oldest(views, w) for w in first.wraparound],
        notes=[_named(v.database, n) for v in views for n in v.notes],
        databases=[_counts(v) for v in views],
        unread=dict(unread),
    )


def ranked(views: Sequence[LiveView], limit: int | None) -> list[TableLive]:
    """Every view's rows ranked together, the first ``limit`` of them (all when None)."""
    keyed: list[tuple[Rank, TableLive]] = []
    for view in views:
        places = [0, 0, 0]  # rows of each group so far: a view's rows come group by group
        for position, t in enumerate(view.tables):
            group, start, _, nearness, _ = row_key(t)
            place = places[group]
            places[group] += 1
            # Running or due: by place among its database's own, the databases in turn; the
            # others by predicted start and nearness to a threshold. Then the place in its
            # own queue, and its database's name, decide every tie: each database's order is
            # kept, and the databases take turns among equals.
            middle = float(place) if group < 2 else nearness
            keyed.append(((group, start, middle, position, view.database), t))
    if limit is not None and 0 <= limit < len(keyed):
        return [t for _, t in heapq.nsmallest(limit, keyed, key=_rank)]
    return [t for _, t in sorted(keyed, key=_rank)]


def _rank(pair: tuple[Rank, TableLive]) -> Rank:
    return pair[0]


def vacuums(views: Sequence[LiveView], first: LiveView) -> list[RunningVacuum]:
    """The vacuums running in the cluster (every view lists them all), each as its own
    database's view tells it when that database was read, its relation named
    ``database:schema.table``."""
    own = {(v.database, r.pid): r for v in views for r in v.vacuums if r.database == v.database}
    found = []
    for running in first.vacuums:
        told = own.get((running.database, running.pid), running)
        found.append(told.model_copy(update={"relation": f"{told.database}:{told.relation}"}))
    return found


def holders(views: Sequence[LiveView], first: LiveView) -> list[Holder]:
    """The horizon holders (the same in every view), each holding vacuum back here when it
    holds back any database read."""
    here = {(h.kind, h.name) for v in views for h in v.holders if h.holds_here}
    return [
        h
        if h.holds_here or (h.kind, h.name) not in here
        else h.model_copy(update={"holds_here": True})
        for h in first.holders
    ]


def _oldest(views: Sequence[LiveView], cluster: Wraparound) -> Wraparound:
    """The cluster's ages of one counter, with the oldest relation of every database read."""
    best: tuple[str, Wraparound] | None = None
    for view in views:
        mine = next((w for w in view.wraparound if w.counter == cluster.counter), None)
        if mine is None or mine.table is None:
            continue
        if best is None or (mine.table_age or 0) > (best[1].table_age or 0):
            best = view.database, mine
    if best is None:
        return cluster.model_copy(
            update={"table": None, "table_age": None, "table_forcing_age": None}
        )
    database, oldest = best
    return cluster.model_copy(
        update={
            "table": f"{database}:{oldest.table}",
            "table_age": oldest.table_age,
            "table_forcing_age": oldest.table_forcing_age,
        }
    )


def _counts(view: LiveView) -> DatabaseLive:
    return DatabaseLive(
        database=view.database,
        relations=view.relations,
        due=view.due,
        dead_tuples=view.dead_tuples,
        past_threshold=view.past_threshold,
        wraparound=view.wraparound,
    )


def _named(database: str, note: ProbeNote) -> ProbeNote:
    return note.model_copy(update={"reason": f"database {database}: {note.reason}"})
