"""Inspect a server read-only and advise: the advisor's collecting half, which runs the
collectors and then the advisor, so it sits above both (in the lab, beside ``advise --verify``).

Collecting takes a fixed number of queries however many tables there are, except ``--exact``
(:mod:`vacuumlab.collect.exact`); where pg_visibility is installed, two more read the changed
relations' visibility maps (:mod:`vacuumlab.collect.visibility`). The advice itself is pure
(:func:`vacuumlab.advise.advise`), so ``--input`` can advise from saved snapshots with no
server.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from vacuumlab.advise import advise
from vacuumlab.collect.buffercache import with_buffercache
from vacuumlab.collect.exact import with_exact
from vacuumlab.collect.snapshot import collect
from vacuumlab.collect.visibility import with_visibility
from vacuumlab.memory import collector_paused
from vacuumlab.pg.connect import Session, Timeouts, connect
from vacuumlab.records.advice import Advice
from vacuumlab.records.snapshot import Snapshot

#: A read-only session that gives way: 5 s per statement, 100 ms for a lock.
TIMEOUTS = Timeouts(statement_ms=5000, lock_ms=100)


def collect_advice(
    dsn: str,
    *,
    interval: float | None = None,
    exact: bool = False,
    on_wait: Callable[[float], None] | None = None,
) -> tuple[Advice, int]:
    """Inspect the server read-only and advise; returns the advice and the statements sent."""
    # One pause around both halves: the objects the snapshot made are walked once, after the
    # advice, rather than once after each.
    with collector_paused():
        with connect(
            dsn, read_only=True, timeouts=TIMEOUTS, application_name="vacuumlab-advise"
        ) as s:
            first = collect(s)
            later = _after(s, interval, on_wait) if interval else None
            if later is None:
                first = probed(s, first, exact=exact)
            else:
                later = probed(s, later, first, exact=exact)
            statements = s.statements
        return advise(first, later), statements


def probed(
    session: Session, snap: Snapshot, first: Snapshot | None = None, *, exact: bool = False
) -> Snapshot:
    """``snap``, the snapshot the findings describe (the later of two, ``first`` being the
    earlier), with what the optional probes add: the pages each changed relation's next
    vacuum reads, from its visibility map where pg_visibility allows; how many of their pages
    are in shared buffers, where pg_buffercache allows; with ``exact``, the bloat probe."""
    if first is None:
        snap = with_buffercache(session, with_visibility(session, snap))
    else:
        snap = with_buffercache(session, with_visibility(session, snap, first), first)
    return with_exact(session, snap) if exact else snap


def collect_two(
    dsn: str,
    interval: float,
    *,
    on_wait: Callable[[float], None] | None = None,
    application_name: str = "vacuumlab-advise",
) -> tuple[Snapshot, Snapshot]:
    """Two snapshots ``interval`` seconds apart, read-only, in one session."""
    with connect(dsn, read_only=True, timeouts=TIMEOUTS, application_name=application_name) as s:
        first = collect(s)
        return first, _after(s, interval, on_wait)


def _after(session: Session, interval: float, on_wait: Callable[[float], None] | None) -> Snapshot:
    """The second snapshot, ``interval`` seconds after the first."""
    if on_wait is not None:
        on_wait(interval)
    time.sleep(interval)
    return collect(session)
