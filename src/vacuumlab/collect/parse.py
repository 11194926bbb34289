"""Statements and DDL read as structure, through PostgreSQL's own parser (pglast), never by
regular expressions: which captured table a statement changes or locks, the columns it sets
and filters on, the tables it reads; and the literals a table's DDL keeps.

Nothing here keeps a statement's text: :func:`structure` returns the shape only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pglast import ast, parse_sql
from pglast.enums.lockoptions import LockWaitPolicy
from pglast.parser import ParseError

from vacuumlab.records.profile import StatementKind

#: The statements that change a table, each with the table in ``relation``.
_CHANGES: dict[type[ast.Node], StatementKind] = {
    ast.InsertStmt: "insert",
    ast.UpdateStmt: "update",
    ast.DeleteStmt: "delete",
    ast.MergeStmt: "other",
}


@dataclass(frozen=True, slots=True)
class Target:
    """A captured table as statements name it."""

    schema_name: str
    name: str
    columns: frozenset[str]

    @property
    def qualified(self) -> str:
        return f"{self.schema_name}.{self.name}"


@dataclass(frozen=True, slots=True)
class Structure:
    """What a statement does to the captured tables."""

    kind: StatementKind
    table: str
    sets: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()
    skip_locked: bool = False
    limit: bool = False
    reads: tuple[str, ...] = ()


def structure(text: str, targets: Sequence[Target], search_path: Sequence[str]) -> Structure | None:
    """The structure of the first statement in ``text`` that touches a captured table; None
    when none does, or the text does not parse (a hidden text, a truncated one)."""
    try:
        statements = parse_sql(text)
    except ParseError:
        return None
    resolver = _Resolver(targets, search_path)
    for raw in statements:
        found = resolver.structure(raw.stmt) if raw.stmt is not None else None
        if found is not None:
            return found
    return None


class _Resolver:
    """Matches the tables a statement names with the captured ones: a qualified name exactly,
    an unqualified one along the search path (the capture session's: the statement's own
    session's is not known), unless a CTE of the statement has that name."""

    def __init__(self, targets: Sequence[Target], search_path: Sequence[str]) -> None:
        self.targets = targets
        self.rank = {schema: i for i, schema in enumerate(search_path)}
        self.ctes: set[str] = set()

    def structure(self, stmt: ast.Node) -> Structure | None:
        nodes = list(_walk(stmt))
        self.ctes = {n.ctename for n in nodes if isinstance(n, ast.CommonTableExpr) if n.ctename}
        touched = [t for n in nodes if isinstance(n, ast.RangeVar) if (t := self.target(n))]
        if not touched:
            return None
        skip_locked = any(
            isinstance(n, ast.LockingClause) and n.waitPolicy == LockWaitPolicy.LockWaitSkip
            for n in nodes
        )
        change = self._change(nodes)
        if change is not None:
            node, target = change
            return self._described(node, target, _CHANGES[type(node)], touched, skip_locked)
        locking = self._selects(nodes, locked=True)
        if locking is not None:
            node, target = locking
            kind: StatementKind = "select_for_update"
            return self._described(node, target, kind, touched, skip_locked)
        reading = self._selects(nodes, locked=False)
        if reading is None:  # COPY, TRUNCATE, a function taking the table's rows …
            return self._described(stmt, touched[0], "other", touched, skip_locked)
        node, target = reading
        return self._described(node, target, "select", touched, skip_locked)

    def target(self, rv: ast.RangeVar) -> Target | None:
        if rv.schemaname is None and rv.relname in self.ctes:
            return None
        if rv.schemaname is not None:
            return next(
                (t for t in self.targets if (t.schema_name, t.name) == (rv.schemaname, rv.relname)),
                None,
            )
        found = [t for t in self.targets if t.name == rv.relname and t.schema_name in self.rank]
        return min(found, key=lambda t: self.rank[t.schema_name], default=None)

    def _change(self, nodes: Iterable[ast.Node]) -> tuple[ast.Node, Target] | None:
        """The first INSERT, UPDATE, DELETE or MERGE of a captured table, the statement's own
        before those in its CTEs (``WITH moved AS (DELETE …) INSERT INTO archive …``)."""
        for node in nodes:
            relation = getattr(node, "relation", None)
            if type(node) in _CHANGES and isinstance(relation, ast.RangeVar):
                target = self.target(relation)
                if target is not None:
                    return node, target
        return None

    def _selects(
        self, nodes: Iterable[ast.Node], *, locked: bool
    ) -> tuple[ast.Node, Target] | None:
        """The first SELECT reading a captured table in its FROM (with ``locked``, one that
        also locks rows: FOR UPDATE, FOR NO KEY UPDATE, FOR SHARE …)."""
        for node in nodes:
            if not isinstance(node, ast.SelectStmt) or (locked and not node.lockingClause):
                continue
            for rv in _from_tables(node.fromClause):
                if target := self.target(rv):
                    return node, target
        return None

    def _described(
        self,
        node: ast.Node,
        target: Target,
        kind: StatementKind,
        touched: Sequence[Target],
        skip_locked: bool,
    ) -> Structure:
        names = _names_of(node, target)
        return Structure(
            kind=kind,
            table=target.qualified,
            sets=_sets(node),
            filters=_filters(getattr(node, "whereClause", None), names, target.columns),
            skip_locked=skip_locked,
            limit=self._limited(node, target),
            reads=tuple(dict.fromkeys(t.qualified for t in touched if t != target)),
        )

    def _limited(self, node: ast.Node, target: Target) -> bool:
        """A LIMIT on the rows of the target: the statement's own, or that of a SELECT over
        the target inside it (``WHERE id IN (SELECT id … LIMIT 10 FOR UPDATE SKIP LOCKED)``)."""
        return any(
            isinstance(inner, ast.SelectStmt)
            and inner.limitCount is not None
            and (
                inner is node
                or any(self.target(rv) == target for rv in _from_tables(inner.fromClause))
            )
            for inner in _walk(node)
        )


def _walk(node: object) -> Iterator[ast.Node]:
    """Every node of a tree, parents before children, in the order of their fields."""
    if isinstance(node, ast.Node):
        yield node
        for name in _fields(node):
            yield from _walk(getattr(node, name))
    elif isinstance(node, tuple | list):
        for item in node:
            yield from _walk(item)


def _fields(node: ast.Node) -> Iterable[str]:
    """The names of a node's fields (pglast keeps them in each class's ``__slots__``)."""
    slots: Iterable[str] = getattr(type(node), "__slots__", ())
    return slots


def _from_tables(items: Iterable[object] | None) -> Iterator[ast.RangeVar]:
    """The tables a FROM list names directly, joins included, subqueries not."""
    for item in items or ():
        if isinstance(item, ast.RangeVar):
            yield item
        elif isinstance(item, ast.JoinExpr):
            yield from _from_tables((item.larg, item.rarg))


def _names_of(node: ast.Node, target: Target) -> set[str]:
    """The qualifiers that name the target in the statement: its alias, or its name."""
    for rv in [getattr(node, "relation", None), *_from_tables(getattr(node, "fromClause", ()))]:
        if isinstance(rv, ast.RangeVar) and rv.relname == target.name:
            alias = rv.alias.aliasname if rv.alias is not None else None
            return {alias or target.name}
    return {target.name}


def _sets(node: ast.Node) -> tuple[str, ...]:
    """UPDATE: the columns it sets (ON CONFLICT DO UPDATE's are the INSERT's concern); INSERT:
    the columns it lists."""
    if isinstance(node, ast.UpdateStmt):
        return tuple(dict.fromkeys(t.name for t in node.targetList or () if t.name))
    if isinstance(node, ast.InsertStmt):
        return tuple(t.name for t in node.cols or () if t.name)
    return ()


def _filters(where: object, names: set[str], columns: frozenset[str]) -> tuple[str, ...]:
    """The target's columns a WHERE clause reads, not counting those of subqueries (another
    scope) nor of other tables (a qualifier that is not the target's)."""
    found: list[str] = []
    stack: list[object] = [where]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.SelectStmt):
            continue
        if isinstance(node, ast.ColumnRef):
            fields = [f.sval or "" for f in node.fields or () if isinstance(f, ast.String)]
            qualifier_ok = len(fields) == 1 or (len(fields) >= 2 and fields[-2] in names)
            if fields and qualifier_ok and fields[-1] in columns:
                found.append(fields[-1])
        elif isinstance(node, ast.Node):
            stack.extend(getattr(node, name) for name in reversed(list(_fields(node))))
        elif isinstance(node, tuple | list):
            stack.extend(reversed(node))
    return tuple(dict.fromkeys(found))


def literals(text: str) -> list[str]:
    """The constants written in SQL ``text`` (a statement), as SQL writes them: strings
    quoted, numbers and booleans as they are. Empty when the text does not parse."""
    try:
        statements = parse_sql(text)
    except ParseError:
        return []
    found = [_literal(n) for n in _walk(statements) if isinstance(n, ast.A_Const)]
    return list(dict.fromkeys(value for value in found if value is not None))


def _literal(const: ast.A_Const) -> str | None:
    value = const.val
    if const.isnull or value is None:
        return None
    if isinstance(value, ast.String):
        return "'" + (value.sval or "").replace("'", "''") + "'"
    if isinstance(value, ast.Integer):
        return str(value.ival)
    if isinstance(value, ast.Float):
        return str(value.fval)
    if isinstance(value, ast.Boolean):
        return "true" if value.boolval else "false"
    if isinstance(value, ast.BitString):
        return str(value.bsval)
    return None
