"""A captured profile as a replay plan: each table's DDL and synthetic load, one pgbench script
per statement class at its captured rate, and a synthetic mix for the changes the visible
statements do not explain (all of them for a profile of counters only). Pure: SQL text in,
nothing run.

Rows are picked by the table's integer key (``key >= :r ORDER BY key LIMIT n FOR UPDATE SKIP
LOCKED``, :r uniform over the loaded keys), so an UPDATE or DELETE finds its rows while inserts
add keys above the loaded ones and deletes take rows away; a table without one falls back to
``ctid`` at an offset. UPDATEs set the columns the captured statement sets, so whether an index
covers them, and with it whether the update can be HOT, is as in production.
"""

# pgbench scripts are text: every identifier in them comes from sql.Identifier (ident()),
# every value from sql.Literal or a number this module computed.
# ruff: noqa: S608

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from vacuumlab.errors import VacuumlabError
from vacuumlab.records.custom_spec import RATES, Rate
from vacuumlab.records.profile import CapturedTable, Column, Profile, Shape, Statement
from vacuumlab.studies.base import SCHEMA
from vacuumlab.studies.custom_columns import Spec, check_supported, ident, is_int, literal

#: Below this many rows per second a synthetic share is left out (noise of the counters).
_NEGLIGIBLE = 0.01
#: Integer weights for pgbench's ``-f file@weight``, in parts of this.
_WEIGHT_PARTS = 100_000


@dataclass(frozen=True, slots=True)
class TableBuild:
    """One table on the target, in schema vacuumlab, built and loaded as captured."""

    name: str
    captured: str
    rows: int
    create: str
    optional: tuple[str, ...]  # storage and compression: noted, not fatal, when refused
    load: str
    after: tuple[str, ...]  # constraints and indexes, after the load
    expected: dict[Rate, float]  # the captured rates × scale


@dataclass(frozen=True, slots=True)
class ScriptPlan:
    name: str
    text: str
    rate: float  # transactions per second


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    tables: tuple[TableBuild, ...]
    scripts: tuple[ScriptPlan, ...]
    notes: tuple[str, ...] = ()
    #: The first key the replay's unique values take (above every loaded row).
    first_key: int = 1

    @property
    def total_rate(self) -> float:
        return sum(s.rate for s in self.scripts)

    def weights(self) -> list[int]:
        """Each script's integer weight; the scripts' rates in proportion."""
        total = self.total_rate
        return [max(1, round(_WEIGHT_PARTS * s.rate / total)) for s in self.scripts]


@dataclass
class _Table:
    """What building a table's scripts needs to know of it."""

    shape: Shape
    rows: int
    specs: dict[str, Spec]
    key: str | None
    indexed: set[str]
    scripts: list[ScriptPlan] = field(default_factory=list)

    @property
    def qualified(self) -> str:
        return ident(SCHEMA, self.shape.name)

    def writable(self) -> list[Column]:
        return [c for c in self.shape.columns if not _automatic(c)]


def plan(profile: Profile, scale: float) -> ReplayPlan:
    """The replay of ``profile`` at ``scale`` of its rows and rates; a one-line error for a
    table it cannot build."""
    names = [t.shape.name for t in profile.tables]
    if len(set(names)) < len(names):
        raise VacuumlabError("the profile has two tables of one name in different schemas")
    if not profile.tables:
        raise VacuumlabError("the profile has no tables")
    notes: list[str] = [f"{n.what}: {n.reason}" for n in profile.notes]
    builds, scripts = [], []
    for captured in profile.tables:
        table = _table(captured.shape, scale)
        statements = [s for s in profile.statements if s.table == captured.shape.qualified]
        explained = _statement_scripts(table, statements, scale, notes)
        _synthetic_scripts(table, captured, explained, scale, notes)
        builds.append(_build(table, captured, scale, notes))
        scripts += table.scripts
    if not scripts:
        raise VacuumlabError("the profile shows no changes and no statements to replay")
    first_key = max(b.rows for b in builds) + 1
    return ReplayPlan(tuple(builds), tuple(scripts), tuple(notes), first_key)


def _table(shape: Shape, scale: float) -> _Table:
    for column in shape.columns:
        check_supported(shape.qualified, column)
    rows = max(0, round(max(shape.rows, 0) * scale))
    unique = _unique_columns(shape)
    specs = {c.name: Spec.of(c, rows, c.name in unique) for c in shape.columns}
    indexed = {name for index in shape.indexes for name in index.columns}
    return _Table(shape, rows, specs, _key(shape), indexed)


def _unique_columns(shape: Shape) -> set[str]:
    columns = {c for i in shape.indexes if i.unique and i.predicate is None for c in i.columns}
    return columns | {c.name for c in shape.columns if c.identity or _serial(c)}


def _key(shape: Shape) -> str | None:
    """The integer column the replay picks rows by: a one-column primary key or unique index."""
    by_name = {c.name: c for c in shape.columns}
    candidates = sorted(
        (i for i in shape.indexes if i.unique and len(i.columns) == 1 and not i.expression
         and i.predicate is None),
        key=lambda i: not i.primary,
    )  # fmt: skip
    for index in candidates:
        column = by_name.get(index.columns[0])
        if column is not None and is_int(column):
            return column.name
    return None


def _serial(column: Column) -> bool:
    return column.default is not None and column.default.startswith("nextval(")


def _automatic(column: Column) -> bool:
    """Filled by the server: identity, serial, generated."""
    return bool(column.identity or column.generated or _serial(column))


# -- the DDL and the load --------------------------------------------------------------------


def _build(table: _Table, captured: CapturedTable, scale: float, notes: list[str]) -> TableBuild:
    shape = table.shape
    if shape.partitioning:
        notes.append(
            f"{shape.qualified} is partitioned ({shape.partitioning}): replayed as one table"
        )
    expected = {rate: _captured(captured, rate) * scale for rate in RATES}
    return TableBuild(
        name=shape.name,
        captured=shape.qualified,
        rows=table.rows,
        create=_create(table),
        optional=tuple(_storage(table)),
        load=_load(table),
        after=tuple(_after(table, notes)),
        expected=expected,
    )


def _captured(captured: CapturedTable, rate: Rate) -> float:
    return float(getattr(captured.rates, rate))


def _create(table: _Table) -> str:
    shape = table.shape
    columns = ",\n  ".join(_column(c) for c in shape.columns)
    options = [f"{ident(k)} = {literal(v)}" for k, v in _options(shape.reloptions)]
    options += [f"toast.{ident(k)} = {literal(v)}" for k, v in _options(shape.toast_reloptions)]
    with_ = f" WITH ({', '.join(options)})" if options else ""
    return f"CREATE TABLE {table.qualified} (\n  {columns}\n){with_}"


def _options(pairs: Iterable[str]) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise VacuumlabError(f"the profile has a malformed storage parameter {pair!r}")
        out.append((name.strip(), value.strip()))
    return out


def _column(column: Column) -> str:
    text = f"{ident(column.name)} {column.type}"
    if column.generated == "s" and column.default:
        text += f" GENERATED ALWAYS AS ({column.default}) STORED"
    elif column.identity == "a":
        text += " GENERATED ALWAYS AS IDENTITY"
    elif column.identity == "d" or _serial(column):
        text += " GENERATED BY DEFAULT AS IDENTITY"  # the captured sequence is not ours
    elif column.default is not None:
        text += f" DEFAULT {column.default}"
    return text + (" NOT NULL" if column.not_null and not column.identity else "")


def _storage(table: _Table) -> list[str]:
    out = []
    for c in table.shape.columns:
        at = f"ALTER TABLE {table.qualified} ALTER COLUMN {ident(c.name)}"
        if c.storage != "extended" and _varlena(c):
            out.append(f"{at} SET STORAGE {c.storage.upper()}")
        if c.compression:
            out.append(f"{at} SET COMPRESSION {ident(c.compression)}")
    return out


def _varlena(column: Column) -> bool:
    t = column.type
    return t in ("text", "bytea", "json", "jsonb") or t.startswith(("character", "varchar"))


def _load(table: _Table) -> str:
    columns = table.writable()
    if not columns:
        return (f"INSERT INTO {table.qualified} SELECT FROM generate_series(1, "
                f"{table.rows}::bigint)")  # fmt: skip
    keys = ", ".join(f"{table.specs[c.name].load_key(table.rows)} AS k{n}"
                     for n, c in enumerate(columns))  # fmt: skip
    names = ", ".join(ident(c.name) for c in columns)
    values = ", ".join(table.specs[c.name].value(f"s.k{n}") for n, c in enumerate(columns))
    return (
        f"INSERT INTO {table.qualified} ({names})\n"
        f"SELECT {values}\n"
        f"  FROM (SELECT {keys} FROM generate_series(1, {table.rows}::bigint) AS g(i) "
        "OFFSET 0) AS s"
    )


def _after(table: _Table, notes: list[str]) -> list[str]:
    shape = table.shape
    out, backed = [], set()
    for constraint in shape.constraints:
        if constraint.kind in ("p", "u"):
            out.append(f"ALTER TABLE {table.qualified} ADD CONSTRAINT {ident(constraint.name)} "
                       f"{constraint.definition}")  # fmt: skip
            backed.add(constraint.name)
        elif constraint.kind in ("c", "f", "x", "t"):
            notes.append(
                f"{shape.qualified}: constraint {constraint.name} ({constraint.definition}) "
                "is left out: synthetic rows cannot be made to meet it"
            )
    for index in shape.indexes:
        if index.name in backed:
            continue
        using = index.definition.find(f" USING {index.method} (")
        if using < 0:
            raise VacuumlabError(f"the profile's index {index.name} has no USING clause")
        unique = "UNIQUE " if index.unique else ""
        out.append(f"CREATE {unique}INDEX ON {table.qualified}{index.definition[using:]}")
    return out


# -- the scripts -----------------------------------------------------------------------------


def _statement_scripts(
    table: _Table, statements: list[Statement], scale: float, notes: list[str]
) -> dict[str, float]:
    """One script per statement; the rows per second each kind of change explains."""
    explained = {"insert": 0.0, "update": 0.0, "delete": 0.0}
    for number, s in enumerate(statements, start=1):
        if s.kind == "other":
            notes.append(f"statement {s.queryid} on {s.table} is neither INSERT, UPDATE, DELETE "
                         "nor SELECT: left out")  # fmt: skip
            continue
        rows = max(1, round(s.rows_per_call))
        if s.kind in explained:
            if s.rows_per_call <= 0:
                notes.append(f"statement {s.queryid} on {s.table} changed no rows: left out")
                continue
            explained[s.kind] += s.calls_per_s * s.rows_per_call
            rate = s.calls_per_s * s.rows_per_call / rows * scale
        else:
            rate = s.calls_per_s * scale
        sets = [c for c in s.sets if c in table.specs]
        text = _script(table, s.kind, rows, sets, s.skip_locked)
        table.scripts.append(ScriptPlan(f"{table.shape.name}-{s.kind}-{number}", text, rate))
    return explained


def _synthetic_scripts(
    table: _Table, captured: CapturedTable, explained: dict[str, float], scale: float,
    notes: list[str],
) -> None:  # fmt: skip
    """Inserts, updates and deletes the statements do not explain, at the counters' rates."""
    rates = captured.rates
    rest = {
        "insert": rates.inserts - explained["insert"],
        "update": rates.updates - explained["update"],
        "delete": rates.deletes - explained["delete"],
    }
    name = table.shape.name
    if rest["insert"] * scale > _NEGLIGIBLE:
        text = _script(table, "insert", 1, [c.name for c in table.writable()], False)
        table.scripts.append(ScriptPlan(f"{name}-synthetic-insert", text, rest["insert"] * scale))
    if rest["update"] * scale > _NEGLIGIBLE:
        _synthetic_updates(table, rest["update"] * scale, rates.hot_share, notes)
    if rest["delete"] * scale > _NEGLIGIBLE:
        text = _script(table, "delete", 1, [], False)
        table.scripts.append(ScriptPlan(f"{name}-synthetic-delete", text, rest["delete"] * scale))


def _synthetic_updates(table: _Table, rate: float, hot_share: float, notes: list[str]) -> None:
    """Updates of a column no index covers (HOT possible) for the HOT share, of an indexed
    one for the rest."""
    candidates = [c.name for c in table.writable() if c.name != table.key]
    free = [c for c in candidates if c not in table.indexed]
    covered = [c for c in candidates if c in table.indexed] or ([table.key] if table.key else [])
    name = table.shape.name
    hot = rate * hot_share if free else 0.0
    if hot_share > 0 and not free:
        notes.append(f"{table.shape.qualified}: every column is indexed; no update can be HOT")
    if not covered:
        hot = rate
    if hot > 0:
        text = _script(table, "update", 1, free[:1], False)
        table.scripts.append(ScriptPlan(f"{name}-synthetic-update-hot", text, hot))
    if rate - hot > 0:
        text = _script(table, "update", 1, covered[:1], False)
        table.scripts.append(ScriptPlan(f"{name}-synthetic-update", text, rate - hot))


def _script(table: _Table, kind: str, rows: int, sets: list[str], skip_locked: bool) -> str:
    """One pgbench script: a statement of ``kind`` over ``rows`` rows of the table."""
    t = table.qualified
    if kind == "insert":
        columns = [c for c in table.writable() if c.name in sets] or table.writable()
        specs = [table.specs[c.name] for c in columns]
        keys = ", ".join(f"{s.replay_key()} AS k{n}" for n, s in enumerate(specs))
        values = ", ".join(s.value(f"s.k{n}") for n, s in enumerate(specs))
        names = ", ".join(ident(c.name) for c in columns)
        return (f"INSERT INTO {t} ({names}) SELECT {values} FROM (SELECT {keys} "
                f"FROM generate_series(1, {rows}) AS g(i) OFFSET 0) AS s;\n")  # fmt: skip
    pick = _pick(
        table, rows, lock=kind != "select", skip=skip_locked or kind != "select_for_update"
    )
    head = f"\\set r random(1, {max(table.rows, 1)})\n"
    key = ident(table.key) if table.key else "ctid"
    if kind == "update":
        drawn_by_server = [c for c in sets if _automatic(table.specs[c].column)]
        if drawn_by_server and len(drawn_by_server) == len(sets):
            # An identity or serial column takes its next value from its own sequence, as
            # an insert's would: a value drawn elsewhere would collide with the rows the
            # inserts add (and an ALWAYS identity can only be set to DEFAULT).
            assign = ", ".join(f"{ident(c)} = DEFAULT" for c in drawn_by_server)
            return f"{head}UPDATE {t} AS u SET {assign} WHERE u.{key} IN ({pick});\n"
        sets = [c for c in sets if c not in drawn_by_server]
        specs = [table.specs[c] for c in sets] or [table.specs[table.writable()[0].name]]
        specs = [_changing(s) if s.column.name in table.indexed else s for s in specs]
        keys = ", ".join(f"k{n}, (k{n} + 1) % {s.distinct} AS j{n}" for n, s in enumerate(specs))
        drawn = ", ".join(f"{s.replay_key()} AS k{n}" for n, s in enumerate(specs))
        assign = ", ".join(_assign(s, n, s.column.name in table.indexed)
                           for n, s in enumerate(specs))  # fmt: skip
        return (f"{head}UPDATE {t} AS u SET {assign} FROM (SELECT {keys} FROM (SELECT {drawn} "
                f"OFFSET 0) AS d) AS s WHERE u.{key} IN ({pick});\n")  # fmt: skip
    if kind == "delete":
        return f"{head}DELETE FROM {t} AS d WHERE d.{key} IN ({pick});\n"
    return f"{head}{pick};\n"


def _changing(spec: Spec) -> Spec:
    """An indexed column an UPDATE sets takes at least two values: a statement that sets it
    in production changes it (the captured HOT share says so), and one value could not."""
    return spec if spec.unique or spec.distinct >= 2 else replace(spec, distinct=2)


def _assign(spec: Spec, n: int, indexed: bool) -> str:
    """``column = value`` for key ``s.k{n}``. An indexed column gets a value other than its
    old one (the next key's where the drawn one equals it): an UPDATE that leaves every
    indexed column as it was may be HOT, and the replay would then show HOT updates that
    production did not have."""
    column = ident(spec.column.name)
    value = spec.value(f"s.k{n}")
    if not indexed or spec.unique:
        return f"{column} = {value}"
    other = spec.value(f"s.j{n}")
    same = f"u.{column} IS NOT DISTINCT FROM {value}"
    return f"{column} = CASE WHEN {same} THEN {other} ELSE {value} END"


def _pick(table: _Table, rows: int, *, lock: bool, skip: bool) -> str:
    locking = (" FOR UPDATE SKIP LOCKED" if skip else " FOR UPDATE") if lock else ""
    t = table.qualified
    if table.key is None:
        return f"SELECT x.ctid FROM {t} AS x OFFSET :r / 10 LIMIT {rows}{locking}"
    key = ident(table.key)
    return (f"SELECT x.{key} FROM {t} AS x WHERE x.{key} >= :r ORDER BY x.{key} "
            f"LIMIT {rows}{locking}")  # fmt: skip
