"""The version facts (model/versions.py): checked against real servers (the embedded 18 and the
server of VACUUMLAB_TEST_DSN), and against the code that relies on them: every version split
of pg/queries is explained by a fact, and every setting vacuumlab reads or sets has one."""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable

from pglast.parser import scan

from helpers.version_facts import check_server, database_with_extensions
from vacuumlab.model import versions
from vacuumlab.model.knobs import KNOBS, stock_settings
from vacuumlab.pg import queries
from vacuumlab.pg.sandbox import BASE_CONFIG, VERSIONED_CONFIG
from vacuumlab.studies.cost_driver import COST_SETTINGS

_POST = re.compile(r"^(?P<name>[a-z0-9_]+?)_post_(?P<version>\d{6})\.sql$")


def test_the_tables_agree_with_the_server(server: str) -> None:
    """On 18, and on the server of VACUUMLAB_TEST_DSN: every setting and column is present or
    absent, and every default is what the tables say, pg_stat_statements included."""
    with database_with_extensions(server) as dsn:
        assert check_server(dsn) == []


def _sql_files() -> list[Traversable]:
    root = resources.files(queries)
    return [
        f
        for folder in (root, root.joinpath("fragments"))
        for f in folder.iterdir()
        if f.name.endswith(".sql")
    ]


def _splits() -> dict[str, set[int]]:
    """Each question or fragment with the majors its ``_post_`` files start at."""
    found: dict[str, set[int]] = {}
    for f in _sql_files():
        match = _POST.match(f.name)
        if match:
            found.setdefault(match["name"], set()).add(int(match["version"]) // 10000)
    return found


def _facts() -> list[tuple[str, tuple[str, ...], set[int]]]:
    """Every fact: what it is, the queries it names, and the majors it marks (the first that
    has it, and the first after the last that has it)."""
    facts: list[tuple[str, tuple[str, ...], set[int]]] = []
    for s in versions.SETTINGS.values():
        facts.append((s.name, s.queries, _marks(s.since, s.until)))
    for c in versions.COLUMNS:
        facts.append((f"{c.relation}.{c.name}", c.queries, _marks(c.since, c.until)))
    for b in versions.BEHAVIOURS:
        facts.append((b.name, b.queries, {b.since}))
    return facts


def _marks(since: int, until: int | None) -> set[int]:
    return {since} if until is None else {since, until + 1}


def test_every_version_split_of_the_queries_is_explained() -> None:
    """Each ``_post_NNNNNN`` file, question or fragment, has a fact in the tables that names it
    and starts or ends at that major."""
    facts = _facts()
    unexplained = [
        f"{name}_post_{major}0000"
        for name, majors in sorted(_splits().items())
        for major in sorted(majors)
        if not any(name in named and major in marks for _, named, marks in facts)
    ]
    assert unexplained == []


def test_every_fact_that_names_a_query_marks_one_of_its_splits() -> None:
    splits = _splits()
    wrong = [
        f"{what} → {name}"
        for what, named, marks in _facts()
        for name in named
        if not marks & splits.get(name, set())
    ]
    assert wrong == []


def test_the_facts_lie_within_the_supported_majors() -> None:
    facts: list[versions.Setting | versions.Column] = [*versions.SETTINGS.values()]
    for fact in [*facts, *versions.COLUMNS]:
        assert versions.MIN_MAJOR <= fact.since <= versions.SUPPORTED[-1], fact
        assert fact.until is None or fact.since <= fact.until < versions.SUPPORTED[-1], fact
    for s in versions.SETTINGS.values():
        majors = [m for m, _ in s.changes]
        assert majors == sorted(majors), s
        assert all(s.since < m for m in majors), s
    assert len({(c.relation, c.name) for c in versions.COLUMNS}) == len(versions.COLUMNS)


def _settings_read_by_queries() -> set[str]:
    """The names settings.sql lists and every current_setting('name') of pg/queries (those
    of an extension, with a dot, left out), read with PostgreSQL's own scanner."""
    names: set[str] = set()
    for f in _sql_files():
        text = f.read_text(encoding="utf-8")
        tokens = [(t.name, text[t.start : t.end + 1]) for t in scan(text)]
        for i, (kind, value) in enumerate(tokens):
            if kind != "SCONST":
                continue
            name = value.strip("'")
            called = i >= 2 and tokens[i - 2][1] == "current_setting"
            listed = f.name == "settings.sql" and tokens[i - 1][1] != "~"
            if (called or listed) and "." not in name:
                names.add(name)
    return names


def test_every_setting_vacuumlab_reads_or_sets_is_in_the_table() -> None:
    read_or_set = (
        {k.name for k in KNOBS.values() if "server" in k.scopes}
        | set(stock_settings(180000))
        | set(COST_SETTINGS)
        | set(BASE_CONFIG)
        | set(VERSIONED_CONFIG)
        | _settings_read_by_queries()
    )
    assert {"block_size", "segment_size", "old_snapshot_threshold"} <= read_or_set
    assert sorted(read_or_set - set(versions.SETTINGS)) == []


def test_the_knobs_start_where_their_settings_do() -> None:
    """A knob set server-wide (a GUC) starts in the major the table gives (reloptions-only
    knobs have no row in pg_settings: vacuum_truncate is a reloption from 12, a GUC from 18)."""
    for k in KNOBS.values():
        if "server" in k.scopes:
            s = versions.setting(k.name)
            assert s.until is None, k.name
            assert max(k.since // 10000, versions.MIN_MAJOR) == s.since, k.name


def test_stock_settings_are_the_tables_defaults() -> None:
    assert stock_settings(130000)["vacuum_cost_page_miss"] == "10"
    assert stock_settings(140000)["vacuum_cost_page_miss"] == "2"
    assert "autovacuum_worker_slots" not in stock_settings(170000)
    assert stock_settings(180000)["autovacuum_vacuum_max_threshold"] == "100000000"
    for major in versions.SUPPORTED:
        for name, value in stock_settings(major * 10000).items():
            assert versions.setting(name).default_in(major) == value


def test_the_sandbox_writes_versioned_settings_from_their_first_major() -> None:
    for name, (since, _) in VERSIONED_CONFIG.items():
        assert since == versions.setting(name).since > versions.MIN_MAJOR
