"""When autovacuum takes a table: the thresholds of ``relation_needs_vacanalyze()``
(src/backend/postmaster/autovacuum.c), as pure functions of a snapshot's values.

- vacuum when ``n_dead_tup > min(max_threshold, threshold + scale_factor · reltuples)``
  (the cap exists from PostgreSQL 18; -1 disables it);
- or when ``n_ins_since_vacuum > insert_threshold + insert_scale_factor · reltuples ·
  unfrozen`` (13+; insert_threshold -1 disables it; ``unfrozen`` = 1 − relallfrozen/relpages
  from 18, 1 before);
- analyze when ``n_mod_since_analyze > analyze_threshold + analyze_scale_factor · reltuples``
  (never for TOAST relations);
- ``reltuples < 0`` (never vacuumed or analysed) counts as 0;
- past its freeze limits (model/forcing.py) a relation is vacuumed whatever its thresholds and
  its ``autovacuum_enabled``, and then also analysed when past its analyze threshold: the
  switch only returns early when the relation is not forced (13 to 18 alike); with
  ``autovacuum`` or ``track_counts`` off (AutoVacuumingActive() false) only such forced
  vacuums run, and no analyze; a server in recovery runs no autovacuum at all.

Per-table reloptions override the server's settings. A TOAST relation uses its own
reloptions (``toast.*``) when it has any, and its table's only when it has none
(``table_toast_map`` in ``do_autovacuum()``) — not a merge of the two.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from vacuumlab.model import forcing
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

    enabled: bool  # the thresholds apply: autovacuum active and the relation's switch on
    table_enabled: bool  # the relation's own switch (autovacuum_enabled reloption) alone
    active: bool  # AutoVacuumingActive(): the server's autovacuum and track_counts both on
    vacuum_threshold: float
    vacuum_scale_factor: float
    vacuum_max_threshold: float | None  # None: no cap (before 18, or -1)
    insert_threshold: float | None  # None: insert-triggered vacuum off (or before 13)
    insert_scale_factor: float
    analyze_threshold: float
    analyze_scale_factor: float
    overridden: frozenset[str]  # the reloption names that overrode a server setting
    freeze: forcing.FreezeLimits


class Thresholds(NamedTuple):
    """Where one relation stands against its thresholds. Immutable, and a tuple: one is made
    for every relation of a database, and a tuple is made in a third of the time a frozen
    dataclass takes (0.3 s at 200,000 relations)."""

    relation: Relation
    is_toast: bool
    effective: Effective
    vacuum: float
    insert: float | None
    analyze: float | None  # None for TOAST relations
    dead: int
    inserted: int
    modified: int
    forced: str | None = None  # "xid" or "mxid": past a freeze limit (force_vacuum)
    in_recovery: bool = False  # a standby: autovacuum never runs

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
    def past_threshold(self) -> bool:
        """Past the vacuum or the insert threshold, whether or not autovacuum acts on it."""
        by_inserts = self.insert is not None and self.inserted > self.insert
        return self.dead > self.vacuum or by_inserts

    @property
    def needs_vacuum(self) -> bool:
        """relation_needs_vacanalyze()'s dovacuum: forced, or past a threshold while the
        thresholds apply."""
        if self.in_recovery:
            return False
        return self.forced is not None or (self.effective.enabled and self.past_threshold)

    @property
    def needs_analyze(self) -> bool:
        """doanalyze: past the analyze threshold while autovacuum is active server-wide, and
        the relation's switch is on or it is forced (relation_needs_vacanalyze() returns early
        only for ``!av_enabled && !force_vacuum``); never for TOAST relations nor pg_statistic
        (ANALYZE refuses it)."""
        if self.in_recovery or not self.effective.active or self.analyze is None:
            return False
        if not self.effective.table_enabled and self.forced is None:
            return False
        rel = self.relation
        if rel.schema_name == "pg_catalog" and rel.name == "pg_statistic":
            return False
        return self.modified > self.analyze


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
    table_enabled = parse_bool(options.get("autovacuum_enabled", "on"))
    active = parse_bool(server.get("autovacuum", "on")) and parse_bool(
        server.get("track_counts", "on")
    )
    if "autovacuum_enabled" in options:
        overridden.add("autovacuum_enabled")
    cap = _number(values["vacuum_max_threshold"]) if version_num >= 180000 else None
    insert = _number(values["insert_threshold"]) if version_num >= 130000 else None
    return Effective(
        enabled=active and table_enabled,
        table_enabled=table_enabled,
        active=active,
        vacuum_threshold=_number(values["vacuum_threshold"]) or 0.0,
        vacuum_scale_factor=_number(values["vacuum_scale_factor"]) or 0.0,
        vacuum_max_threshold=cap if cap is not None and cap >= 0 else None,
        insert_threshold=insert if insert is not None and insert >= 0 else None,
        insert_scale_factor=_number(values["insert_scale_factor"]) or 0.0,
        analyze_threshold=_number(values["analyze_threshold"]) or 0.0,
        analyze_scale_factor=_number(values["analyze_scale_factor"]) or 0.0,
        overridden=frozenset(overridden),
        freeze=forcing.freeze_limits(server, options),
    )


def thresholds(
    relation: Relation,
    settings: Effective,
    *,
    is_toast: bool,
    version_num: int,
    in_recovery: bool = False,
) -> Thresholds:
    """The three thresholds of one relation, as autovacuum computes them."""
    reltuples = max(relation.reltuples, 0.0)
    return Thresholds(
        relation=relation,
        is_toast=is_toast,
        effective=settings,
        vacuum=vacuum_threshold(settings, reltuples),
        insert=insert_threshold(settings, relation, version_num),
        analyze=None if is_toast else analyze_threshold(settings, reltuples),
        dead=relation.n_dead_tup or 0,
        inserted=relation.n_ins_since_vacuum or 0,
        modified=relation.n_mod_since_analyze or 0,
        forced=forcing.forced(settings.freeze, relation.frozenxid_age, relation.minmxid_age),
        in_recovery=in_recovery,
    )


def vacuum_threshold(
    settings: Effective, reltuples: float, *, scale_factor: float | None = None
) -> float:
    """``Min(vac_max_thresh, vac_base_thresh + vac_scale_factor × reltuples)``
    (relation_needs_vacanalyze()); ``scale_factor`` asks what another one would give."""
    factor = settings.vacuum_scale_factor if scale_factor is None else scale_factor
    vacuum = settings.vacuum_threshold + factor * max(reltuples, 0.0)
    if settings.vacuum_max_threshold is not None:
        vacuum = min(vacuum, settings.vacuum_max_threshold)
    return vacuum


def insert_threshold(settings: Effective, relation: Relation, version_num: int) -> float | None:
    """``vac_ins_base_thresh + vac_ins_scale_factor × reltuples``, times the unfrozen share
    from 18 (relation_needs_vacanalyze()); None when insert-triggered vacuum is off."""
    if settings.insert_threshold is None:
        return None
    reltuples = max(relation.reltuples, 0.0)
    return settings.insert_threshold + settings.insert_scale_factor * reltuples * unfrozen(
        relation, version_num
    )


def analyze_threshold(settings: Effective, reltuples: float) -> float:
    """``anl_base_thresh + anl_scale_factor × reltuples`` (relation_needs_vacanalyze())."""
    return settings.analyze_threshold + settings.analyze_scale_factor * max(reltuples, 0.0)


def with_rows(t: Thresholds, rows: float) -> list[tuple[str, float]]:
    """The thresholds ``t``'s relation gets once a vacuum or analyze counts ``rows``
    (reltuples), with its settings as they are: a relation never counted (reltuples -1) has
    its base thresholds alone until then. Its pages are taken as not yet frozen."""
    e = t.effective
    found = [("dead tuples for a vacuum", vacuum_threshold(e, rows))]
    if t.insert is not None and e.insert_threshold is not None:
        found.append(("inserted for a vacuum", e.insert_threshold + e.insert_scale_factor * rows))
    if t.analyze is not None:
        found.append(
            ("changed for an analyze", e.analyze_threshold + e.analyze_scale_factor * rows)
        )
    return found


def unfrozen(relation: Relation, version_num: int) -> float:
    """The share of the insert threshold's reltuples that counts: 1 − relallfrozen/relpages
    (18+; frozen pages do not count towards inserts), 1 before."""
    frozen = relation.relallfrozen
    if version_num < 180000 or not frozen or relation.relpages <= 0:
        return 1.0
    return 1.0 - min(frozen, relation.relpages) / relation.relpages


def of_table(
    table: Table, server: Mapping[str, str], version_num: int, *, in_recovery: bool = False
) -> list[Thresholds]:
    """Thresholds of a table's heap and, when it has one, its TOAST relation."""
    return of_tables([table], server, version_num, in_recovery=in_recovery)


_NONE: frozenset[tuple[str, str]] = frozenset()


def of_tables(
    tables: Iterable[Table],
    server: Mapping[str, str],
    version_num: int,
    *,
    in_recovery: bool = False,
) -> list[Thresholds]:
    """Thresholds of every table's heap and TOAST relation, in order. The merged settings
    depend on a relation's options alone, so relations with the same options (most have
    none) share one :class:`Effective`, merged once per call."""
    merged: dict[frozenset[tuple[str, str]], Effective] = {}
    found = []
    for table in tables:
        for rel in (table.heap, table.toast):
            if rel is None:
                continue
            # options_of()'s choice, without its copy: the mapping is only read here.
            options = (
                rel.reloptions if rel is table.heap else rel.reloptions or table.heap.reloptions
            )
            key = frozenset(options.items()) if options else _NONE
            settings = merged.get(key)
            if settings is None:
                settings = merged[key] = effective(server, options, version_num=version_num)
            found.append(
                thresholds(
                    rel,
                    settings,
                    is_toast=rel is table.toast,
                    version_num=version_num,
                    in_recovery=in_recovery,
                )
            )
    return found


#: One relation's place against its thresholds, as :func:`standings` gives it: its table, the
#: relation, its merged settings, its needs_vacuum and its progress (the larger of
#: vacuum_progress and insert_progress, the latter 0 when off).
Standing = tuple[Table, Relation, Effective, bool, float]
#: An Effective with the numbers standings() reads of it: enabled, the vacuum threshold, scale
#: factor and cap (inf: none), the insert threshold (-1: off) and scale factor, the freeze
#: limits.
_Resolved = tuple[Effective, bool, float, float, float, float, float, float, float]


def standings(
    tables: Iterable[Table],
    server: Mapping[str, str],
    version_num: int,
    *,
    in_recovery: bool = False,
) -> list[Standing]:
    """What of_tables() gives, cut down to what ranks relations: whether each needs a vacuum
    and how near its nearer threshold it is, in the same order. The arithmetic of
    thresholds() and of Thresholds' properties, written out over plain numbers: a live view
    ranks every relation at every refresh but shows a few hundred, and building a Thresholds
    for each of 20,000 relations took longer than the rest of the ranking. The full records
    are for the relations shown (thresholds() on the same settings)."""
    merged: dict[frozenset[tuple[str, str]], _Resolved] = {}
    cut_unfrozen = version_num >= 180000
    found: list[Standing] = []
    append = found.append
    for table in tables:
        heap, toast = table.heap, table.toast
        for rel in (heap, toast) if toast is not None else (heap,):
            options = rel.reloptions if rel is heap else rel.reloptions or heap.reloptions
            hit = merged.get(frozenset(options.items()) if options else _NONE)
            if hit is None:
                key = frozenset(options.items()) if options else _NONE
                e = effective(server, options, version_num=version_num)
                cap = e.vacuum_max_threshold
                insert_base = e.insert_threshold
                hit = merged[key] = (
                    e, e.enabled, e.vacuum_threshold, e.vacuum_scale_factor,
                    math.inf if cap is None else cap,
                    -1.0 if insert_base is None else insert_base, e.insert_scale_factor,
                    e.freeze.xid, e.freeze.mxid,
                )  # fmt: skip
            settings, on, base, scale, cap, insert_base, insert_scale, xid, mxid = hit
            reltuples = rel.reltuples
            if reltuples < 0.0:
                reltuples = 0.0
            vacuum = base + scale * reltuples  # vacuum_threshold()
            if vacuum > cap:
                vacuum = cap
            dead = rel.n_dead_tup or 0
            share = dead / vacuum if vacuum > 0 else float(dead > 0)
            due = on and dead > vacuum
            if insert_base >= 0.0:
                frozen, pages = rel.relallfrozen, rel.relpages  # unfrozen()
                if cut_unfrozen and frozen and pages > 0:
                    insert = insert_base + insert_scale * reltuples * (
                        1.0 - min(frozen, pages) / pages
                    )
                else:
                    insert = insert_base + insert_scale * reltuples * 1.0
                inserted = rel.n_ins_since_vacuum or 0
                by_inserts = inserted / insert if insert > 0 else float(inserted > 0)
                if by_inserts > share:
                    share = by_inserts
                due = due or (on and inserted > insert)
            if not due:  # forcing.forced()
                xid_age, mxid_age = rel.frozenxid_age, rel.minmxid_age
                due = (xid_age is not None and xid_age > xid) or (
                    mxid_age is not None and mxid_age > mxid
                )
            append((table, rel, settings, due and not in_recovery, share))
    return found


def options_of(table: Table, rel: Relation) -> dict[str, str]:
    """The reloptions autovacuum reads for a heap or its TOAST relation: a TOAST relation's
    own when it has any, else all of its table's (table_recheck_autovac(), not a merge)."""
    if rel is table.heap or table.toast is None:
        return dict(table.heap.reloptions)
    return dict(table.toast.reloptions or table.heap.reloptions)


def server_settings(snapshot: Snapshot) -> dict[str, str]:
    return {s.name: s.setting for s in snapshot.settings}


def parse_bool(value: str) -> bool:
    """A boolean as PostgreSQL reads it (parse_bool_with_len() in bool.c): any prefix of
    true/yes/false/no, on/off from two letters, 1/0. Anything else reads as on, the default."""
    text = value.strip().lower()
    if text and ("false".startswith(text) or "no".startswith(text) or text == "0"):
        return False
    return not (len(text) >= 2 and "off".startswith(text))


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None
