"""Synthetic column values that follow a column's statistics without its values: the null
fraction, the width, the number of distinct values and the physical order (correlation).

Each value comes from an integer key ``k`` per row: distinct keys give distinct values, so the
key's range sets ``n_distinct``; keys that rise with the row number make the column correlate
with the physical order. A unique column draws its keys from a sequence in the replay, and from
the row number (or a permutation of it) in the load.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from psycopg import sql

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.profile import Column
from vacuumlab.studies.base import SCHEMA

#: The one sequence new unique keys come from (in the study's schema).
KEY_SEQUENCE = "custom_key"
_INTS = {"smallint": 32767, "integer": 2147483647, "bigint": None}
_TEXT = re.compile(r"^(text|character varying|character|varchar|bpchar|name|citext)(\((\d+)\))?$")
_NUMERIC = re.compile(r"^numeric(\((\d+)(,(\d+))?\))?$")
_TIMES = re.compile(r"^(timestamp|time)(\(\d\))? (with|without) time zone$")
_SIMPLE = {
    "bytea",
    "real",
    "double precision",
    "boolean",
    "date",
    "uuid",
    "json",
    "jsonb",
    "interval",
}
#: A large prime: (i − 1) × P mod N + 1 permutes 1..N whenever P and N share no factor.
_PRIME = 1_000_003


def ident(*names: str) -> str:
    """An identifier as SQL text (pgbench scripts are text files)."""
    return sql.Identifier(*names).as_string(None)


def literal(value: object) -> str:
    return sql.Literal(value).as_string(None)


def supported(column: Column) -> bool:
    t = column.type
    return bool(
        t in _INTS or t in _SIMPLE or _TEXT.match(t) or _NUMERIC.match(t) or _TIMES.match(t)
    )


def check_supported(table: str, column: Column) -> None:
    if supported(column):
        return
    raise VacuumlabError(
        f"{table}.{column.name} has type {column.type}, which the replay cannot fill yet"
    )


def is_int(column: Column) -> bool:
    return column.type in _INTS


@dataclass(frozen=True, slots=True)
class Spec:
    """How one column is filled."""

    column: Column
    distinct: int  # keys 0 .. distinct − 1
    correlation: float  # −1 .. 1; 0 when unknown
    null_frac: float
    width: int
    unique: bool

    @classmethod
    def of(cls, column: Column, rows: int, unique: bool) -> Spec:
        s = column.stats
        distinct = rows
        if s is not None and s.n_distinct > 0:
            distinct = int(s.n_distinct)
        elif s is not None and s.n_distinct < 0:
            distinct = round(-s.n_distinct * rows)
        correlation = s.correlation if s is not None and s.correlation is not None else 0.0
        null_frac = 0.0 if column.not_null or s is None or unique else s.null_frac
        width = s.avg_width if s is not None else 8
        return cls(column, max(1, min(distinct, max(rows, 1))), correlation, null_frac, width,
                   unique)  # fmt: skip

    def load_key(self, rows: int) -> str:
        """The key of row ``g.i`` (1 .. rows) in the initial load."""
        n = max(rows, 1)
        if self.unique:
            if abs(self.correlation) >= 0.5:
                return "g.i" if self.correlation >= 0 else f"({n} + 1 - g.i)"
            step = _PRIME
            while math.gcd(step, n) != 1:
                step += 2
            return f"((g.i - 1) * {step} % {n} + 1)"
        a = min(abs(self.correlation), 1.0)
        share = f"((g.i - 1)::float8 / {n} * {a:.4f} + random() * {1 - a:.4f})"
        key = f"least({self.distinct - 1}, floor({self.distinct} * {share}))::bigint"
        return key if self.correlation >= 0 else f"({self.distinct - 1} - {key})"

    def replay_key(self) -> str:
        if self.unique:
            return f"nextval({literal(f'{SCHEMA}.{KEY_SEQUENCE}')})"
        return f"floor(random() * {self.distinct})::bigint"

    def value(self, k: str) -> str:
        """The value of key expression ``k`` (a plain column reference: used more than once),
        NULL for the null fraction."""
        value = _typed(self.column.type, k, self.width)
        if self.null_frac <= 0:
            return value
        return f"CASE WHEN random() < {self.null_frac:.6f} THEN NULL ELSE {value} END"


def _typed(type_: str, k: str, width: int) -> str:
    if type_ in _INTS:
        top = _INTS[type_]
        return f"({k})::{type_}" if top is None else f"(({k}) % {top})::{type_}"
    if m := _NUMERIC.match(type_):
        digits = int(m[2]) - int(m[4] or 0) if m[2] else 0
        modulo = f" % {10 ** min(digits, 15)}" if digits > 0 else ""
        return f"(({k}){modulo})::{type_}" if digits >= 0 else f"0::{type_}"
    if m := _TEXT.match(type_):
        size = max(1, width - 1)  # a short varlena's 1-byte header
        if m[3]:
            size = min(size, int(m[3]))
        return f"{_text(k, size)}::{type_}"
    return _other(type_, k, width)


def _other(type_: str, k: str, width: int) -> str:
    if type_ in ("real", "double precision"):
        return f"({k})::{type_}"
    if type_ == "bytea":
        return f"convert_to({_text(k, max(1, width - 1))}, 'UTF8')"
    if type_ == "boolean":
        return f"(({k}) % 2 = 1)"
    if type_ == "date":
        return f"(date '2000-01-01' + (({k}) % 2000000)::integer)"
    if type_ == "uuid":
        return f"md5(({k})::text)::uuid"
    if type_ == "interval":
        return f"(({k}) * interval '1 second')"
    if type_ in ("json", "jsonb"):
        return f"json_build_object('k', {k}, 'v', {_text(k, max(1, width - 16))})::{type_}"
    if type_.startswith("timestamp"):
        return f"(timestamptz '2000-01-01' + ({k}) * interval '1 second')::{type_}"
    return f"(time '00:00' + (({k}) % 86400) * interval '1 second')::{type_}"


def _text(k: str, size: int) -> str:
    """``size`` characters starting with the key (so distinct keys stay distinct), padded with
    hex digits that pglz cannot shrink much: wide values reach TOAST as in production."""
    blocks = math.ceil(size / 32) + 1
    if blocks <= 3:
        pad = f"md5(({k})::text) || md5(({k})::text || 'x')"
    else:
        agg = f"string_agg(md5(({k})::text || n::text), '')"
        pad = f"(SELECT {agg} FROM generate_series(1, {blocks}) AS n)"  # noqa: S608 - ours
    return f"left(rpad(({k})::text, {size}, {pad}), {size})"
