"""The snapshot file, schema 2: the relations as columns, what is a default left out.

Schema 1 wrote one object of some forty keys per relation; at 100,000 tables (200,000 heap
and TOAST relations) that was 230 MB. Schema 2 keeps the document's shape and changes only
``tables``, which holds two blocks of columns, the tables' heaps and their TOAST relations::

    "tables":{"heap":{"rows":2,"columns":{
      "oid":[16384,16390],
      "schema_name":{"runs":[["tenant_00001",2]]},
      "last_vacuum":[null,"2026-11-28T11:02:03.123456Z"],
      ...}},
    "toast":{"rows":1,"columns":{
      "oid":[16387],
      "toast_of":[16384],
      ...}}}

- A column is a list of one value per row (``rows`` of them), or ``{"runs": [[value, count],
  ...]}`` when its values come in long runs (the schema of tenants' tables, listed in name
  order; counters a TOAST relation leaves at 0).
- A column left out holds its default in every row: null where the field may be null, 0 for
  numbers, ``{}`` for reloptions, ``"r"``/``"t"`` for ``kind``, ``"pg_toast"`` and
  ``pg_toast_<toast_of>`` for a TOAST relation's schema and name. ``oid`` and the heaps'
  ``schema_name`` and ``name`` are always there, and so is ``toast_of`` for TOAST.
- A TOAST relation belongs to the table whose heap's oid is its ``toast_of``; heaps keep the
  snapshot's order. Dates and times are ISO 8601 strings with their offset (``Z`` for UTC).
- Everything else (settings, databases, backends…) stays one object per row, each without
  the keys that hold their default (or null, for a field that has no default).

The columns are the fields of :class:`~vacuumlab.records.snapshot.Relation`, found from the
model: an optional field added there is a new column, and files without it read its
default. This module cannot import ``snapshot.py`` (which imports it), so it is handed the
model's classes.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache
from itertools import chain, groupby, islice, repeat
from operator import attrgetter, ne
from types import NoneType, UnionType
from typing import Any, Final, Literal, Protocol, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import to_json

from vacuumlab.errors import VacuumlabError

#: Bumped whenever a field is removed or changes meaning, or the file changes shape; adding
#: an optional field is not. 2: relations as columns (this module); 1 read as it was.
SCHEMA_VERSION: Final = 2

M = TypeVar("M", bound=BaseModel)
#: A column whose values change at most once in this many rows is written as runs.
RUN_SHARE: Final = 4
#: Below this many rows every column is a plain list: runs save nothing worth reading.
RUN_MIN_ROWS: Final = 16
TOAST_NAME: Final = "pg_toast_{}"
#: Each column kind's JSON types and how an error names them.
TYPES: Final[dict[str, tuple[frozenset[type], str]]] = {
    "int": (frozenset({int}), "integers"),
    "float": (frozenset({float, int}), "numbers"),
    "str": (frozenset({str}), "strings"),
    "choice": (frozenset({str}), "strings"),
    "datetime": (frozenset({str}), "ISO 8601 dates and times"),
    "options": (frozenset({dict}), "objects of strings"),
}
NO_DEFAULT: Final = object()
#: A relation record's oid and, for TOAST, its table's (handed the class, this module
#: cannot name its attributes to mypy).
_oid: Final[Callable[[BaseModel], int]] = attrgetter("oid")
_of: Final[Callable[[BaseModel], int]] = attrgetter("toast_of")


class TableLike(Protocol):
    """A table as ``Snapshot.tables`` holds it."""

    @property
    def heap(self) -> BaseModel: ...

    @property
    def toast(self) -> BaseModel | None: ...


class Damaged(Exception):
    """Where a column is wrong and how; the caller adds the file's name."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")


@dataclass(frozen=True, slots=True)
class Column:
    """One field of the relation record as a column of the file."""

    name: str
    kind: str
    nullable: bool
    default: object = NO_DEFAULT
    choices: frozenset[str] = frozenset()

    def text(self, values: list[Any]) -> str:
        """The column as JSON, as runs where they are worth it."""
        return _json(_runs(values) or values)

    def decode(self, value: object, rows: int, where: str) -> list[Any]:
        """The column's values, checked as validating each record would check them."""
        values = _expanded(value, rows, where)
        allowed, named = TYPES[self.kind]
        found = set(map(type, values)) - allowed - ({NoneType} if self.nullable else set())
        if found:
            wrong = ", ".join(sorted("null" if t is NoneType else t.__name__ for t in found))
            raise Damaged(where, f"expected {named}, found {wrong}")
        return self._converted(values, where)

    def _converted(self, values: list[Any], where: str) -> list[Any]:
        if self.kind == "float" and int in set(map(type, values)):
            return [v if v is None else float(v) for v in values]
        if self.kind == "choice" and not set(values) <= self.choices:
            wrong = sorted(set(values) - self.choices)[0]
            raise Damaged(where, f"{wrong!r} is not one of {', '.join(sorted(self.choices))}")
        if self.kind == "datetime":
            return _datetimes(values, where)
        if self.kind == "options":
            if not all(isinstance(v, str) for v in chain.from_iterable(o.values() for o in values)):
                raise Damaged(where, "expected objects of strings")
            return list(map(dict, values))  # one mapping per record, as validating makes them
        return values


@dataclass(frozen=True, slots=True)
class Block:
    """The columns of one block: the heaps' or the TOAST relations'."""

    name: str
    columns: tuple[Column, ...]
    by_name: dict[str, Column] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {c.name: c for c in self.columns})

    def encode(self, relations: Sequence[BaseModel]) -> dict[str, str]:
        """Each column's JSON, those left out that hold their default in every row."""
        names = [c.name for c in self.columns]
        rows = len(relations)
        # One tuple per relation, turned into one per column; zip's strict check costs ten
        # times the turn with 100,000 arguments, and the tuples are all one length.
        values = (
            zip(*map(attrgetter(*names), relations), strict=False) if rows else [()] * len(names)
        )
        by_name = dict(zip(names, values, strict=True))
        columns: dict[str, str] = {}
        for column in self.columns:
            values = list(by_name[column.name])
            if not self._left_out(column, values, by_name):
                columns[column.name] = column.text(values)
        return columns

    def _left_out(self, column: Column, values: list[Any], by_name: dict[str, Any]) -> bool:
        if column.name == "name" and self.name == "toast":
            return values == [TOAST_NAME.format(t) for t in by_name["toast_of"]]
        default = column.default
        if default is NO_DEFAULT or (values and (values[0] != default or values[-1] != default)):
            return False  # at once, for most columns
        return values.count(default) == len(values)

    def decode(self, raw: object, where: str) -> Iterator[dict[str, Any]]:
        """Each row's values by field name."""
        if not isinstance(raw, dict) or set(raw) != {"rows", "columns"}:
            raise Damaged(where, "expected an object of rows and columns")
        rows, given = raw["rows"], raw["columns"]
        if type(rows) is not int or rows < 0:
            raise Damaged(f"{where}.rows", "expected a count of rows")
        if not isinstance(given, dict):
            raise Damaged(f"{where}.columns", "expected an object of columns")
        unknown = sorted(set(given) - set(self.by_name))
        if unknown:
            raise Damaged(f"{where}.columns.{unknown[0]}", "unknown column")
        found = {
            name: column.decode(given[name], rows, f"{where}.columns.{name}")
            for name, column in self.by_name.items()
            if name in given
        }
        columns = [self._column(c, found, rows, where) for c in self.columns]
        names = [c.name for c in self.columns]
        # Every column has ``rows`` values, checked: zip's strict check would cost a third.
        return (dict(zip(names, row, strict=False)) for row in zip(*columns, strict=False))

    def _column(
        self, column: Column, found: dict[str, list[Any]], rows: int, where: str
    ) -> Sequence[Any]:
        if column.name in found:
            return found[column.name]
        if column.name == "name" and self.name == "toast":
            return [TOAST_NAME.format(t) for t in found["toast_of"]]
        if column.default is NO_DEFAULT:
            raise Damaged(f"{where}.columns.{column.name}", "missing")
        if isinstance(column.default, dict):
            return [{} for _ in range(rows)]
        return list(repeat(column.default, rows))


def _expanded(value: object, rows: int, where: str) -> list[Any]:
    """A column's ``rows`` values: as listed, or its runs repeated (counted first, so a
    damaged count cannot ask for more memory than the rows take)."""
    if isinstance(value, list):
        count = len(value)
    elif isinstance(value, dict) and set(value) == {"runs"} and isinstance(value["runs"], list):
        runs = value["runs"]
        if not all(
            isinstance(run, list) and len(run) == 2 and type(run[1]) is int and run[1] > 0
            for run in runs
        ):
            raise Damaged(where, "expected runs of [value, count]")
        count = sum(n for _, n in runs)
    else:
        raise Damaged(where, "expected a list of values or an object of runs")
    if count != rows:
        raise Damaged(where, f"{count} values for {rows} rows")
    if isinstance(value, list):
        return value
    return list(chain.from_iterable(repeat(v, n) for v, n in runs))


def _runs(values: list[Any]) -> dict[str, list[list[Any]]] | None:
    """``values`` as runs where runs are few enough to be worth it, else None. A sample of
    neighbours is looked at first, so a column whose values change all the time costs
    little."""
    rows = len(values)
    if rows < RUN_MIN_ROWS:
        return None
    step = max(rows // 64, 1)
    sample = sum(values[i] != values[i + 1] for i in range(0, rows - 1, step))
    if sample * RUN_SHARE > len(range(0, rows - 1, step)):
        return None
    changes = sum(map(ne, values, islice(values, 1, None)))
    if (changes + 1) * RUN_SHARE > rows:
        return None
    return {"runs": [[v, len(list(run))] for v, run in groupby(values)]}


def _datetimes(values: list[Any], where: str) -> list[datetime | None]:
    parse = datetime.fromisoformat
    try:
        return [None if v is None else parse(v) for v in values]
    except ValueError:
        at = next(i for i, v in enumerate(values) if v is not None and not _parses(v))
        raise Damaged(f"{where}[{at}]", f"{values[at]!r} is not a date and time") from None


def _parses(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _column_of(name: str, annotation: Any) -> Column:
    """A field's column from its type: ``int | None``, ``float``, ``Literal[...]``…"""
    args = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else ()
    nullable = NoneType in args
    base = next(a for a in args if a is not NoneType) if args else annotation
    if get_origin(base) is Literal:
        return Column(name, "choice", nullable, choices=frozenset(get_args(base)))
    kinds = {int: "int", float: "float", str: "str", datetime: "datetime", dict: "options"}
    kind = kinds.get(get_origin(base) or base)
    if kind is None:
        raise TypeError(f"no column for {name}: {annotation!r}")
    return Column(name, kind, nullable)


#: Defaults a block gives a field beyond its own: a heap is a table ("r"), TOAST lives in
#: pg_toast; a TOAST relation's ``toast_of`` names its table and so is always written.
BLOCK_DEFAULTS: Final[dict[str, dict[str, object]]] = {
    "heap": {"oid": NO_DEFAULT, "kind": "r"},
    "toast": {"oid": NO_DEFAULT, "kind": "t", "schema_name": "pg_toast", "toast_of": NO_DEFAULT},
}


@cache
def blocks(relation: type[BaseModel]) -> tuple[Block, Block]:
    """The heap and TOAST blocks of the record ``relation``."""
    made = []
    for block, overrides in BLOCK_DEFAULTS.items():
        columns = []
        for name, info in relation.model_fields.items():
            column = _column_of(name, info.annotation)
            own = info.default if not info.is_required() else _natural(column)
            columns.append(replace(column, default=overrides.get(name, own)))
        made.append(Block(block, tuple(columns)))
    return made[0], made[1]


def _natural(column: Column) -> object:
    """The value a column left out holds when its field has no default of its own."""
    if column.nullable:
        return None
    return {"int": 0, "float": 0.0, "options": {}}.get(column.kind, NO_DEFAULT)


def record_in(annotation: Any) -> type[BaseModel] | None:
    """The record class in a field's type (``list[Setting]``, ``Wal | None``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next(filter(None, map(record_in, get_args(annotation))), None)


def dumps(snapshot: BaseModel, tables: Sequence[TableLike]) -> str:
    """``snapshot`` as a schema-2 file: one top-level key a line, one column a line."""
    fields = type(snapshot).model_fields
    data = snapshot.model_dump(mode="json", exclude={"tables"})
    lines = [f'"kind":{_json(data["kind"])}', f'"schema_version":{SCHEMA_VERSION}']
    for name, info in fields.items():
        if name in ("kind", "schema_version"):
            continue
        if name == "tables":
            with _collector_paused():
                lines.append(f'"tables":{_tables_json(fields["tables"].annotation, tables)}')
        elif info.is_required() or data[name] != info.default:
            lines.append(f'"{name}":{_json(_lean(data[name], record_in(info.annotation)))}')
    return "{" + ",\n".join(lines) + "}"


def _tables_json(annotation: Any, tables: Sequence[TableLike]) -> str:
    heap, toast = blocks(_relation_of(annotation))
    toasts = [t.toast for t in tables if t.toast is not None]
    wrong = [t.heap for t in tables if t.toast is not None and _of(t.toast) != _oid(t.heap)]
    if wrong:
        raise ValueError(f"a TOAST relation whose toast_of is not its table: {wrong[0]!r}")
    parts = []
    for block, relations in ((heap, [t.heap for t in tables]), (toast, toasts)):
        columns = ",\n".join(f'  "{k}":{v}' for k, v in block.encode(relations).items())
        parts.append(f'"{block.name}":{{"rows":{len(relations)},"columns":{{\n{columns}}}}}')
    return "{" + ",\n".join(parts) + "}"


def _relation_of(tables: Any) -> type[BaseModel]:
    table = record_in(tables)
    assert table is not None
    relation = record_in(table.model_fields["heap"].annotation)
    assert relation is not None
    return relation


def _json(value: object) -> str:
    """Compact JSON, UTF-8 as it is, dates and times in ISO 8601 (UTC as ``Z``): pydantic's
    encoder, which turns a column of 100,000 values out in half the stdlib's time."""
    return to_json(value).decode()


def _lean(value: Any, record: type[BaseModel] | None) -> Any:
    """A record's JSON without the keys that hold their field's default (null for a field
    with none); a list of records each so."""
    if record is None or value is None:
        return value
    if isinstance(value, list):
        return [_lean(v, record) for v in value]
    fields = record.model_fields
    return {
        k: v
        for k, v in value.items()
        if not (v is None if fields[k].is_required() else v == fields[k].default)
    }


def expanded(raw: object, origin: str, snapshot: type[BaseModel]) -> object:
    """A schema-2 snapshot's JSON made ready to validate as ``snapshot``: its tables built
    (checked column by column, as validating them would check), the keys left out of its
    other records put back as null. Anything else is returned as it is, to be validated (or
    refused) as schema 1 is."""
    kind = snapshot.model_fields["kind"].default
    if not (
        isinstance(raw, dict)
        and raw.get("kind") == kind
        and raw.get("schema_version") == SCHEMA_VERSION
        and isinstance(raw.get("tables"), dict)
    ):
        return raw
    ready = dict(raw)
    for name, info in snapshot.model_fields.items():
        record = record_in(info.annotation)
        if name != "tables" and name in ready and record is not None:
            ready[name] = _filled(ready[name], _nulls(record))
    try:
        with _collector_paused():
            ready["tables"] = _tables(raw["tables"], snapshot.model_fields["tables"].annotation)
    except Damaged as exc:
        raise VacuumlabError(f"{origin} is a damaged snapshot: {exc}") from None
    return ready


@cache
def _nulls(record: type[BaseModel]) -> dict[str, None]:
    return {
        name: None
        for name, info in record.model_fields.items()
        if info.is_required() and NoneType in get_args(info.annotation)
    }


def _filled(value: object, nulls: dict[str, None]) -> object:
    if isinstance(value, list):
        return [_filled(v, nulls) for v in value]
    return nulls | value if isinstance(value, dict) else value


#: A file without TOAST relations may leave their block out.
_EMPTY: Final = {"rows": 0, "columns": {"oid": [], "toast_of": []}}


def _tables(raw: object, annotation: Any) -> list[BaseModel]:
    if not isinstance(raw, dict) or not set(raw) <= {"heap", "toast"} or "heap" not in raw:
        raise Damaged("tables", "expected an object of heap and toast")
    table = record_in(annotation)
    assert table is not None
    relation = _relation_of(annotation)
    heap_block, toast_block = blocks(relation)
    make = _maker(relation)
    heaps = list(map(make, heap_block.decode(raw["heap"], "tables.heap")))
    toasts: dict[int, BaseModel] = {}
    for toast in map(make, toast_block.decode(raw.get("toast", _EMPTY), "tables.toast")):
        of = _of(toast)
        if of in toasts:
            raise Damaged("tables.toast.columns.toast_of", f"two TOAST relations of {of}")
        toasts[of] = toast
    make_table = _maker(table)
    made = [make_table({"heap": h, "toast": toasts.pop(_oid(h), None)}) for h in heaps]
    if toasts:
        raise Damaged("tables.toast.columns.toast_of", f"no table {next(iter(toasts))} in heap")
    return made


def _maker(record: type[M]) -> Callable[[dict[str, Any]], M]:
    """A record from values already checked, without validating them again: what
    ``model_construct`` does (and ``BaseModel.__copy__``), for a whole field set at once,
    about six times faster. The records share one set of fields set: frozen, they never
    add to it, and pydantic copies it for a record made from one (``model_copy``)."""
    fields_set = set(record.model_fields)
    new, put = record.__new__, object.__setattr__

    def make(values: dict[str, Any]) -> M:
        made = new(record)
        put(made, "__dict__", values)
        put(made, "__pydantic_fields_set__", fields_set)
        put(made, "__pydantic_extra__", None)
        put(made, "__pydantic_private__", None)
        return made

    return make


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The collector off while the tables are built or turned into columns, as
    vacuumlab.memory.collector_paused does it (records may not import it): at 200,000
    relations the collections their tuples and records start take three to five times as
    long as the work itself, walking the whole snapshot each time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
