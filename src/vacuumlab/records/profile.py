"""A workload profile: a table's shape, its statistics without values, and the workload it
saw over a window. ``vacuumlab capture`` writes it (``collect/capture.py``) from a production
server; ``vacuumlab run custom --profile`` replays it on the sandbox (``studies/custom.py``).

A profile never holds a row value: no ``most_common_vals``, no ``histogram_bounds``, no query
text and no query parameter. Statements are kept as their structure (kind, table, the columns
they set and filter on). Literals written in the DDL (defaults, CHECK constraints, partial-index
predicates) are shape: they are kept, and :attr:`Profile.literals` lists them so a user sees
what leaves the server. The whole profile round-trips through JSON (:meth:`Profile.dump_json`,
:func:`load_profile`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import Field

from vacuumlab.records.snapshot import Record, parse_versioned, read_json

#: Bumped whenever a field is removed or changes meaning; adding an optional field is not.
PROFILE_VERSION = 1
KIND: Final = "vacuumlab.profile"

StatementKind = Literal["insert", "update", "delete", "select_for_update", "select", "other"]
Storage = Literal["plain", "external", "extended", "main"]


class ColumnStats(Record):
    """One column's ``pg_stats`` row without its values (None where the role may not read it
    or the table was never analyzed)."""

    null_frac: float
    avg_width: int
    #: As pg_stats gives it: > 0 a count of distinct values, < 0 minus their share of the rows.
    n_distinct: float
    #: Physical order against logical order, -1 to 1; None for types without an ordering.
    correlation: float | None


class Column(Record):
    name: str
    #: ``format_type(atttypid, atttypmod)``, e.g. ``character varying(40)``.
    type: str
    not_null: bool
    #: ``pg_get_expr(adbin, adrelid)``: shape, literals included (listed in Profile.literals).
    default: str | None = None
    #: ``a`` (GENERATED ALWAYS AS IDENTITY), ``d`` (BY DEFAULT) or None.
    identity: Literal["a", "d"] | None = None
    #: ``s`` for a stored generated column, with its expression in ``default``.
    generated: Literal["s", "v"] | None = None
    storage: Storage
    #: ``pglz`` or ``lz4`` where the column sets it; None for the server's default.
    compression: str | None = None
    stats: ColumnStats | None = None


class Index(Record):
    name: str
    #: ``pg_get_indexdef()``: the whole definition, expressions and predicate included.
    definition: str
    #: Every column the index covers: key columns, columns its expressions and predicate read,
    #: and INCLUDE columns. An UPDATE of any of them cannot be HOT (for a summarizing BRIN
    #: index it still can, on PostgreSQL 16 and later).
    columns: list[str]
    unique: bool = False
    primary: bool = False
    method: str = "btree"
    #: True when a key is an expression, not a plain column.
    expression: bool = False
    #: ``pg_get_expr(indpred, indrelid)`` for a partial index.
    predicate: str | None = None
    bytes: int = 0


class Constraint(Record):
    name: str
    #: ``p`` primary key, ``u`` unique, ``c`` check, ``f`` foreign key, ``x`` exclusion.
    kind: Literal["p", "u", "c", "f", "x", "t", "n"]
    #: ``pg_get_constraintdef()``.
    definition: str


class Shape(Record):
    """What ``CREATE TABLE`` needs to build the table again, and how big it was."""

    schema_name: str
    name: str
    columns: list[Column]
    indexes: list[Index] = Field(default_factory=list)
    constraints: list[Constraint] = Field(default_factory=list)
    fillfactor: int | None = None
    #: ``pg_class.reloptions`` as ``name=value``, fillfactor and autovacuum ones included.
    reloptions: list[str] = Field(default_factory=list)
    #: The TOAST relation's reloptions (``toast.*`` as SQL writes them, without the prefix).
    toast_reloptions: list[str] = Field(default_factory=list)
    #: ``pg_get_partkeydef()`` for a partitioned table; its partitions are not followed.
    partitioning: str | None = None
    partitions: int = 0
    rows: float = Field(
        description="pg_class.reltuples; where no vacuum or analyze has counted the rows "
        "yet, the live tuples the statistics count"
    )
    pages: int
    heap_bytes: int
    toast_bytes: int = 0
    index_bytes: int = 0
    #: Bytes per row in the heap: the sum of the columns' avg_width, or heap bytes / rows.
    avg_row_width: float | None = None

    @property
    def qualified(self) -> str:
        return f"{self.schema_name}.{self.name}"

    @property
    def toast_share(self) -> float:
        total = self.heap_bytes + self.toast_bytes
        return self.toast_bytes / total if total else 0.0


class Rates(Record):
    """The table's counters (``pg_stat_all_tables``) over the window, per second."""

    inserts: float
    updates: float
    hot_updates: float
    #: ``n_tup_newpage_upd`` (PostgreSQL 16 and later); None before.
    newpage_updates: float | None = None
    deletes: float
    #: The change of ``n_dead_tup`` over the window, per second (negative when vacuums won).
    dead_tuples: float
    autovacuums: int = 0
    autoanalyzes: int = 0

    @property
    def hot_share(self) -> float:
        return self.hot_updates / self.updates if self.updates else 0.0


class CapturedTable(Record):
    shape: Shape
    rates: Rates
    #: Share of the table's changed rows (inserts + updates + deletes) that the visible
    #: statements explain; the rest is replayed as a synthetic mix with the same rates.
    explained: float = 0.0


class Statement(Record):
    """One ``pg_stat_statements`` entry that touches a captured table, as its structure.

    Parsed with PostgreSQL's own parser (pglast); never its text, never its parameters.
    """

    queryid: int
    kind: StatementKind
    #: The captured table it changes or locks, as ``schema.name``.
    table: str
    #: UPDATE: the columns it sets. INSERT: the columns it lists (empty: all, in order).
    sets: list[str] = Field(default_factory=list)
    #: The columns its WHERE clause compares (``id = $1``, ``status = $2``).
    filters: list[str] = Field(default_factory=list)
    skip_locked: bool = False
    #: A LIMIT (as a parameter or a number); None without one.
    limit: bool = False
    #: Other captured tables the statement reads (joins, subqueries).
    reads: list[str] = Field(default_factory=list)
    calls_per_s: float
    rows_per_call: float
    mean_ms: float


class Setting(Record):
    """A setting in force over the window (autovacuum's and vacuum's, server-wide)."""

    name: str
    setting: str
    unit: str | None = None
    source: str


class Note(Record):
    """What the capture could not see, and why (a missing privilege, extension or setting)."""

    what: str
    reason: str


class Profile(Record):
    """A workload profile of one or more tables over one window."""

    kind: Literal["vacuumlab.profile"] = KIND
    schema_version: int = PROFILE_VERSION
    vacuumlab_version: str
    captured_at: datetime
    seconds: float
    server_version_num: int
    block_size: int = 8192
    tables: list[CapturedTable]
    #: ``pg_stat_statements`` when its deltas were read; ``counters`` when only the table
    #: counters were (no extension, no right to read it): then ``statements`` is empty and the
    #: replay is a synthetic mix with the captured rates.
    source: Literal["pg_stat_statements", "counters"]
    statements: list[Statement] = Field(default_factory=list)
    #: ``pg_stat_statements.track``: with ``top``, statements run inside functions and DO
    #: blocks are invisible, and only the counters show them.
    track: str | None = None
    settings: list[Setting] = Field(default_factory=list)
    #: Every literal kept from the DDL (defaults, CHECKs, partial-index predicates).
    literals: list[str] = Field(default_factory=list)
    notes: list[Note] = Field(default_factory=list)

    def table(self, qualified: str) -> CapturedTable:
        for table in self.tables:
            if table.shape.qualified == qualified:
                return table
        raise KeyError(qualified)

    def dump_json(self) -> str:
        return self.model_dump_json(indent=2)


def load_profile(path: Path) -> Profile:
    """A saved profile, with a one-line error for anything that is not one."""
    raw = read_json(path, "a vacuumlab profile")
    return parse_versioned(raw, str(path), Profile, (KIND, PROFILE_VERSION), "profile")
