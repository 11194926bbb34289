"""What vacuumlab knows about the settings it recommends: settings knowledge as data.

Each knob has a type, a range, a unit, the first server version that has it, and where it
can be set: server-wide (a GUC, by ALTER SYSTEM), on a table (a reloption), on a table's TOAST
relation (``toast.`` reloption). Every recommendation is checked against this before it is
printed. Ranges and versions are those of the PostgreSQL documentation ("Automatic
Vacuuming", "Storage Parameters") and of ``src/backend/access/common/reloptions.c``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vacuumlab.errors import VacuumlabError
from vacuumlab.model import versions

Scope = Literal["server", "table", "toast"]
INT_MAX = 2_147_483_647
#: The time units a GUC accepts, largest first, in milliseconds (guc.c, time_unit_conversion
#: _table). Reloptions take none: reloptions.c parses their numbers without units.
TIME_UNITS: tuple[tuple[str, int], ...] = (
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("min", 60_000),
    ("s", 1000),
    ("ms", 1),
)
_IN_MS = dict(TIME_UNITS)
#: The memory units a GUC accepts, in kB (guc.c, memory_unit_conversion_table).
_IN_KB = {"kB": 1, "MB": 1024, "GB": 1024**2, "TB": 1024**3}


@dataclass(frozen=True, slots=True)
class Knob:
    name: str
    vartype: Literal["bool", "integer", "real", "enum"]
    minimum: float | None
    maximum: float | None
    unit: str | None  # the unit a bare number is read in (a GUC's base unit)
    since: int  # server_version_num that first has it
    scopes: frozenset[Scope]
    values: tuple[str, ...] = ()  # enum values
    restart: bool = False  # a server-wide change needs a restart
    #: The reloption's own minimum where it differs from the GUC's (reloptions.c): -1 there is
    #: only the unset default, not a value one can SET.
    table_minimum: float | None = None
    #: Enum values newer than the knob, with the server_version_num that first takes each.
    values_since: tuple[tuple[str, int], ...] = ()
    #: The server_version_num from which a reload suffices where a restart was needed.
    reload_since: int | None = None
    #: A lower minimum from some server_version_num on: (version, minimum).
    lowered: tuple[int, float] | None = None

    def needs_restart(self, version_num: int) -> bool:
        """Whether a server-wide change takes a restart on a server of this version."""
        return self.restart and (self.reload_since is None or version_num < self.reload_since)

    def lowest(self, scope: Scope, version_num: int | None = None) -> float | None:
        """The smallest value that can be set at ``scope`` on a server of ``version_num``
        (None: the newest)."""
        if scope != "server" and self.table_minimum is not None:
            return self.table_minimum
        if self.lowered is not None and (version_num is None or version_num >= self.lowered[0]):
            return self.lowered[1]
        return self.minimum

    def check(self, value: str, scope: Scope, version_num: int) -> None:
        """Raise a one-line VacuumlabError if ``value`` cannot be set here."""
        if scope not in self.scopes:
            raise VacuumlabError(f"{self.name} cannot be set at {scope} level")
        if version_num < self.since:
            raise VacuumlabError(
                f"{self.name} needs PostgreSQL {self.since // 10000}; the server is "
                f"{version_num // 10000}"
            )
        if self.vartype == "bool" and value not in ("on", "off", "true", "false"):
            raise VacuumlabError(f"{self.name} takes on or off, not {value!r}")
        if self.vartype == "enum" and value not in self.values:
            raise VacuumlabError(f"{self.name} takes one of {', '.join(self.values)}")
        for newer, since in self.values_since:
            if value == newer and version_num < since:
                raise VacuumlabError(
                    f"{self.name} = {value} needs PostgreSQL {since // 10000}; the server is "
                    f"{version_num // 10000}"
                )
        if self.vartype in ("integer", "real"):
            self._check_number(value, scope, version_num)

    def with_unit(self, value: str) -> str:
        """A number in this knob's time unit written with a unit, for ALTER SYSTEM:
        ``600000`` ms reads ``10min``. Anything else is returned as it is."""
        if self.unit not in _IN_MS:
            return value
        try:
            number = float(value)
        except ValueError:
            return value
        # -1 and the like are sentinels ("use the other setting"), not durations.
        return duration(number, self.unit) if number >= 0 else value

    def in_base_unit(self, value: str) -> str:
        """A value as ``pg_settings.setting`` holds it: ``10s`` of a setting kept in seconds
        reads ``10``, ``1min`` of one kept in ms ``60000``, ``1GB`` of one in kB ``1048576``.
        A bare number, or a knob without a unit, is returned as it is."""
        text = value.strip()
        if self.unit is None:
            return text
        number = text.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ").strip()
        unit = text[len(number) :].strip()
        if not unit:
            return text
        table = _IN_MS if self.unit in _IN_MS else _IN_KB
        if unit not in table or self.unit not in table:
            raise VacuumlabError(f"{self.name} takes {', '.join(table)} as units, not {unit!r}")
        try:
            base = float(number) * table[unit] / table[self.unit]
        except ValueError:
            raise VacuumlabError(f"{self.name} takes a number, not {value!r}") from None
        return f"{base:g}" if not base.is_integer() else f"{base:.0f}"

    def _check_number(self, value: str, scope: Scope, version_num: int) -> None:
        try:
            number = float(value)
        except ValueError:
            raise VacuumlabError(f"{self.name} takes a number, not {value!r}") from None
        if self.vartype == "integer" and not number.is_integer():
            raise VacuumlabError(f"{self.name} takes a whole number, not {value!r}")
        minimum = self.lowest(scope, version_num)
        low = minimum if minimum is not None else float("-inf")
        high = self.maximum if self.maximum is not None else float("inf")
        if not low <= number <= high:
            raise VacuumlabError(f"{self.name} = {value} is out of range {minimum}..{self.maximum}")


_ALL: frozenset[Scope] = frozenset({"server", "table", "toast"})
_TABLES: frozenset[Scope] = frozenset({"table", "toast"})
_SERVER: frozenset[Scope] = frozenset({"server"})

KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        Knob("autovacuum", "bool", None, None, None, 80100, _SERVER),
        Knob("autovacuum_enabled", "bool", None, None, None, 80100, _TABLES),
        Knob("track_counts", "bool", None, None, None, 80300, _SERVER),
        Knob("idle_in_transaction_session_timeout", "integer", 0, INT_MAX, "ms", 90600,
             _SERVER),
        Knob("autovacuum_vacuum_threshold", "integer", 0, INT_MAX, None, 80100, _ALL),
        Knob("autovacuum_vacuum_max_threshold", "integer", -1, INT_MAX, None, 180000, _ALL),
        Knob("autovacuum_vacuum_scale_factor", "real", 0, 100, None, 80100, _ALL),
        Knob("autovacuum_vacuum_insert_threshold", "integer", -1, INT_MAX, None, 130000, _ALL),
        Knob("autovacuum_vacuum_insert_scale_factor", "real", 0, 100, None, 130000, _ALL),
        Knob("autovacuum_analyze_threshold", "integer", 0, INT_MAX, None, 80100,
             frozenset({"server", "table"})),
        Knob("autovacuum_analyze_scale_factor", "real", 0, 100, None, 80100,
             frozenset({"server", "table"})),
        Knob("autovacuum_vacuum_cost_delay", "real", -1, 100, "ms", 80100, _ALL,
             table_minimum=0),
        Knob("autovacuum_vacuum_cost_limit", "integer", -1, 10000, None, 80100, _ALL,
             table_minimum=1),
        Knob("autovacuum_freeze_max_age", "integer", 100_000, 2_000_000_000, None, 80200, _ALL,
             restart=True),
        Knob("autovacuum_multixact_freeze_max_age", "integer", 10_000, 2_000_000_000, None,
             90300, _ALL, restart=True),
        # The reloptions of vacuum_freeze_min_age and vacuum_freeze_table_age (reloptions.c).
        Knob("autovacuum_freeze_min_age", "integer", 0, 1_000_000_000, None, 80200, _TABLES),
        Knob("autovacuum_freeze_table_age", "integer", 0, 2_000_000_000, None, 80400, _TABLES),
        Knob("log_autovacuum_min_duration", "integer", -1, INT_MAX, "ms", 80300, _ALL),
        Knob("autovacuum_naptime", "integer", 1, 2_147_483, "s", 80100, _SERVER),
        # From 18 a reload changes it, within autovacuum_worker_slots (a restart's).
        Knob("autovacuum_max_workers", "integer", 1, 262_143, None, 80300, _SERVER,
             restart=True, reload_since=180000),
        Knob("vacuum_cost_limit", "integer", 1, 10000, None, 80000, _SERVER),
        # 1MB up to 16, 64kB from 17 (the TID store's smallest).
        Knob("maintenance_work_mem", "integer", 1024, INT_MAX, "kB", 80000, _SERVER,
             lowered=(170000, 64)),
        Knob("autovacuum_work_mem", "integer", -1, INT_MAX, "kB", 90400, _SERVER),
        Knob("fillfactor", "integer", 10, 100, None, 80200, frozenset({"table"})),
        Knob("toast_tuple_target", "integer", 128, 8160, None, 110000, frozenset({"table"})),
        # A table option from 12 (on or off); auto, the default, from 14 (reloptions.c).
        Knob("vacuum_index_cleanup", "enum", None, None, None, 120000, _TABLES,
             values=("auto", "on", "off"), values_since=(("auto", 140000),)),
        Knob("vacuum_truncate", "bool", None, None, None, 120000, _TABLES),
    )
}  # fmt: skip


#: The settings the advisor and the simulator read, whose values on a server nobody tuned
#: stock_settings() gives.
_STOCK: tuple[str, ...] = (
    "autovacuum",
    "autovacuum_naptime",
    "autovacuum_max_workers",
    "autovacuum_worker_slots",
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_max_threshold",
    "autovacuum_vacuum_insert_threshold",
    "autovacuum_vacuum_insert_scale_factor",
    "autovacuum_analyze_threshold",
    "autovacuum_analyze_scale_factor",
    "autovacuum_vacuum_cost_delay",
    "autovacuum_vacuum_cost_limit",
    "autovacuum_freeze_max_age",
    "autovacuum_multixact_freeze_max_age",
    "vacuum_cost_delay",
    "vacuum_cost_limit",
    "vacuum_cost_page_hit",
    "vacuum_cost_page_miss",
    "vacuum_cost_page_dirty",
)


def stock_settings(version_num: int = 180000) -> dict[str, str]:
    """What a server of this version (13 or newer) reports in pg_settings.setting for these
    settings when nobody changed them (base units: ms, s): each one's compiled-in default in
    that major, from model/versions.py; those the major lacks are left out."""
    if version_num < 130000:
        raise VacuumlabError("stock settings are known for PostgreSQL 13 and newer")
    major = version_num // 10000
    return {
        name: versions.boot_value(name, major)
        for name in _STOCK
        if versions.setting(name).exists_in(major)
    }


def duration(value: float, unit: str) -> str:
    """``value`` (in ``unit``) in the largest unit that holds it exactly: 600000 ms is
    ``10min``, 90 s is ``90s``; a fraction of the smallest unit keeps the given one."""
    ms = value * _IN_MS[unit]
    for name, size in TIME_UNITS:
        if ms and ms % size == 0:
            return f"{ms // size:.0f}{name}"
    return f"{value:g}{unit}"


def knob(name: str) -> Knob:
    try:
        return KNOBS[name]
    except KeyError:
        raise VacuumlabError(f"vacuumlab knows no setting {name!r}") from None
