"""Rows as pydantic records without validating each row, where the columns' types prove what
validation would check.

Validation costs about 5.5 µs a relation (38 fields): at 200,000 relations, 1.1 s of a
snapshot's 2.9. Yet most of what it checks is settled before the first row comes: a column's
PostgreSQL type fixes the Python type psycopg gives every one of its values (an ``int8`` is an
``int``, a ``timestamptz`` an aware ``datetime``). :func:`plan` compares each column's type with
its field's annotation once per statement; where every column matches, :func:`direct` builds
the records from the rows as they are, checking per row only what the types leave open: a
NULL where the field takes none, a value outside a ``Literal``. A field whose annotation is
not a plain scalar (``reloptions``: a ``text[]`` parsed into a mapping by the record's own
validator) is left to pydantic: the rows where it holds a value are validated whole, and a
NULL there reads as what validation once made of a NULL. A plan that does not match gives
None, and the caller validates every row."""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel

#: The type OIDs psycopg loads as each Python type (its default loaders, text or binary).
_OIDS: dict[type, frozenset[int]] = {
    bool: frozenset({16}),
    int: frozenset({20, 21, 23, 26}),  # int8, int2, int4, oid
    float: frozenset({700, 701}),  # float4, float8
    str: frozenset({18, 19, 25, 1043}),  # "char", name, text, varchar
    datetime: frozenset({1184}),  # timestamptz: aware, as the records hold them
}
_NONE_TYPE = type(None)


@dataclass(frozen=True, slots=True)
class Plan:
    """How one statement's columns become one record type's fields."""

    names: tuple[str, ...]
    #: Columns whose field takes no NULL.
    required: tuple[int, ...]
    #: Columns of ``Literal`` fields with the values each allows.
    literals: tuple[tuple[int, frozenset[object]], ...]
    #: Columns left to pydantic where they hold a value (by their field's own validation).
    complex: tuple[int, ...]
    #: Fields the statement does not give, with their defaults.
    defaults: tuple[tuple[str, Any], ...]


@cache
def plan(record: type[BaseModel], names: tuple[str, ...], oids: tuple[int, ...]) -> Plan | None:
    """The plan for ``record`` from columns ``names`` of types ``oids``, or None where a column
    does not prove its field's type (validate every row then)."""
    fields = record.model_fields
    if len(set(names)) != len(names) or any(name not in fields for name in names):
        return None
    decorators = record.__pydantic_decorators__
    if (
        record.__private_attributes__
        or record.model_config.get("extra") == "allow"
        or decorators.model_validators
        or decorators.root_validators
    ):
        return None
    validated = {name for d in decorators.field_validators.values() for name in d.info.fields}
    required, literals, complex_ = [], [], []
    for i, (name, oid) in enumerate(zip(names, oids, strict=True)):
        info = fields[name]
        kind = None if name in validated else _scalar(info.annotation)
        if kind is None:
            if info.annotation is None or typing.get_origin(info.annotation) is Literal:
                return None
            complex_.append(i)
            continue
        scalar, optional, allowed = kind
        if oid not in _OIDS[scalar] or info.metadata:
            return None
        if not optional:
            required.append(i)
        if allowed is not None:
            literals.append((i, allowed))
    defaults = []
    for name, info in fields.items():
        if name in names:
            continue
        if info.is_required():
            return None
        defaults.append((name, info.get_default(call_default_factory=True)))
    return Plan(names, tuple(required), tuple(literals), tuple(complex_), tuple(defaults))


def _scalar(annotation: Any) -> tuple[type, bool, frozenset[object] | None] | None:
    """(its Python type, whether it takes None, the values a Literal allows) for a plain
    scalar annotation (``int``, ``float | None``, ``Literal["r", "m"]``…), else None."""
    optional = False
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        rest = [a for a in args if a is not _NONE_TYPE]
        if len(rest) != 1 or len(rest) == len(args):
            return None
        annotation, optional = rest[0], True
        args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Literal:
        if not args or not all(isinstance(a, str) for a in args):
            return None
        return str, optional, frozenset(args)
    if annotation in _OIDS:
        return annotation, optional, None
    return None


#: What a NULL in a complex column becomes, by record and field: learnt from validation.
_NULL_READS: dict[tuple[type[BaseModel], str], Any] = {}


def direct(
    record: type[BaseModel],
    how: Plan,
    rows: Sequence[tuple[Any, ...]],
    validate: Callable[[list[tuple[Any, ...]]], list[Any]],
) -> list[Any]:
    """``rows`` as records, in order: built directly where :class:`Plan` allows, the others
    through ``validate`` (which raises as validation does)."""
    names, required, literals, complex_ = how.names, how.required, how.literals, how.complex
    nulls = [_NULL_READS.get((record, names[i]), _UNKNOWN) for i in complex_]
    pairs = list(zip(complex_, nulls, strict=True))
    fields_set = set(names)
    extra_defaults = how.defaults
    made: list[Any] = []
    pending: list[int] = []
    new = record.__new__
    setattr_ = object.__setattr__
    for row in rows:
        if (
            any(row[i] is None for i in required)
            or any(row[i] not in allowed for i, allowed in literals)
            or any(row[i] is not None or null is _UNKNOWN for i, null in pairs)
        ):
            pending.append(len(made))
            made.append(row)
            continue
        values = dict(zip(names, row, strict=True))
        for i, null in pairs:
            values[names[i]] = copy.copy(null)
        for name, default in extra_defaults:
            values[name] = copy.copy(default)
        item = new(record)
        setattr_(item, "__dict__", values)
        setattr_(item, "__pydantic_fields_set__", fields_set)
        setattr_(item, "__pydantic_extra__", None)
        setattr_(item, "__pydantic_private__", None)
        made.append(item)
    if pending:
        checked = validate([made[i] for i in pending])
        for i, item in zip(pending, checked, strict=True):
            row = made[i]
            for c in complex_:
                if row[c] is None:
                    _NULL_READS.setdefault((record, names[c]), getattr(item, names[c]))
            made[i] = item
    return made


_UNKNOWN = object()
