"""When autovacuum takes a table: the thresholds of ``relation_needs_vacanalyze()``
(src/backend/postmaster/autovacuum.c), as pure functions of a snapshot's values.

- vacuum when ``n_dead_tup > min(max_threshold, threshold + scale_factor · reltuples)``
  (the cap exists from PostgreSQL 18; -1 disables it);
- or when ``n_ins_since_vacuum > insert_threshold + insert_scale_factor · reltuples ·
  unfrozen`` (13+; insert_threshold -1 disables it; ``unfrozen`` = 1 − relallfrozen/relpages
  from 18, 1 before);
- analyze when ``n_mod_since_analyze > analyze_threshold + analyze_scale_factor · reltuples``
  (never for TOAST relations);
- ``reltuples < 0`` (never vacuumed or analysed) counts as 0.

Per-table reloptions override the server's settings. A TOAST relation uses its own
reloptions (``toast.*``) when it has any, and its table's only when it has none
(``table_toast_map`` in ``do_autovacuum()``) — not a merge of the two.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from vacuumlab.records.snapshot import Relation, Snapshot, Table

_NAMES = {
    "enabled": ("autovacuum_enabled", "autovacuum"),
    "vacuum_threshold": ("autovacuum_vacuum_threshold",) * 2,
    "vacuum_scale_factor": ("autovacuum_vacuum_scale_factor",) * 2,
    "vacuum_max_threshold": ("autovacuum_vacuum_max_threshold",) * 2,
    "insert_threshold": ("autovacuum_vacuum_insert_threshold",) * 2,
    "insert_scale_factor": ("autovacuum_vacuum_insert_scale_factor",) * 2,
    "analyze_threshold": ("autovacuum_analyze_threshold",) * 2,
    "analyze_scale_factor": ("autovacuum_analyze_scale_factor",) * 2,
}


@dataclass(frozen=True, slots=True)
class Effective:
    """The settings autovacuum applies to one relation, and where each came from."""

    enabled: bool  # the server's autovacuum and the relation's own switch together
    table_enabled: bool  # the relation's own switch (autovacuum_enabled reloption) alone
    vacuum_threshold: float
    vacuum_scale_factor: float
    vacuum_max_threshold: float | None  # None: no cap (before 18, or -1)
    insert_threshold: float | None  # None: insert-triggered vacuum off (or before 13)
    insert_scale_factor: float
    analyze_threshold: float
    analyze_scale_factor: float
    overridden: frozenset[str]  # the reloption names that overrode a server setting


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Where one relation stands against its thresholds."""

    relation: Relation
    is_toast: bool
    effective: Effective
    vacuum: float
    insert: float | None
    analyze: float | None  # None for TOAST relations
    dead: int
    inserted: int
    modified: int

    @property
    def vacuum_progress(self) -> float:
        """Dead tuples as a share of the vacuum threshold (1.0 = at the threshold)."""
        return self.dead / self.vacuum if self.vacuum > 0 else float(self.dead > 0)

    @property
    def insert_progress(self) -> float | None:
        if self.insert is None:
            return None
        return self.inserted / self.insert if self.insert > 0 else float(self.inserted > 0)

    @property
    def needs_vacuum(self) -> bool:
        by_inserts = self.insert is not None and self.inserted > self.insert
        return self.effective.enabled and (self.dead > self.vacuum or by_inserts)

    @property
    def needs_analyze(self) -> bool:
        return self.effective.enabled and self.analyze is not None and self.modified > self.analyze


def effective(
    server: Mapping[str, str], options: Mapping[str, str], *, version_num: int
) -> Effective:
    """Merge reloptions over the server's settings (``pg_settings.setting`` strings)."""
    values: dict[str, str] = {}
    overridden = set()
    for field, (reloption, guc) in _NAMES.items():
        if reloption in options and field != "enabled":
            values[field] = options[reloption]
            overridden.add(reloption)
        else:
            values[field] = server.get(guc, "")
    table_enabled = _on(options.get("autovacuum_enabled", "on"))
    enabled = _on(server.get("autovacuum", "on")) and table_enabled
    if "autovacuum_enabled" in options:
        overridden.add("autovacuum_enabled")
    cap = _number(values["vacuum_max_threshold"]) if version_num >= 180000 else None
    insert = _number(values["insert_threshold"]) if version_num >= 130000 else None
    return Effective(
        enabled=enabled,
        table_enabled=table_enabled,
        vacuum_threshold=_number(values["vacuum_threshold"]) or 0.0,
        vacuum_scale_factor=_number(values["vacuum_scale_factor"]) or 0.0,
        vacuum_max_threshold=cap if cap is not None and cap >= 0 else None,
        insert_threshold=insert if insert is not None and insert >= 0 else None,
        insert_scale_factor=_number(values["insert_scale_factor"]) or 0.0,
        analyze_threshold=_number(values["analyze_threshold"]) or 0.0,
        analyze_scale_factor=_number(values["analyze_scale_factor"]) or 0.0,
        overridden=frozenset(overridden),
    )


def thresholds(
    relation: Relation, settings: Effective, *, is_toast: bool, version_num: int
) -> Thresholds:
    """The three thresholds of one relation, as autovacuum computes them."""
    reltuples = max(relation.reltuples, 0.0)
    vacuum = settings.vacuum_threshold + settings.vacuum_scale_factor * reltuples
    if settings.vacuum_max_threshold is not None:
        vacuum = min(vacuum, settings.vacuum_max_threshold)
    insert = None
    if settings.insert_threshold is not None:
        insert = settings.insert_threshold + settings.insert_scale_factor * reltuples * _unfrozen(
            relation, version_num
        )
    analyze = None
    if not is_toast:
        analyze = settings.analyze_threshold + settings.analyze_scale_factor * reltuples
    return Thresholds(
        relation=relation,
        is_toast=is_toast,
        effective=settings,
        vacuum=vacuum,
        insert=insert,
        analyze=analyze,
        dead=relation.n_dead_tup or 0,
        inserted=relation.n_ins_since_vacuum or 0,
        modified=relation.n_mod_since_analyze or 0,
    )


def _unfrozen(relation: Relation, version_num: int) -> float:
    """1 − relallfrozen/relpages (18+): frozen pages do not count towards inserts."""
    frozen = relation.relallfrozen
    if version_num < 180000 or not frozen or relation.relpages <= 0:
        return 1.0
    return 1.0 - min(frozen, relation.relpages) / relation.relpages


def of_table(table: Table, server: Mapping[str, str], version_num: int) -> list[Thresholds]:
    """Thresholds of a table's heap and, when it has one, its TOAST relation."""
    heap_settings = effective(server, table.heap.reloptions, version_num=version_num)
    result = [thresholds(table.heap, heap_settings, is_toast=False, version_num=version_num)]
    if table.toast is not None:
        own = table.toast.reloptions
        options = own if own else table.heap.reloptions  # all of its own, or all the table's
        toast_settings = effective(server, options, version_num=version_num)
        result.append(
            thresholds(table.toast, toast_settings, is_toast=True, version_num=version_num)
        )
    return result


def server_settings(snapshot: Snapshot) -> dict[str, str]:
    return {s.name: s.setting for s in snapshot.settings}


def _on(value: str) -> bool:
    return value.strip().lower() in ("on", "true", "yes", "1")


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None
