"""A captured table's shape from the catalogs: what ``CREATE TABLE`` needs to build it again,
its size, and its columns' statistics without a single value (``pg_stats``' null fraction,
width, distinct values and correlation, never its values).

The literals the DDL keeps (defaults, CHECKs, partial-index predicates, index expressions)
are shape; :func:`literals_of` lists them, found by PostgreSQL's own parser.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from vacuumlab.collect.parse import literals
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.connect import Session
from vacuumlab.records.profile import (
    Column,
    ColumnStats,
    Constraint,
    Index,
    Note,
    Shape,
    Storage,
)

#: pg_attribute.attstorage's letters.
_STORAGE: dict[str, Storage] = {"p": "plain", "e": "external", "m": "main", "x": "extended"}
#: pg_attribute.attcompression's letters (14+; empty: the server's default_toast_compression).
_COMPRESSION = {"p": "pglz", "l": "lz4"}
#: The relkinds a profile can capture: a table, a partitioned table.
_TABLES = {"r": "table", "p": "partitioned table"}
_KINDS = {
    "v": "view",
    "m": "materialized view",
    "f": "foreign table",
    "S": "sequence",
    "i": "index",
    "I": "partitioned index",
    "c": "composite type",
    "t": "TOAST table",
}


@dataclass(frozen=True, slots=True)
class Resolved:
    """A table named on the command line, as the server resolved it."""

    oid: int
    schema_name: str
    name: str
    relkind: str


@dataclass(frozen=True, slots=True)
class _Table:
    reloptions: list[str]
    toast_reloptions: list[str]
    partitioning: str | None
    partitions: int
    rows: float
    pages: int
    heap_bytes: int
    toast_bytes: int
    index_bytes: int


@dataclass(frozen=True, slots=True)
class _Column:
    name: str
    type: str
    not_null: bool
    default: str | None
    identity: str | None
    generated: str | None
    storage: str
    compression: str | None
    readable: bool
    null_frac: float | None
    avg_width: int | None
    n_distinct: float | None
    correlation: float | None


@dataclass(frozen=True, slots=True)
class _Index:
    name: str
    definition: str
    columns: list[str]
    unique: bool
    primary: bool
    method: str
    expression: bool
    predicate: str | None
    bytes: int


@dataclass(frozen=True, slots=True)
class _Constraint:
    name: str
    kind: str
    definition: str


def resolve(session: Session, name: str) -> Resolved:
    """The table ``name`` (as SQL writes it: ``app."Job Queue"``), or a one-line error."""
    import psycopg

    try:
        rows = session.fetch("capture_relation", Resolved, {"relation": name})
    except psycopg.errors.InvalidParameterValue:  # parse_ident(): not a name SQL can write
        raise VacuumlabError(
            f'--table {name!r} is not a table name as SQL writes it (e.g. app."Job Queue")'
        ) from None
    if not rows:
        raise VacuumlabError(
            f"no table {name} in database {session.info.database} "
            "(quote names as SQL does: 'app.\"Job Queue\"')"
        )
    found = rows[0]
    if found.relkind not in _TABLES:
        kind = _KINDS.get(found.relkind, "relation")
        raise VacuumlabError(f"{name} is a {kind}, not a table: capture takes tables")
    return found


@dataclass(frozen=True, slots=True)
class Shaped:
    """A table's shape, the literals its DDL keeps, and what could not be seen of it."""

    oid: int
    shape: Shape
    literals: list[str]
    notes: list[Note]


def shape_of(session: Session, table: Resolved) -> Shaped:
    params = {"oid": table.oid}
    [size] = session.fetch("capture_table", _Table, params)
    columns = session.fetch("capture_columns", _Column, params)
    indexes = session.fetch("capture_indexes", _Index, params)
    constraints = session.fetch("capture_constraints", _Constraint, params)
    shape = Shape(
        schema_name=table.schema_name,
        name=table.name,
        columns=[_column(c) for c in columns],
        indexes=[Index(**_fields(i)) for i in indexes],
        constraints=[Constraint(**_fields(c)) for c in constraints],
        fillfactor=_fillfactor(size.reloptions),
        reloptions=size.reloptions,
        toast_reloptions=size.toast_reloptions,
        partitioning=size.partitioning,
        partitions=size.partitions,
        rows=size.rows,
        pages=size.pages,
        heap_bytes=size.heap_bytes,
        toast_bytes=size.toast_bytes,
        index_bytes=size.index_bytes,
        avg_row_width=_row_width(columns, size),
    )
    notes = list(_stats_notes(shape, columns, session))
    return Shaped(table.oid, shape, literals_of(shape), notes)


def _fields(row: object) -> dict[str, object]:
    return {name: getattr(row, name) for name in row.__slots__}  # type: ignore[attr-defined]


def _column(row: _Column) -> Column:
    stats = None
    if row.null_frac is not None and row.avg_width is not None and row.n_distinct is not None:
        stats = ColumnStats(
            null_frac=row.null_frac,
            avg_width=row.avg_width,
            n_distinct=row.n_distinct,
            correlation=row.correlation,
        )
    return Column(
        name=row.name,
        type=row.type,
        not_null=row.not_null,
        default=row.default,
        identity=row.identity,
        generated=row.generated,
        storage=_STORAGE[row.storage],
        compression=_COMPRESSION.get(row.compression, row.compression) if row.compression else None,
        stats=stats,
    )


def _fillfactor(reloptions: list[str]) -> int | None:
    for option in reloptions:
        name, _, value = option.partition("=")
        if name == "fillfactor":
            return int(value)
    return None


def _row_width(columns: list[_Column], size: _Table) -> float | None:
    """The sum of the columns' average widths where every column has one; else heap bytes
    per row, where the table has rows."""
    widths = [c.avg_width for c in columns]
    if columns and all(w is not None for w in widths):
        return float(sum(w for w in widths if w is not None))
    if size.rows > 0:
        return size.heap_bytes / size.rows
    return None


def literals_of(shape: Shape) -> list[str]:
    """Every constant the table's DDL keeps: in column defaults and generation expressions,
    CHECK and exclusion constraints, index expressions and partial-index predicates."""
    texts = [f"SELECT {c.default}" for c in shape.columns if c.default is not None]
    texts += [
        f"ALTER TABLE t ADD {c.definition}" for c in shape.constraints if c.kind in ("c", "x")
    ]
    texts += [i.definition for i in shape.indexes]
    if shape.partitioning is not None:
        texts.append(f"CREATE TABLE t () PARTITION BY {shape.partitioning}")
    return list(dict.fromkeys(value for text in texts for value in literals(text)))


def _stats_notes(shape: Shape, columns: list[_Column], session: Session) -> Iterator[Note]:
    """What pg_stats did not show, and why: columns the role may not read, or a table that
    was never analyzed (or whose rows row security hides from the role)."""
    hidden = [c.name for c in columns if not c.readable]
    if hidden:
        yield Note(
            what=f"column statistics of {shape.qualified}: {', '.join(hidden)}",
            reason=f"role {session.info.user} may not SELECT these columns, and pg_stats "
            "shows only those it may read: GRANT SELECT ON the table to capture them",
        )
    missing = [c.name for c in columns if c.readable and c.null_frac is None]
    if missing:
        yield Note(
            what=f"column statistics of {shape.qualified}: {', '.join(missing)}",
            reason="pg_stats has none: the table was never analyzed (run ANALYZE), or row "
            "security hides its rows from this role",
        )
