"""The space a tune searches: which settings, over which ranges.

The default fits the profile: only its tables, and only settings that can matter for them.
A table without inserts gets no insert threshold; one without updates no fillfactor; one
without updates or deletes no vacuum threshold. ``autovacuum_max_workers`` and the server's
cost limit matter only when several relations compete for workers, so one table searches
its own cost limit instead. Every range lies inside what ``model/knobs`` allows on the
profile's server version (the SQL is for that server) and on the lab's (the trials run there).

``--space FILE`` narrows it, as TOML::

    [server]
    autovacuum_naptime = [5, 120]          # a range, in the setting's base unit (s)
    autovacuum_max_workers = false         # not searched

    [table."public.jobs"]
    autovacuum_vacuum_scale_factor = { levels = [0.01, 0.05, 0.2] }   # only these
    fillfactor = 90                        # fixed in every trial, not searched
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from vacuumlab.errors import VacuumlabError
from vacuumlab.model.knobs import Knob, Scope, knob
from vacuumlab.records.profile import CapturedTable, Profile
from vacuumlab.records.tune import Dimension
from vacuumlab.studies.steps import read_toml

#: Default ranges, in base units: (low, high, log scale).
_TABLE_RANGES: dict[str, tuple[float, float, bool]] = {
    "autovacuum_vacuum_scale_factor": (0.001, 0.4, True),
    "autovacuum_vacuum_threshold": (10, 50_000, True),
    "autovacuum_vacuum_insert_scale_factor": (0.001, 0.4, True),
    "autovacuum_vacuum_insert_threshold": (100, 1_000_000, True),
    "autovacuum_vacuum_cost_delay": (0, 20, False),
    "autovacuum_vacuum_cost_limit": (100, 10_000, True),
    "fillfactor": (50, 100, False),
}
_SERVER_RANGES: dict[str, tuple[float, float, bool]] = {
    "autovacuum_naptime": (1, 300, True),
    "autovacuum_max_workers": (1, 8, False),
    "autovacuum_vacuum_cost_limit": (100, 10_000, True),
}
#: Below this many rows a second a kind of change is taken as absent.
_NONE = 0.01


@dataclass(frozen=True, slots=True)
class Space:
    """The dimensions searched, the values fixed in every trial (``{key: value}``), and
    what was left out of the default and why."""

    dimensions: tuple[Dimension, ...]
    fixed: dict[str, str]
    left_out: tuple[str, ...] = ()

    def describe(self) -> list[str]:
        lines = [f"{d.key}: {d.describe()}" for d in self.dimensions]
        lines += [f"{key} = {value} (fixed)" for key, value in sorted(self.fixed.items())]
        return lines


def default_space(profile: Profile, lab_version: int, *, restart_ok: bool = True) -> Space:
    """The settings that can matter for the profile's tables, with default ranges."""
    versions = (profile.server_version_num, lab_version)
    dims: list[Dimension] = []
    left: list[str] = []
    for captured in profile.tables:
        for name in _table_settings(captured, left):
            _add(dims, left, name, captured.shape.name, _TABLE_RANGES[name], versions)
    fixed = _switched_on(profile, left)
    several = len(profile.tables) > 1 or any(t.shape.toast_bytes for t in profile.tables)
    for name, (low, high, log) in _SERVER_RANGES.items():
        k = knob(name)
        if name != "autovacuum_naptime" and not several:
            left.append(f"{name}: one relation is vacuumed by one worker at a time")
            continue
        if not restart_ok and any(k.needs_restart(v) for v in versions):
            left.append(f"{name}: needs a restart, and only the sandbox is restarted")
            continue
        _add(dims, left, name, None, (low, high, log), versions)
    return Space(tuple(dims), fixed, tuple(left))


def _switched_on(profile: Profile, left: list[str]) -> dict[str, str]:
    """Autovacuum on in every searched trial where the captured server or table has it off:
    thresholds searched with autovacuum off would all score alike (only a forced vacuum
    runs). The current settings' trial still runs with it off, as captured."""
    fixed: dict[str, str] = {}
    server = {s.name: s.setting for s in profile.settings}
    if server.get("autovacuum", "on") == "off":
        fixed["server.autovacuum"] = "on"
        left.append("autovacuum is off on the captured server: every searched trial turns it on")
    for t in profile.tables:
        options = dict(o.split("=", 1) for o in t.shape.reloptions if "=" in o)
        if options.get("autovacuum_enabled", "on").lower() in ("off", "false", "0", "no"):
            fixed[f"{t.shape.name}.autovacuum_enabled"] = "on"
            left.append(
                f"{t.shape.name}: autovacuum_enabled is off; every searched trial turns it on"
            )
    return fixed


def _add(
    dims: list[Dimension], left: list[str], name: str, table: str | None,
    bounds: tuple[float, float, bool], versions: tuple[int, ...],
) -> None:  # fmt: skip
    """The dimension, or why it is left out (a version without the setting)."""
    try:
        dims.append(_dimension(name, table, *bounds, versions))
    except VacuumlabError as exc:
        left.append(f"{table + ': ' if table else ''}{exc}")


def _table_settings(captured: CapturedTable, left: list[str]) -> list[str]:
    rates, name = captured.rates, captured.shape.name
    names = list(_TABLE_RANGES)
    if rates.updates + rates.deletes < _NONE:
        names.remove("autovacuum_vacuum_scale_factor")
        names.remove("autovacuum_vacuum_threshold")
        left.append(f"{name}: no vacuum threshold (no updates or deletes)")
    if rates.inserts < _NONE:
        names.remove("autovacuum_vacuum_insert_scale_factor")
        names.remove("autovacuum_vacuum_insert_threshold")
        left.append(f"{name}: no insert threshold (no inserts)")
    if rates.updates < _NONE:
        names.remove("fillfactor")
        left.append(f"{name}: no fillfactor (no updates)")
    return names


def _dimension(
    name: str, table: str | None, low: float, high: float, log: bool, versions: tuple[int, ...]
) -> Dimension:
    k = knob(name)
    scope: Scope = "server" if table is None else "table"
    for version in versions:
        for number in (low, high):
            k.check(_text(k, number), scope, version)
    return Dimension(name, table, low, high, log=log, integer=k.vartype == "integer")


def _text(k: Knob, number: float) -> str:
    return str(round(number)) if k.vartype == "integer" else f"{number:g}"


# -- the user's --space file -------------------------------------------------------------------


def narrowed(space: Space, path: Path, profile: Profile, lab_version: int) -> Space:
    """``space`` narrowed by the TOML file at ``path``; a one-line error for anything off."""
    data = read_toml(path)
    tables = {t.shape.name: t for t in profile.tables}
    by_qualified = {t.shape.qualified: t.shape.name for t in profile.tables}
    dims = {d.key: d for d in space.dimensions}
    fixed = dict(space.fixed)
    unknown = sorted(set(data) - {"server", "table"})
    if unknown:
        raise VacuumlabError(
            f"{path}: unknown section {unknown[0]!r}; use [server] or [table.NAME]"
        )
    sections: list[tuple[str | None, object]] = [(None, data.get("server", {}))]
    table_sections = data.get("table", {})
    if not isinstance(table_sections, dict):
        raise VacuumlabError(f"{path}: [table.NAME] sections name a captured table each")
    for name, body in table_sections.items():
        table = by_qualified.get(name, name if name in tables else None)
        if table is None:
            known = ", ".join(sorted(by_qualified))
            raise VacuumlabError(f"{path}: the profile has no table {name!r} (it has {known})")
        sections.append((table, body))
    versions = (profile.server_version_num, lab_version)
    for table, body in sections:
        where = f"{path}: [{'server' if table is None else 'table.' + table}]"
        if not isinstance(body, dict):
            raise VacuumlabError(f"{where} is not a table of settings")
        for setting, value in body.items():
            key = f"{table or 'server'}.{setting}"
            _entry(key, setting, table, value, where, dims, fixed, versions)
    result = Space(tuple(dims.values()), fixed, space.left_out)
    if not result.dimensions:
        raise VacuumlabError(f"{path} leaves nothing to search: every setting is fixed or off")
    return result


def _entry(
    key: str, setting: str, table: str | None, value: object, where: str,
    dims: dict[str, Dimension], fixed: dict[str, str], versions: tuple[int, ...],
) -> None:  # fmt: skip
    try:
        k = knob(setting)
    except VacuumlabError as exc:
        raise VacuumlabError(f"{where}: {exc}") from None
    scope: Scope = "server" if table is None else "table"
    if scope not in k.scopes:
        raise VacuumlabError(f"{where}: {setting} cannot be set at {scope} level")
    dims.pop(key, None)
    fixed.pop(key, None)
    if value is False:
        return
    base = dims.get(key) or _base(setting, table)
    if isinstance(value, list):
        if len(value) != 2 or not all(_is_number(v) for v in value) or value[0] >= value[1]:
            raise VacuumlabError(f"{where}: {setting} takes [low, high] with low below high")
        low, high = float(value[0]), float(value[1])
        _check(k, (low, high), scope, versions, where)
        log = base.log and low > 0
        dims[key] = replace(base, low=low, high=high, log=log, levels=())
    elif isinstance(value, dict):
        levels = value.get("levels")
        if set(value) != {"levels"} or not isinstance(levels, list) or len(levels) < 2:
            raise VacuumlabError(f"{where}: {setting} takes {{ levels = [a, b, …] }}")
        if not all(_is_number(v) for v in levels):
            raise VacuumlabError(f"{where}: {setting}'s levels must be numbers")
        numbers = tuple(sorted({float(v) for v in levels}))
        _check(k, numbers, scope, versions, where)
        dims[key] = replace(base, low=numbers[0], high=numbers[-1], levels=numbers)
    elif _is_number(value) or isinstance(value, str):
        text = k.in_base_unit(value) if isinstance(value, str) else _text(k, _number(value))
        _check_text(k, text, scope, versions, where)
        fixed[key] = text
    else:
        raise VacuumlabError(f"{where}: {setting} takes [low, high], {{ levels = […] }}, a value "
                             "or false")  # fmt: skip


def _base(setting: str, table: str | None) -> Dimension:
    ranges = _SERVER_RANGES if table is None else _TABLE_RANGES
    low, high, log = ranges.get(setting, (0.0, 1.0, False))
    return Dimension(setting, table, low, high, log=log, integer=knob(setting).vartype == "integer")


def _check(
    k: Knob, numbers: tuple[float, ...], scope: Scope, versions: tuple[int, ...], where: str
) -> None:
    if k.vartype not in ("integer", "real"):
        raise VacuumlabError(f"{where}: {k.name} is not a number; fix it to one value instead")
    for number in numbers:
        _check_text(k, _text(k, number), scope, versions, where)


def _check_text(k: Knob, text: str, scope: Scope, versions: tuple[int, ...], where: str) -> None:
    try:
        for version in versions:
            k.check(text, scope, version)
    except VacuumlabError as exc:
        raise VacuumlabError(f"{where}: {exc}") from None


def _number(value: object) -> float:
    assert isinstance(value, int | float)
    return float(value)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
