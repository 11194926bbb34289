"""Server settings: validated against the server's own ``pg_settings`` before anything is written.

A value is parsed the way PostgreSQL parses it (``guc.c``: ``parse_bool``, ``parse_int``,
``parse_real`` with units, enums case-insensitive), converted to the setting's base unit and
checked against ``min_val``/``max_val``. Every setting of a request is checked before the first
``ALTER SYSTEM`` runs, so a bad request changes nothing.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches

from psycopg import sql

from vacuumlab.errors import VacuumlabError
from vacuumlab.pg import queries
from vacuumlab.pg.connect import Session, connect

# Memory units in bytes and time units in microseconds, as in guc.c's unit tables.
_MEMORY = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
_TIME = {"us": 1, "ms": 1000, "s": 1000**2, "min": 60 * 1000**2, "h": 3600 * 1000**2}
_TIME["d"] = 24 * _TIME["h"]
_BOOL = {"on": True, "off": False, "true": True, "false": False, "yes": True, "no": False}
_BOOL |= {"1": True, "0": False}
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")
_RELOAD_CONTEXTS = {"sighup", "superuser", "user", "superuser-backend", "backend"}


@dataclass(frozen=True, slots=True)
class SettingSpec:
    """What ``pg_settings`` says a setting accepts."""

    name: str
    setting: str
    unit: str | None
    vartype: str
    context: str
    min_val: str | None
    max_val: str | None
    enumvals: list[str] | None


@dataclass(frozen=True, slots=True)
class SettingChange:
    """One validated change: the literal to write and the value the server should then show."""

    name: str
    value: str | None  # None resets the setting to its configuration-file value
    expected: str | None  # pg_settings.setting once applied (base unit); None when reset
    needs_restart: bool


def load_specs(session: Session) -> dict[str, SettingSpec]:
    """Every row of ``pg_settings`` (a few hundred): enough to validate and to suggest names."""
    text = (
        "SELECT name, setting, unit, vartype, context, min_val, max_val, enumvals FROM pg_settings"
    )
    rows = session.query(queries.tag(text, "setting_specs"), SettingSpec)
    return {spec.name: spec for spec in rows}


def plan(
    specs: Mapping[str, SettingSpec], request: Mapping[str, str | None]
) -> list[SettingChange]:
    """Validate a whole request; the first problem raises a one-line VacuumlabError."""
    changes = []
    for raw_name, value in request.items():
        name = raw_name.strip().lower()
        spec = specs.get(name)
        if spec is None:
            raise VacuumlabError(_unknown(raw_name, specs))
        if spec.context == "internal":
            raise VacuumlabError(f"setting {name} is fixed when PostgreSQL is built")
        if value is None:
            changes.append(SettingChange(name, None, None, spec.context == "postmaster"))
            continue
        literal, expected = validate(spec, str(value))
        changes.append(SettingChange(name, literal, expected, spec.context == "postmaster"))
    return changes


def _unknown(name: str, specs: Mapping[str, SettingSpec]) -> str:
    close = get_close_matches(name.lower(), list(specs), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown setting {name!r}{hint}"


def validate(spec: SettingSpec, value: str) -> tuple[str, str]:
    """The literal to write and the expected ``pg_settings.setting``; raises when invalid."""
    if spec.vartype == "bool":
        return _validate_bool(spec, value)
    if spec.vartype == "enum":
        return _validate_enum(spec, value)
    if spec.vartype in ("integer", "real"):
        return _validate_number(spec, value)
    return value, value


def _validate_bool(spec: SettingSpec, value: str) -> tuple[str, str]:
    parsed = _BOOL.get(value.strip().lower())
    if parsed is None:
        raise VacuumlabError(f"{spec.name} takes on or off, not {value!r}")
    text = "on" if parsed else "off"
    return text, text


def _validate_enum(spec: SettingSpec, value: str) -> tuple[str, str]:
    allowed = spec.enumvals or []
    for option in allowed:
        if option.lower() == value.strip().lower():
            return option, option
    raise VacuumlabError(f"{spec.name} takes one of {', '.join(allowed)}, not {value!r}")


def _validate_number(spec: SettingSpec, value: str) -> tuple[str, str]:
    number = to_base_unit(spec, value)
    if spec.vartype == "integer":
        number = float(round(number))
    low = float(spec.min_val) if spec.min_val is not None else -math.inf
    high = float(spec.max_val) if spec.max_val is not None else math.inf
    if not low <= number <= high:
        unit = f" {spec.unit}" if spec.unit else ""
        raise VacuumlabError(
            f"{spec.name} = {value} is out of range: {spec.min_val} to {spec.max_val}{unit}"
        )
    expected = str(int(number)) if spec.vartype == "integer" else f"{number:g}"
    return value.strip(), expected


def to_base_unit(spec: SettingSpec, value: str) -> float:
    """``value`` (e.g. ``"1min"``, ``"64MB"``, ``"200"``) in the unit pg_settings reports."""
    match = _NUMBER.match(value)
    if match is None:
        raise VacuumlabError(f"{spec.name} takes a number, not {value!r}")
    number, unit = float(match[1]), match[2]
    if not unit:
        return number
    table, base = _unit_table(spec)
    if table is None or unit not in table:
        valid = ", ".join(table) if table else "no unit"
        raise VacuumlabError(f"{spec.name}: unit {unit!r} is not valid here; use {valid}")
    return number * table[unit] / base


def _unit_table(spec: SettingSpec) -> tuple[dict[str, int] | None, float]:
    """The unit family of a setting and the size of its base unit (``8kB`` is 8192 B)."""
    match = re.match(r"^(\d*)\s*([A-Za-z]+)$", spec.unit or "")
    if match is None:
        return None, 1.0
    scale, unit = int(match[1] or 1), match[2]
    for table in (_MEMORY, _TIME):
        if unit in table:
            return table, float(scale * table[unit])
    return None, 1.0


def alter_system(change: SettingChange) -> sql.Composed:
    """The ALTER SYSTEM statement for one validated change."""
    name = sql.SQL(".").join(sql.Identifier(part) for part in change.name.split("."))
    if change.value is None:
        return sql.SQL("ALTER SYSTEM RESET {}").format(name)
    return sql.SQL("ALTER SYSTEM SET {} = {}").format(name, sql.Literal(change.value))


def apply_settings(dsn: str, request: Mapping[str, str | None]) -> list[SettingChange]:
    """Validate ``request`` against the server, then ALTER SYSTEM each and reload.

    The caller restarts the server when a change ``needs_restart``.
    """
    with connect(dsn, read_only=False) as session:
        specs = load_specs(session)
        changes = plan(specs, request)
        for change in changes:
            session.execute(alter_system(change))
        session.execute("SELECT pg_reload_conf()")
    return changes


def wait_until_applied(dsn: str, changes: list[SettingChange], timeout: float = 10.0) -> None:
    """Poll new sessions until every change shows in ``pg_settings`` (reload is asynchronous)."""
    pending = {c.name: c.expected for c in changes if c.expected is not None}
    deadline = time.monotonic() + timeout
    while pending:
        with connect(dsn) as session:
            specs = load_specs(session)
        pending = {n: e for n, e in pending.items() if not _same(specs[n], e)}
        if pending and time.monotonic() > deadline:
            raise VacuumlabError(f"the server did not take {', '.join(sorted(pending))} in time")
        if pending:
            time.sleep(0.05)


def _same(spec: SettingSpec, expected: str) -> bool:
    if spec.vartype in ("integer", "real"):
        return math.isclose(float(spec.setting), float(expected), rel_tol=1e-9)
    return spec.setting.lower() == expected.lower()
