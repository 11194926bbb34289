"""Did the measurement move the way a recommendation said it would? Pure: figures in, verdict
out.

What a setting promises, in the terms a few minutes of measurement can check:

- a lower threshold or scale factor, a shorter naptime, autovacuum switched on: the table is
  vacuumed more often, so its dead tuples peak lower and its size grows no faster;
- a cheaper or unthrottled cost budget: each vacuum ends sooner, so dead tuples peak lower;
- the insert threshold: vacuums more often (an insert-only table has no dead tuples to lower);
- freeze ages, analyze thresholds, logging: nothing a window of minutes shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from vacuumlab.records.verification import Direction, Outcome, Verdict, WindowFigures

#: A peak must fall by at least this share to count as lower: one window against one window,
#: and a sawtooth's peak depends on where in its cycle a window starts.
MARGIN: Final = 0.10
#: Size growth within this share of the table's size (or one 8 kB page) is no growth.
GROWTH_SLACK: Final = 0.01
PAGE: Final = 8192

DOWN: Final[Direction] = "peak dead tuples down"
MORE: Final[Direction] = "vacuums more often"
FLAT: Final[Direction] = "bloat growth not up"
_TRIGGERS = {"autovacuum", "autovacuum_enabled", "autovacuum_naptime"}


def promised(setting: str) -> list[Direction]:
    """What applying ``setting`` as advised should do to a table, as far as it shows soon."""
    if "insert" in setting:
        return [MORE]
    if setting in _TRIGGERS or setting in {
        "autovacuum_vacuum_scale_factor",
        "autovacuum_vacuum_threshold",
        "autovacuum_vacuum_max_threshold",
    }:
        return [DOWN, MORE, FLAT]
    if "cost" in setting:
        return [DOWN, FLAT]
    return []


def held(direction: Direction, before: WindowFigures, after: WindowFigures) -> bool | None:
    """Whether the move ``direction`` names happened; None when the figures cannot say."""
    if direction == DOWN:
        if before.peak_dead is None or after.peak_dead is None or before.peak_dead <= 0:
            return None
        return after.peak_dead <= before.peak_dead * (1 - MARGIN)
    if direction == MORE:
        low, high = before.vacuums_per_hour, after.vacuums_per_hour
        return None if low is None or high is None else high > low
    grown, grows = before.growth_bytes, after.growth_bytes
    if grown is None or grows is None:
        return None
    slack = max(PAGE, GROWTH_SLACK * (after.start_bytes or 0))
    return grows <= max(grown, 0) + slack


def judge(
    setting: str,
    value: str,
    relation: str | None,
    measured: Sequence[tuple[str, WindowFigures, WindowFigures]],
) -> Outcome:
    """The verdict on one applied recommendation, from the relations it was meant to move
    (its own table; every watched one for a server setting raised by no table's finding)."""
    directions = promised(setting)
    checks = [
        (name, direction, held(direction, before, after))
        for name, before, after in measured
        for direction in directions
    ]
    known = [(name, d, ok) for name, d, ok in checks if ok is not None]
    verdict: Verdict
    if not known:
        verdict = "not measurable here"
        detail = (
            "nothing it promises shows in these windows"
            if not directions
            else ("the windows hold no figures to compare")
        )
    elif all(ok for _, _, ok in known):
        verdict = "moved as advised"
        detail = "; ".join(sorted({d for _, d, _ in known}))
    else:
        verdict = "did not move"
        detail = "not: " + "; ".join(f"{d} ({name})" for name, d, ok in known if not ok)
    return Outcome(
        relation=relation,
        setting=setting,
        value=value,
        promised=directions,
        verdict=verdict,
        detail=detail,
    )
