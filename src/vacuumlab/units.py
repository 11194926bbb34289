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
