"""What-ifs: a snapshot as it would read with some settings changed, server-wide or on a table.

``autovacuum_naptime=10`` changes a server setting; ``public.jobs.autovacuum_vacuum_scale_factor
=0.01`` a table's reloption; ``public.jobs.toast.autovacuum_enabled=on`` its TOAST relation's.
Values are in the setting's base unit, as ``pg_settings.setting`` holds them (the CLI converts
``10s`` and checks the range first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.snapshot import Setting, Snapshot, Table


@dataclass(frozen=True, slots=True)
class Change:
    setting: str
    value: str
    table: str | None = None  # schema.table; None: the server
    toast: bool = False

    @property
    def scope(self) -> Literal["server", "table", "toast"]:
        return "server" if self.table is None else ("toast" if self.toast else "table")

    def __str__(self) -> str:
        if self.table is None:
            return f"{self.setting}={self.value}"
        return f"{self.table}.{'toast.' if self.toast else ''}{self.setting}={self.value}"


def parse(text: str) -> Change:
    """``setting=value`` or ``schema.table[.toast].setting=value``."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise VacuumlabError(
            f"--set takes setting=value or schema.table.setting=value, not {text!r}"
        )
    parts = name.split(".")
    if len(parts) == 1:
        return Change(parts[0], value)
    toast = len(parts) == 4 and parts[2] == "toast"
    if len(parts) != 3 and not toast:
        raise VacuumlabError(
            f"--set names schema.table.setting or schema.table.toast.setting, not {name!r}"
        )
    return Change(parts[-1], value, table=f"{parts[0]}.{parts[1]}", toast=toast)


def apply(snapshot: Snapshot, changes: list[Change]) -> Snapshot:
    """The snapshot with every change made; a table it does not hold is an error."""
    if not changes:
        return snapshot
    settings = {s.name: s for s in snapshot.settings}
    tables = {t.heap.qualified_name: t for t in snapshot.tables}
    for change in changes:
        if change.table is None:
            settings[change.setting] = _setting(settings.get(change.setting), change)
            continue
        table = tables.get(change.table)
        if table is None:
            raise VacuumlabError(f"--set: the snapshot holds no table {change.table}")
        tables[change.table] = _with_option(table, change)
    order = [t.heap.qualified_name for t in snapshot.tables]
    return snapshot.model_copy(
        update={"settings": list(settings.values()), "tables": [tables[n] for n in order]}
    )


def _setting(current: Setting | None, change: Change) -> Setting:
    if current is not None:
        return current.model_copy(update={"setting": change.value, "shown": None})
    return Setting(
        name=change.setting,
        setting=change.value,
        unit=None,
        vartype="string",
        source="what-if",
        context="sighup",
        pending_restart=False,
    )


def _with_option(table: Table, change: Change) -> Table:
    if change.toast:
        if table.toast is None:
            raise VacuumlabError(f"--set: {change.table} has no TOAST relation")
        options = {**table.toast.reloptions, change.setting: change.value}
        return table.model_copy(
            update={"toast": table.toast.model_copy(update={"reloptions": options})}
        )
    options = {**table.heap.reloptions, change.setting: change.value}
    return table.model_copy(update={"heap": table.heap.model_copy(update={"reloptions": options})})
