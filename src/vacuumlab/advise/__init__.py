"""The advisor: per table, where autovacuum stands and what to change, with the evidence.

Collecting is read-only (a read-only session, statement_timeout 5 s, lock_timeout 100 ms) and
takes a fixed number of queries however many tables there are, except ``--exact``, which reads
up to ``EXACT_TABLES`` tables with ``pgstattuple_approx``. Advising is pure: it works on
snapshots, so ``--input`` can advise from saved ones with no server.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import psycopg
from psycopg import sql

from vacuumlab import __version__
from vacuumlab.advise.context import Context, label
from vacuumlab.collect.snapshot import collect
from vacuumlab.pg import queries
from vacuumlab.pg.connect import Session, Timeouts, connect
from vacuumlab.records.advice import QUESTIONS, Advice, Finding, TableStatus
from vacuumlab.records.snapshot import ProbeNote, Snapshot

#: ``--exact`` reads at most this many tables, the largest dead shares first, each at most
#: ``EXACT_MAX_BYTES``: pgstattuple_approx reads the pages that are not all-visible.
EXACT_TABLES = 20
EXACT_MAX_BYTES = 1 << 30
TIMEOUTS = Timeouts(statement_ms=5000, lock_ms=100)

Question = Callable[[Context], list[Finding]]


def questions() -> list[tuple[str, Question]]:
    """Each question's module (``vacuumlab.advise.<question>``) and its ``findings``."""
    found = []
    for name in QUESTIONS:
        module = importlib.import_module(f"vacuumlab.advise.{name}")
        found.append((name, cast(Question, module.findings)))
    return found


def advise(
    snapshot: Snapshot,
    later: Snapshot | None = None,
    *,
    exact: dict[int, dict[str, float]] | None = None,
) -> Advice:
    """Answer every question from one snapshot, or two taken some time apart."""
    ctx = Context(snapshot, later, exact or {})
    findings: list[Finding] = []
    for _name, question in questions():
        findings.extend(question(ctx))
    order = {"critical": 0, "warning": 1, "info": 2}
    findings.sort(
        key=lambda f: (order[f.severity], -max((r.impact for r in f.recommendations), default=0))
    )
    return Advice(
        vacuumlab_version=__version__,
        taken_at=ctx.now.taken_at,
        interval_s=ctx.seconds,
        server=ctx.now.server,
        exact=bool(exact),
        findings=findings,
        tables=_statuses(ctx),
        notes=list(ctx.now.notes),
    )


def _statuses(ctx: Context) -> list[TableStatus]:
    from vacuumlab.advise.timing import table_rates

    rates = table_rates(ctx)
    owners = {t.toast.oid: t.heap for t in ctx.now.tables if t.toast is not None}
    rows = []
    for t in ctx.thresholds:
        dead_rate, to_vacuum, duration = rates.get(t.relation.oid, (None, None, None))
        rows.append(
            TableStatus(
                relation=label(t.relation, owners.get(t.relation.oid)),
                is_toast=t.is_toast,
                autovacuum_enabled=t.effective.enabled,
                dead=t.dead,
                vacuum_threshold=t.vacuum,
                vacuum_progress=t.vacuum_progress,
                inserted=t.inserted,
                insert_threshold=t.insert,
                modified=t.modified,
                analyze_threshold=t.analyze,
                overridden=sorted(t.effective.overridden),
                dead_per_second=dead_rate,
                seconds_to_vacuum=to_vacuum,
                estimated_vacuum_seconds=duration,
            )
        )
    return sorted(rows, key=lambda r: -r.vacuum_progress)


def collect_advice(
    dsn: str,
    *,
    interval: float | None = None,
    exact: bool = False,
    on_wait: Callable[[float], None] | None = None,
) -> tuple[Advice, int]:
    """Inspect the server read-only and advise; returns the advice and the statements sent."""
    with connect(dsn, read_only=True, timeouts=TIMEOUTS, application_name="vacuumlab-advise") as s:
        first = collect(s)
        later = None
        if interval:
            if on_wait is not None:
                on_wait(interval)
            time.sleep(interval)
            later = collect(s)
        measured, notes = _exact(s, later or first) if exact else ({}, [])
        statements = s.statements
    advice = advise(first, later, exact=measured)
    if notes:
        advice = advice.model_copy(update={"notes": [*advice.notes, *notes], "exact": True})
    return advice, statements


def _exact(s: Session, snapshot: Snapshot) -> tuple[dict[int, dict[str, float]], list[ProbeNote]]:
    """pgstattuple_approx for the tables most likely bloated, within a size limit. It reads
    every page that is not all-visible, so it is opt-in and bounded."""
    if "pgstattuple" not in s.info.extensions:
        return {}, [
            ProbeNote(
                probe="exact",
                reason="the pgstattuple extension is not installed",
                fix="CREATE EXTENSION pgstattuple;",
            )
        ]
    candidates = sorted(
        (t.heap for t in snapshot.tables if (t.heap.heap_bytes or 0) <= EXACT_MAX_BYTES),
        key=lambda r: -(r.n_dead_tup or 0),
    )[:EXACT_TABLES]
    measured: dict[int, dict[str, float]] = {}
    notes: list[ProbeNote] = []
    for rel in candidates:
        query = sql.SQL(queries.tag("SELECT * FROM pgstattuple_approx({}::regclass)", "exact"))
        s.statements += 1
        try:
            row = s.conn.execute(query.format(sql.Literal(rel.oid))).fetchone()
        except psycopg.Error as exc:
            notes.append(
                ProbeNote(probe="exact", reason=f"{rel.qualified_name}: {exc.diag.message_primary}")
            )
            continue
        if row is not None:
            measured[rel.oid] = _approx(row)
    return measured, notes


def _approx(row: Sequence[Any]) -> dict[str, float]:
    # pgstattuple_approx columns: table_len, scanned_percent, approx_tuple_count,
    # approx_tuple_len, approx_tuple_percent, dead_tuple_count, dead_tuple_len,
    # dead_tuple_percent, approx_free_space, approx_free_percent (pgstattuple docs).
    names = (
        "table_len",
        "scanned_percent",
        "approx_tuple_count",
        "approx_tuple_len",
        "approx_tuple_percent",
        "dead_tuple_count",
        "dead_tuple_len",
        "dead_tuple_percent",
        "approx_free_space",
        "approx_free_percent",
    )
    return {name: float(value) for name, value in zip(names, row, strict=False)}


__all__ = ["Advice", "advise", "collect_advice", "questions"]
