"""What every question module gets: the snapshot (and a later one for rates), the server's
settings, each relation's thresholds, and one way to write a recommendation."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from psycopg import sql

from vacuumlab.model import balance, forcing
from vacuumlab.model.knobs import knob
from vacuumlab.model.thresholds import (
    Thresholds,
    of_tables,
    options_of,
    parse_bool,
    server_settings,
)
from vacuumlab.records.advice import Recommendation, Scope
from vacuumlab.records.snapshot import (
    ExactBloat,
    PagesCached,
    PagesScanned,
    Relation,
    Snapshot,
    Table,
)
from vacuumlab.units import share_of as share_of  # its home before units.py


@dataclass
class Context:
    snapshot: Snapshot
    later: Snapshot | None = None
    #: Results computed once per advice and shared by the questions (estimates, cost settings).
    memo: dict[str, object] = field(default_factory=dict)
    #: The tables the questions read and the relations set aside as idle (advise/idle.py,
    #: :meth:`set_aside`); every table until then.
    _in_play: tuple[list[Table], int] | None = field(default=None, init=False, repr=False)

    @property
    def now(self) -> Snapshot:
        """The most recent snapshot: what the findings describe."""
        return self.later or self.snapshot

    @cached_property
    def exact(self) -> dict[int, ExactBloat]:
        """What ``--exact`` measured (pgstattuple_approx), by relation oid."""
        return {row.oid: row for row in self.now.exact}

    @cached_property
    def scanned(self) -> dict[int, PagesScanned]:
        """The heap pages each probed relation's next vacuum reads, counted from its
        visibility map (collect/visibility.py), by relation oid."""
        return {row.oid: row for row in self.now.scanned}

    @cached_property
    def cached(self) -> dict[int, PagesCached]:
        """Each probed relation's pages in shared buffers, counted from pg_buffercache
        (collect/buffercache.py), by relation oid."""
        return {row.oid: row for row in self.now.cached}

    @property
    def exact_probed(self) -> bool:
        """Whether ``--exact`` ran: it measured a table or said why it could not."""
        return bool(self.now.exact) or any(n.probe == "exact" for n in self.now.notes)

    @property
    def version(self) -> int:
        return self.now.server.version_num

    @cached_property
    def settings(self) -> dict[str, str]:
        return server_settings(self.now)

    def setting(self, name: str, default: float = 0.0) -> float:
        try:
            return float(self.settings[name])
        except (KeyError, ValueError):
            return default

    def set_aside(self, kept: list[Table], idle: int) -> None:
        """The questions read ``kept`` alone; ``idle`` relations were set aside. Before any
        question runs: what they computed on every table would stay."""
        if self.memo or "thresholds" in self.__dict__:
            raise RuntimeError("set_aside() comes before the questions")
        self._in_play = (kept, idle)

    @property
    def idle(self) -> int:
        """Relations set aside before the questions: nothing in them can give a finding."""
        return 0 if self._in_play is None else self._in_play[1]

    @property
    def earlier_by_oid(self) -> dict[int, Relation] | None:
        """The first snapshot's relations by oid, with two snapshots."""
        return self._first_by_oid if self.later is not None else None

    @cached_property
    def thresholds(self) -> list[Thresholds]:
        recovery = self.now.server.in_recovery
        return of_tables(self.tables(), self.settings, self.version, in_recovery=recovery)

    @cached_property
    def thresholds_by_oid(self) -> dict[int, Thresholds]:
        """Each relation's thresholds under its oid: three questions look them up."""
        return {t.relation.oid: t for t in self.thresholds}

    @cached_property
    def owners(self) -> dict[int, Relation]:
        """Each TOAST relation's table (its heap) under the TOAST relation's oid."""
        return {t.toast.oid: t.heap for t in self.tables() if t.toast is not None}

    @cached_property
    def tables_by_oid(self) -> dict[int, Table]:
        """Each table under the oid of its heap and of its TOAST relation."""
        found: dict[int, Table] = {}
        for table in self.tables():
            found[table.heap.oid] = table
            if table.toast is not None:
                found[table.toast.oid] = table
        return found

    @cached_property
    def names(self) -> dict[int, str]:
        """Each relation's label (``schema.table`` or ``schema.table (TOAST)``) under its oid,
        formatted once: the status rows, the thresholds and the estimates all name every
        relation."""
        found: dict[int, str] = {}
        for table in self.tables():
            heap = table.heap
            found[heap.oid] = heap.qualified_name  # label() of a heap
            if table.toast is not None:
                found[table.toast.oid] = label(table.toast, heap)
        return found

    def name_of(self, relation: Relation) -> str:
        """``schema.table`` or ``schema.table (TOAST)``."""
        table = self.tables_by_oid.get(relation.oid)
        return label(relation, table.heap if table is not None else None)

    @cached_property
    def autovacuum_off(self) -> str | None:
        """The server-wide switch that keeps every launcher away, "autovacuum" or
        "track_counts" (AutoVacuumingActive() in autovacuum.c); None when both are on."""
        if not parse_bool(self.settings.get("autovacuum", "on")):
            return "autovacuum"
        if not parse_bool(self.settings.get("track_counts", "on")):
            return "track_counts"
        return None

    @cached_property
    def emergency(self) -> bool:
        """With autovacuum off, whether the postmaster sends emergency workers to this
        database: its own age is past the server's freeze_max_age (there they vacuum every
        relation past its own limit, relation_needs_vacanalyze())."""
        here = next((d for d in self.now.databases if d.name == self.now.server.database), None)
        return forcing.emergency(here, self.settings) is not None

    @cached_property
    def workers(self) -> int:
        """Autovacuum workers that can run at once (min with worker slots on 18)."""
        return balance.available_workers(self.settings, self.version)

    @cached_property
    def balanced_autovacuums(self) -> int:
        """Running autovacuums that share the cost limit (av_nworkersForBalance)."""
        if not balance.busy_workers(self.now.workers, self.now.vacuums):
            return 0  # nothing running: no need to read every relation's options
        own = {
            rel.oid
            for table in self.now.tables
            for rel in (table.heap, table.toast)
            if rel is not None and balance.has_own_cost(options_of(table, rel))
        }
        return balance.balanced_workers(self.now.vacuums, own, self.now.workers)

    def tables(self) -> Iterator[Table]:
        """The tables the questions read: every one, or those some question may speak of once
        the idle ones are set aside (:meth:`set_aside`)."""
        yield from self.now.tables if self._in_play is None else self._in_play[0]

    def earlier(self, relation: Relation) -> Relation | None:
        """The same relation in the first snapshot, for rates (None without --interval)."""
        return self._first_by_oid.get(relation.oid) if self.later is not None else None

    @cached_property
    def _first_by_oid(self) -> dict[int, Relation]:
        # Built once: looking each relation up by scanning would be quadratic in tables.
        return {
            rel.oid: rel
            for table in self.snapshot.tables
            for rel in (table.heap, table.toast)
            if rel is not None
        }

    @cached_property
    def seconds(self) -> float | None:
        if self.later is None:
            return None
        return (self.later.taken_at - self.snapshot.taken_at).total_seconds()


def label(relation: Relation, owner: Relation | None = None) -> str:
    """``schema.table`` for a heap, ``schema.table (TOAST)`` for its TOAST relation."""
    if relation.kind == "t" and owner is not None:
        return f"{owner.qualified_name} (TOAST)"
    return relation.qualified_name


def alter_table(
    table: Relation,
    setting: str,
    value: str,
    *,
    toast: bool,
    reason: str,
    impact: float,
    version: int,
    evidence: str | None = None,
) -> Recommendation:
    """``ALTER TABLE … SET (…)`` for a table or its TOAST relation, checked first."""
    scope: Scope = "toast" if toast else "table"
    knob(setting).check(value, scope, version)
    name = sql.SQL("toast.") + sql.Identifier(setting) if toast else sql.Identifier(setting)
    statement = sql.SQL("ALTER TABLE {} SET ({} = {});").format(
        sql.Identifier(table.schema_name, table.name), name, sql.Literal(value)
    )
    return Recommendation(
        sql=statement.as_string(None),
        reason=reason,
        scope=scope,
        setting=setting,
        value=value,
        target=table.qualified_name,
        impact=impact,
        evidence=evidence,
    )


def alter_system(
    setting: str,
    value: str,
    *,
    reason: str,
    impact: float,
    version: int,
    evidence: str | None = None,
) -> Recommendation:
    """``ALTER SYSTEM SET …`` and the reload (or a note that it needs a restart). A duration
    is checked as a number in its base unit, then written with a unit (``'10min'``)."""
    k = knob(setting)
    k.check(value, "server", version)
    value = k.with_unit(value)
    statement = (
        sql.SQL("ALTER SYSTEM SET {} = {};")
        .format(sql.Identifier(setting), sql.Literal(value))
        .as_string(None)
    )
    restart = k.needs_restart(version)
    statement += " -- then restart the server" if restart else " SELECT pg_reload_conf();"
    return Recommendation(
        sql=statement,
        reason=reason,
        scope="server",
        setting=setting,
        value=value,
        impact=impact,
        evidence=evidence,
    )
