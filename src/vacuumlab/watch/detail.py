"""One relation of a refresh in full (records/live_detail.py), from the snapshot the refresh
took. Pure, records and model only: asking for a relation's details runs no statement, so the
terminal view's keys never change what a refresh costs the server.

The thresholds are the model's (model/thresholds.py, after relation_needs_vacanalyze() in
autovacuum.c); the settings listed are those autovacuum reads for the relation, each from its
reloptions when set there (a TOAST relation's own, else its table's: table_recheck_autovac())
and from the server's settings otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

from vacuumlab.model import thresholds as th
from vacuumlab.records.live_detail import AppliedSetting, TableDetail
from vacuumlab.records.snapshot import Relation, Setting, Snapshot, Table

#: Reloption → the server setting it falls back to, in the order the detail lists them.
SETTINGS: tuple[tuple[str, str], ...] = (
    ("autovacuum_enabled", "autovacuum"),
    ("autovacuum_vacuum_threshold", "autovacuum_vacuum_threshold"),
    ("autovacuum_vacuum_scale_factor", "autovacuum_vacuum_scale_factor"),
    ("autovacuum_vacuum_max_threshold", "autovacuum_vacuum_max_threshold"),
    ("autovacuum_vacuum_insert_threshold", "autovacuum_vacuum_insert_threshold"),
    ("autovacuum_vacuum_insert_scale_factor", "autovacuum_vacuum_insert_scale_factor"),
    ("autovacuum_analyze_threshold", "autovacuum_analyze_threshold"),
    ("autovacuum_analyze_scale_factor", "autovacuum_analyze_scale_factor"),
    ("autovacuum_vacuum_cost_delay", "autovacuum_vacuum_cost_delay"),
    ("autovacuum_vacuum_cost_limit", "autovacuum_vacuum_cost_limit"),
    ("autovacuum_freeze_min_age", "vacuum_freeze_min_age"),
    ("autovacuum_freeze_max_age", "autovacuum_freeze_max_age"),
    ("autovacuum_freeze_table_age", "vacuum_freeze_table_age"),
    ("autovacuum_multixact_freeze_min_age", "vacuum_multixact_freeze_min_age"),
    ("autovacuum_multixact_freeze_max_age", "autovacuum_multixact_freeze_max_age"),
    ("autovacuum_multixact_freeze_table_age", "vacuum_multixact_freeze_table_age"),
    ("log_autovacuum_min_duration", "log_autovacuum_min_duration"),
)
#: Analyze is never run on a TOAST relation (relation_needs_vacanalyze()).
NOT_FOR_TOAST = frozenset({"autovacuum_analyze_threshold", "autovacuum_analyze_scale_factor"})
#: A negative autovacuum cost setting means the plain vacuum one (autovac_balance_cost()).
COST_FALLBACK = {
    "autovacuum_vacuum_cost_delay": "vacuum_cost_delay",
    "autovacuum_vacuum_cost_limit": "vacuum_cost_limit",
}


def detail(snapshot: Snapshot, oid: int) -> TableDetail | None:
    """The relation ``oid`` (a heap or a TOAST relation) of ``snapshot``; None when the
    snapshot does not have it (dropped since, or another database's)."""
    found = _find(snapshot, oid)
    if found is None:
        return None
    table, rel = found
    server = th.server_settings(snapshot)
    version = snapshot.server.version_num
    options = th.options_of(table, rel)
    is_toast = rel is table.toast
    settings = th.effective(server, options, version_num=version)
    t = th.thresholds(
        rel,
        settings,
        is_toast=is_toast,
        version_num=version,
        in_recovery=snapshot.server.in_recovery,
    )
    label = f"{table.heap.qualified_name} (TOAST)" if is_toast else rel.qualified_name
    return TableDetail(
        oid=rel.oid,
        label=label,
        is_toast=is_toast,
        taken_at=snapshot.taken_at,
        reltuples=rel.reltuples,
        relpages=rel.relpages,
        autovacuum_active=settings.active,
        table_enabled=settings.table_enabled,
        dead=t.dead,
        vacuum_base=settings.vacuum_threshold,
        vacuum_scale_factor=settings.vacuum_scale_factor,
        vacuum_max=settings.vacuum_max_threshold,
        vacuum_threshold=t.vacuum,
        inserted=t.inserted,
        insert_base=settings.insert_threshold,
        insert_scale_factor=settings.insert_scale_factor,
        unfrozen_share=th.unfrozen(rel, version),
        insert_threshold=t.insert,
        modified=t.modified,
        analyze_threshold=t.analyze,
        frozenxid_age=rel.frozenxid_age,
        freeze_max_age=settings.freeze.xid,
        minmxid_age=rel.minmxid_age,
        multixact_freeze_max_age=settings.freeze.mxid,
        forced=t.forced,
        settings=applied(snapshot, options, is_toast=is_toast),
        last_vacuum=rel.last_vacuum,
        last_autovacuum=rel.last_autovacuum,
        vacuum_count=rel.vacuum_count,
        autovacuum_count=rel.autovacuum_count,
        last_analyze=rel.last_analyze,
        last_autoanalyze=rel.last_autoanalyze,
        total_vacuum_s=_seconds(rel.total_vacuum_time_ms),
        total_autovacuum_s=_seconds(rel.total_autovacuum_time_ms),
    )


def applied(
    snapshot: Snapshot, options: Mapping[str, str], *, is_toast: bool
) -> list[AppliedSetting]:
    """Each setting autovacuum reads for the relation, from its options or the server's."""
    server = {s.name: s for s in snapshot.settings}
    found = []
    for option, guc in SETTINGS:
        if is_toast and option in NOT_FOR_TOAST:
            continue
        if option in options:
            found.append(AppliedSetting(name=option, value=options[option], source="table"))
        elif guc in server:
            value = _shown(server[guc])
            fallback = COST_FALLBACK.get(option)
            if fallback in server and _negative(server[guc]):
                value = f"{_shown(server[fallback])} ({fallback})"
            found.append(AppliedSetting(name=option, value=value, source="server"))
    return found


def _find(snapshot: Snapshot, oid: int) -> tuple[Table, Relation] | None:
    for table in snapshot.tables:
        if table.heap.oid == oid:
            return table, table.heap
        if table.toast is not None and table.toast.oid == oid:
            return table, table.toast
    return None


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0


def _shown(setting: Setting) -> str:
    if setting.shown is not None:
        return setting.shown
    return setting.setting + (setting.unit or "") if setting.unit else setting.setting


def _negative(setting: Setting) -> bool:
    try:
        return float(setting.setting) < 0
    except ValueError:
        return False
