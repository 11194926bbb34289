"""A recommendation as a what-if the simulator can run (``model.whatif.Change``)."""

from __future__ import annotations

from vacuumlab.model.knobs import knob
from vacuumlab.model.whatif import Change
from vacuumlab.records.advice import Finding, Recommendation

TOAST_SUFFIX = " (TOAST)"
#: Settings the simulator reads, beyond every autovacuum_* one.
_ALSO_SIMULATED = frozenset(
    {"track_counts", "vacuum_cost_limit", "vacuum_cost_delay", "vacuum_freeze_min_age"}
)


def simulated(setting: str) -> bool:
    return setting.startswith("autovacuum") or setting in _ALSO_SIMULATED


def change_for(finding: Finding, rec: Recommendation) -> Change | None:
    """The change ``rec`` makes, in the setting's base unit; None for one the simulator does
    not model (fillfactor, a session timeout) or one without a table to put it on."""
    if not simulated(rec.setting):
        return None
    if rec.scope == "server":
        return Change(rec.setting, knob(rec.setting).in_base_unit(rec.value))
    table = rec.target or (finding.relation or "").removesuffix(TOAST_SUFFIX)
    if not table:
        return None
    return Change(rec.setting, rec.value, table=table, toast=rec.scope == "toast")
