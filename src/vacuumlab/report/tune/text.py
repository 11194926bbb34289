"""A tune's answer on the terminal: the verdict, and the SQL that puts the winner in force on
the server the profile was captured on. From the store alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vacuumlab.records.tune_spec import VERDICT_SQL, VERDICT_STAGE, VERDICT_TEXT, kind

if TYPE_CHECKING:
    from vacuumlab.store import Point, Store


def latest_verdict(store: Store, run_id: int) -> Point | None:
    """The verdict written last (a resumed tune writes one each time it ends)."""
    verdicts = [p for p in store.points(run_id) if kind(p.params) == VERDICT_STAGE]
    return max(verdicts, key=lambda p: (p.params.get("measurements", 0), p.id), default=None)


def verdict_lines(store: Store, run_id: int) -> list[str]:
    point = latest_verdict(store, run_id)
    if point is None:
        return ["the tune ended before its verdict: resume it to finish"]
    lines = [str(point.metrics.get(VERDICT_TEXT, ""))]
    sql = point.metrics.get(VERDICT_SQL)
    if isinstance(sql, str) and sql:
        lines += ["", "-- run on the server the profile was captured on:", sql]
    return lines
