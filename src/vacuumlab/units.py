"""How numbers read to a person: shares as percentages, and as multiples once a percentage
would run into the thousands. A leaf: it imports nothing of vacuumlab, so the advisor, the
reports and the CLI can all word a number the same way."""

from __future__ import annotations

#: Up to this ratio a share reads as a percentage ("900%"), beyond it as a multiple ("76×").
PERCENT_UP_TO = 10.0


def is_multiple(ratio: float) -> bool:
    """Whether the ratio reads as a multiple ("76×") rather than a percentage."""
    return ratio > PERCENT_UP_TO


def multiple(ratio: float) -> str:
    """A ratio as a rounded multiple: ``"1,000×"``."""
    return f"{ratio:,.0f}×"


def share(ratio: float) -> str:
    """A ratio (1.0 = 100%) as a reader takes it in: ``"90%"``, or ``"1,000×"`` beyond 1,000%."""
    return multiple(ratio) if is_multiple(ratio) else f"{ratio:,.0%}"


def share_of(ratio: float, what: str) -> str:
    """``ratio`` of ``what``: ``"90% of its threshold"`` or, once the percentage runs into the
    thousands, ``"1,000× its threshold"``."""
    return f"{share(ratio)} {what}" if is_multiple(ratio) else f"{share(ratio)} of {what}"


def duration(seconds: float) -> str:
    """Seconds as a person reads them: ``4.2 s``, ``35 s``, ``12.5 min``, ``3.0 h``, ``2.1 d``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    if seconds < 172_800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def rate(per_second: float) -> str:
    """A rate per second: one decimal below 100, whole numbers above."""
    return f"{per_second:,.1f}/s" if per_second < 100 else f"{per_second:,.0f}/s"


def count(value: float) -> str:
    """A count, short: ``950``, ``12k``, ``1.2M``."""
    if value < 10_000:
        return f"{value:,.0f}"
    if value < 1_000_000:
        return f"{value / 1000:,.0f}k"
    return f"{value / 1_000_000:,.1f}M"
