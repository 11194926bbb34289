"""Advice records built by hand for the renderers' tests: a server, findings,
recommendations, table statuses, and one full advice with something in every part."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vacuumlab.records.advice import Advice, Finding, Question, Recommendation, TableStatus
from vacuumlab.records.snapshot import ProbeNote, ServerInfo

TAKEN = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)


def server(**changes: Any) -> ServerInfo:
    fields: dict[str, Any] = {
        "version_num": 170002,
        "version": "PostgreSQL 17.2 on x86_64-pc-linux-gnu, compiled by gcc, 64-bit",
        "database": "shop",
        "user": "dba",
        "is_superuser": True,
        "in_recovery": False,
        "block_size": 8192,
        "can_read_all_stats": True,
        "extensions": frozenset({"pg_stat_statements"}),
        "columns": frozenset(),
    }
    return ServerInfo(**(fields | changes))


def rec(
    setting: str, impact: float, *, relation: str = "public.orders", **kw: Any
) -> Recommendation:
    return Recommendation(
        sql=kw.pop("sql", f"ALTER TABLE {relation} SET ({setting} = 0.01);"),
        reason=kw.pop("reason", f"lower {setting}"),
        scope=kw.pop("scope", "table"),
        setting=setting,
        value=kw.pop("value", "0.01"),
        impact=impact,
        **kw,
    )


def finding(
    question: Question, title: str, *, relation: str | None = "public.orders", **kw: Any
) -> Finding:
    return Finding(
        question=question,
        severity=kw.pop("severity", "warning"),
        relation=relation,
        title=title,
        detail=kw.pop("detail", f"why {title}"),
        **kw,
    )


def status(relation: str, **kw: Any) -> TableStatus:
    fields: dict[str, Any] = {
        "relation": relation,
        "is_toast": False,
        "autovacuum_enabled": True,
        "dead": 12345,
        "vacuum_threshold": 20050.0,
        "vacuum_progress": 12345 / 20050,
        "inserted": 1000,
        "insert_threshold": 21000.0,
        "modified": 3,
        "analyze_threshold": 10025.0,
        "overridden": [],
    }
    return TableStatus(**(fields | kw))


def advice(**kw: Any) -> Advice:
    return Advice(
        vacuumlab_version="0.1.0",
        taken_at=kw.pop("taken_at", TAKEN),
        server=kw.pop("server", server()),
        **kw,
    )


def full_advice() -> Advice:
    """Findings in several questions, out of display order, with ranked recommendations."""
    return advice(
        interval_s=60.0,
        findings=[
            finding(
                "thresholds",
                "Dead tuples pile up",
                evidence={"n_dead_tup": 1234567, "scale_factor": 0.2, "share": 0.0042},
                recommendations=[rec("autovacuum_vacuum_scale_factor", 0.5)],
            ),
            finding(
                "wraparound",
                "Freeze age is high",
                severity="critical",
                relation=None,
                evidence={"age": 1_500_000_000, "enabled": True, "unknown": None},
                recommendations=[
                    rec("autovacuum_freeze_max_age", 0.9, scope="server", sql="VACUUM FREEZE;")
                ],
            ),
            finding("wraparound", "A minor note", severity="info", relation="public.items"),
            finding(
                "hot",
                "Few HOT updates",
                recommendations=[rec("fillfactor", 0.7), rec("toast.fillfactor", 0.1)],
            ),
        ],
        tables=[
            status("public.orders", overridden=["autovacuum_vacuum_scale_factor"]),
            status(
                "public.orders (TOAST)",
                is_toast=True,
                analyze_threshold=None,
                insert_threshold=None,
                dead_per_second=12.345,
                seconds_to_vacuum=7200.0,
                estimated_vacuum_seconds=42.0,
            ),
        ],
        notes=[ProbeNote(probe="backends", reason="permission denied", fix="GRANT pg_monitor")],
    )
