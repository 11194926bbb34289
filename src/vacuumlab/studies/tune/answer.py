"""A tune's answer as SQL for the server the profile was captured on: ``ALTER TABLE … SET``
per table and ``ALTER SYSTEM SET`` for server-wide settings, each checked against the
setting's type, range and that server's version the way the advisor checks its own
(``advise/context.py``), and marked where that version needs a restart."""

from __future__ import annotations

from collections.abc import Mapping

from vacuumlab.advise.context import alter_system, alter_table
from vacuumlab.records.advice import Recommendation
from vacuumlab.records.snapshot import Snapshot
from vacuumlab.records.tune import TrialSettings

_REASON = "the tune's winner, measured on a replay of this table's captured workload"


def recommendations(
    settings: TrialSettings, snapshot: Snapshot, names: Mapping[str, str], version: int
) -> list[Recommendation]:
    """The statements that put ``settings`` in force. ``snapshot`` holds the captured tables
    (a profile's, ``model.profiled``); ``names`` maps a replayed table's name to its
    captured ``schema.table``. A setting the captured server or table already has is left
    out: there is nothing to change."""
    heaps = {t.heap.qualified_name: t.heap for t in snapshot.tables}
    server_now = {s.name: s.setting for s in snapshot.settings}
    found = []
    for table, options in sorted(settings.tables.items()):
        heap = heaps[names[table]]
        now = {"fillfactor": "100"} | dict(heap.reloptions)
        for setting, value in sorted(options.items()):
            if _same(now.get(setting), value):
                continue
            found.append(
                alter_table(heap, setting, value, toast=False, reason=_REASON, impact=1.0,
                            version=version)
            )  # fmt: skip
    for setting, value in sorted(settings.server.items()):
        if _same(server_now.get(setting), value):
            continue
        found.append(alter_system(setting, value, reason=_REASON, impact=1.0, version=version))
    return found


def _same(now: str | None, value: str) -> bool:
    """Whether a setting reads ``value`` already (as numbers where both are)."""
    if now is None:
        return False
    try:
        return float(now) == float(value)
    except ValueError:
        return now.strip().lower() == value.strip().lower()


def script(recs: list[Recommendation]) -> str:
    """The statements as one script (each ALTER SYSTEM carries its reload, or says that it
    needs a restart)."""
    return "\n".join(r.sql for r in recs)
