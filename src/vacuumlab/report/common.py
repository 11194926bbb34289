"""What the reports share: the template environment and the formatting of store values.
Pure: it reads values, never a server; and light, it loads no plotting library."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from vacuumlab.store import Metric

#: What a table shows for a value that was not measured.
DASH = "—"


@dataclass(frozen=True, slots=True)
class Cell:
    """A formatted number and, optionally, its 95 % CI in smaller type."""

    value: str
    ci: str | None = None


def metric(metrics: Mapping[str, Metric], name: str) -> float | None:
    value = metrics.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def text(value: Any) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def when(moment: datetime | None) -> str:
    return DASH if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def duration(start: datetime, end: datetime | None) -> str:
    if end is None:
        return DASH
    seconds = round((end - start).total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"


def machine_rows(machine: Mapping[str, Any]) -> list[tuple[str, str]]:
    memory = machine.get("memory_bytes")
    memory_text = (
        f"{memory / 2**30:.1f} GiB"
        if isinstance(memory, int | float) and not isinstance(memory, bool)
        else DASH
    )
    return [
        ("host", text(machine.get("hostname"))),
        ("CPU cores", text(machine.get("cpu_count"))),
        ("memory", memory_text),
        ("platform", text(machine.get("platform"))),
        ("architecture", text(machine.get("machine"))),
        ("Python", text(machine.get("python"))),
        ("vacuumlab", text(machine.get("vacuumlab_version"))),
    ]


@cache
def environment() -> Environment:
    return Environment(
        loader=PackageLoader("vacuumlab.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def number_format(template: str, scale: float = 1.0) -> Callable[[float | None], str]:
    """A formatter of a value that may be missing: DASH, or ``template`` filled with the value
    times ``scale``."""

    def fmt(value: float | None) -> str:
        return DASH if value is None else template.format(value * scale)

    return fmt


#: A count with thousands separators, rounded.
count = number_format("{:,.0f}")
#: A value already in percent, rounded: ``42 %``.
percent = number_format("{:.0f} %")
#: A ratio: ``3.8×``.
times = number_format("{:.1f}×")


def format_seconds(value: float) -> str:
    """Seconds with two decimals below 10, one below 1000, none above."""
    if abs(value) < 10:
        return f"{value:.2f}"
    return f"{value:.1f}" if abs(value) < 1000 else f"{value:.0f}"
