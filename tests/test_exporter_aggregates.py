"""What ``--max-tables`` hides shows in totals over every relation of the database: the dead
tuples, the relations past each threshold and the oldest relfrozenxid age. Checked against
the model's full thresholds on synthetic relations, and against what the embedded
PostgreSQL's catalog and statistics say, with the per-table series capped at five."""

from __future__ import annotations

import random
import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass

import psycopg
import pytest
from prometheus_client.metrics_core import Metric

from helpers.advise import relation, snapshot, toast_of
from helpers.db import execute
from helpers.exporter import exporting, scrape, value
from vacuumlab.model.thresholds import Thresholds, of_tables, server_settings
from vacuumlab.records.snapshot import Relation, Table
from vacuumlab.watch.metrics import TABLE_GAUGES, Scrape, families
from vacuumlab.watch.view import Pick, live_view

CAP = 5
PROMTOOL = shutil.which("promtool")

# -- on synthetic relations: the view's counts are the model's ----------------------------------

#: Reloptions that move each threshold, down to 0, or turn the insert threshold off.
OPTIONS: tuple[dict[str, str], ...] = (
    {},
    {},
    {"autovacuum_vacuum_threshold": "0", "autovacuum_vacuum_scale_factor": "0"},
    {"autovacuum_vacuum_insert_threshold": "-1"},
    {"autovacuum_analyze_threshold": "0", "autovacuum_analyze_scale_factor": "0.5"},
    {"autovacuum_vacuum_max_threshold": "100", "autovacuum_enabled": "off"},
)


def around(limit: float | None, draw: random.Random) -> int:
    """A count at, just under or just over ``limit`` (its floor), or anywhere below it."""
    if limit is None:
        return draw.randrange(0, 5000)
    return max(0, int(limit) + draw.choice((-1, 0, 1, -int(limit))))


def fleet(count: int, seed: int) -> list[Table]:
    """``count`` tables, a third with a TOAST relation, each relation's dead tuples, inserts
    and changes since analyze drawn at, just past or short of its own thresholds."""
    draw = random.Random(seed)
    server = server_settings(snapshot())
    tables = []
    for i in range(count):
        options = draw.choice(OPTIONS)
        shape = {
            "reltuples": draw.choice((-1.0, 0.0, 1000.0, 12345.0, 2e6)),
            "relpages": 100,
            "relallfrozen": draw.choice((0, 50, 100)),
            "reloptions": options,
            "frozenxid_age": draw.randrange(1000, 10**6),
        }
        heap = relation(1000 + 2 * i, f"t{i}", **shape)
        toast = toast_of(heap, 1001 + 2 * i, **shape) if i % 3 == 0 else None
        table = Table(heap=heap, toast=toast)
        drawn = [place(t, draw) for t in of_tables([table], server, 180001)]
        tables.append(Table(heap=drawn[0], toast=drawn[1] if toast is not None else None))
    return tables


def place(t: Thresholds, draw: random.Random) -> Relation:
    counts = {
        "n_dead_tup": around(t.vacuum, draw),
        "n_ins_since_vacuum": around(t.insert, draw),
        "n_mod_since_analyze": around(t.analyze, draw),
    }
    return t.relation.model_copy(update=counts)


@dataclass(frozen=True, slots=True)
class Totals:
    dead: int
    vacuum: int
    insert: int
    analyze: int


def by_the_model(tables: list[Table]) -> Totals:
    """The totals from the model's full record of every relation."""
    every = of_tables(tables, server_settings(snapshot(*tables)), 180001)
    return Totals(
        dead=sum(t.dead for t in every),
        vacuum=sum(t.dead > t.vacuum for t in every),
        insert=sum(t.insert is not None and t.inserted > t.insert for t in every),
        analyze=sum(t.analyze is not None and t.modified > t.analyze for t in every),
    )


@pytest.mark.parametrize("seed", range(4))
def test_the_totals_are_the_models_over_every_relation_whatever_the_pick(seed: int) -> None:
    tables = fleet(300, seed)
    expected = by_the_model(tables)
    # Thresholds drawn at their edges: some relations are past each, not all.
    relations = 300 + 100
    assert 0 < expected.vacuum < relations
    assert 0 < expected.insert < relations
    assert 0 < expected.analyze < 300  # heaps only
    for pick in (Pick(), Pick(limit=3), Pick(schemas=frozenset({"elsewhere"}))):
        view = live_view(None, snapshot(*tables), pick=pick)
        past = view.past_threshold
        assert (view.dead_tuples, past.vacuum, past.insert, past.analyze) == (
            expected.dead,
            expected.vacuum,
            expected.insert,
            expected.analyze,
        ), pick


def test_the_totals_are_exported_with_the_databases_name() -> None:
    view = live_view(None, snapshot(*fleet(30, 7)), pick=Pick(limit=2))
    found = {f.name: f for f in families(view, Scrape(True, 0.1, 13, 0))}
    [dead] = found["vacuumlab_database_dead_tuples"].samples
    assert (dead.labels, dead.value) == ({"database": "app"}, view.dead_tuples)
    past = {
        s.labels["threshold"]: s.value
        for s in found["vacuumlab_database_relations_past_threshold"].samples
        if s.labels["database"] == "app"
    }
    counts = view.past_threshold
    assert past == {"vacuum": counts.vacuum, "insert": counts.insert, "analyze": counts.analyze}
    assert len(found["vacuumlab_table_dead_tuples"].samples) == 2


# -- on the embedded PostgreSQL: the totals are the server's ------------------------------------

#: What the catalog and the statistics say of every heap and TOAST relation the exporter reads
#: (tables.sql: no catalogs, no temporary tables), each threshold computed here from the
#: settings and reloptions as relation_needs_vacanalyze() does (autovacuum.c): a TOAST relation
#: reads its own reloptions when it has any, its table's otherwise.
#: A reloption's value, or the server's setting: (name, column).
OPTION = (
    "coalesce(max(option_value) FILTER (WHERE option_name = '{0}'), "
    "current_setting('{0}'))::float8 AS {1}"
)
SETTINGS = ",\n".join(
    OPTION.format(f"autovacuum_{name}", column)
    for name, column in (
        ("vacuum_threshold", "v_base"),
        ("vacuum_scale_factor", "v_scale"),
        ("vacuum_max_threshold", "v_max"),
        ("vacuum_insert_threshold", "i_base"),
        ("vacuum_insert_scale_factor", "i_scale"),
        ("analyze_threshold", "a_base"),
        ("analyze_scale_factor", "a_scale"),
    )
)
TRUTH = f"""
WITH heaps AS (
    SELECT c.oid, c.reltoastrelid, c.reloptions
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'm') AND c.relpersistence <> 't'
       AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_toast'
), listed AS (
    SELECT oid, false AS toast, reloptions AS opts FROM heaps
    UNION ALL
    SELECT t.oid, true, coalesce(t.reloptions, h.reloptions)
      FROM heaps h JOIN pg_class t ON t.oid = h.reltoastrelid
), measured AS (
    SELECT l.toast, c.relfrozenxid, c.relminmxid, s.n_dead_tup, s.n_ins_since_vacuum,
           s.n_mod_since_analyze, greatest(c.reltuples, 0) AS tuples,
           CASE WHEN c.relpages > 0 AND c.relallfrozen > 0
                THEN 1 - least(c.relallfrozen, c.relpages)::float8 / c.relpages ELSE 1
           END AS unfrozen, o.*
      FROM listed l
      JOIN pg_class c ON c.oid = l.oid
      JOIN pg_stat_all_tables s ON s.relid = l.oid
     CROSS JOIN LATERAL (SELECT {SETTINGS} FROM pg_options_to_table(l.opts)) o
)
SELECT count(*), sum(n_dead_tup),
       count(*) FILTER (WHERE n_dead_tup > CASE WHEN v_max < 0 THEN v_base + v_scale * tuples
                                                ELSE least(v_max, v_base + v_scale * tuples) END),
       count(*) FILTER (WHERE i_base >= 0
                          AND n_ins_since_vacuum > i_base + i_scale * tuples * unfrozen),
       count(*) FILTER (WHERE NOT toast AND n_mod_since_analyze > a_base + a_scale * tuples),
       max(age(relfrozenxid)), max(mxid_age(relminmxid)), current_database()
  FROM measured
"""


@dataclass(frozen=True, slots=True)
class Truth:
    relations: int
    dead: int
    vacuum: int
    insert: int
    analyze: int
    xid_age: int
    mxid_age: int
    database: str

    @property
    def counts(self) -> tuple[int, int, int, int, int]:
        """All but the ages, which grow with every transaction id the cluster assigns (an
        autovacuum's ANALYZE of a catalog takes one)."""
        return self.relations, self.dead, self.vacuum, self.insert, self.analyze


def truth(dsn: str) -> Truth:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(TRUTH).fetchone()
    assert row is not None
    relations, dead, vacuum, insert, analyze, xid_age, mxid_age, database = row
    return Truth(relations, int(dead), vacuum, insert, analyze, xid_age, mxid_age, database)


#: Autovacuum off for the tables and their TOAST relations: nothing empties them mid-test.
OFF = "autovacuum_enabled = off, toast.autovacuum_enabled = off"


def tables(prefix: str, count: int, *, first: int = 0) -> list[str]:
    """``count`` tables of 200 analysed rows, numbered from ``first``; a few with reloptions
    that move a threshold: t3's vacuum scale factor (0.01: 52 dead tuples), the insert
    threshold of t5 and t20 to t23 (100: 140 inserts)."""
    own = {3: "autovacuum_vacuum_scale_factor = 0.01"}
    own |= dict.fromkeys((5, 20, 21, 22, 23), "autovacuum_vacuum_insert_threshold = 100")
    made = []
    for i in range(first, first + count):
        options = ", ".join(o for o in (OFF, own.get(i)) if o)
        made += [
            f"CREATE TABLE {prefix}{i} (id int PRIMARY KEY, body text) WITH ({options})",
            f"ALTER TABLE {prefix}{i} ALTER body SET STORAGE EXTERNAL",  # no compression
            f"INSERT INTO {prefix}{i} SELECT g, 'x' FROM generate_series(1, 200) g",
        ]
    # The inserts reach the statistics first, or they would count as changes after ANALYZE.
    made.append("SELECT pg_stat_force_next_flush()")
    return made + [f"ANALYZE {prefix}{i}" for i in range(first, first + count)]


#: Thresholds on 200 rows: vacuum 50 + 0.2 × 200 = 90 dead tuples, analyze 50 + 0.1 × 200 = 70
#: changes, insert 1,000 + 0.2 × 200 = 1,040 inserts (140 with tables()'s reloption). More
#: relations are past the vacuum and the insert thresholds than CAP: the totals cannot be the
#: exported relations'.
CHANGES = (
    "DELETE FROM t7 WHERE id <= 150",  # past vacuum and analyze
    "DELETE FROM t3 WHERE id <= 60",  # past its own vacuum threshold only
    # 7 to 70: short of vacuum, and of analyze (t19 at its threshold, not past it)
    *(f"DELETE FROM t{i} WHERE id <= {7 * (i - 9)}" for i in range(10, 20)),
    # 80 inserts, 280 since the last vacuum: past analyze and their own insert threshold
    *(f"INSERT INTO t{i} SELECT g, 'y' FROM generate_series(1001, 1080) g" for i in range(20, 24)),
    *(f"DELETE FROM t{i} WHERE id <= 100" for i in range(26, 30)),  # past vacuum and analyze
    # 100 kB each, stored out of line: a few hundred TOAST chunks die with them.
    "INSERT INTO t25 SELECT g, (SELECT string_agg(md5(g::text || s::text), '') "
    "FROM generate_series(1, 3200) s) FROM generate_series(2001, 2005) g",
    "DELETE FROM t25 WHERE id > 2000",
)
#: Dead heap tuples CHANGES leave: 150 + 60 + (7 + 14 + ... + 70) + 5 + 4 × 100.
HEAP_DEAD = 150 + 60 + sum(7 * k for k in range(1, 11)) + 5 + 4 * 100


def settled(dsn: str, *, heap_dead: int) -> Truth:
    """The server's totals once every change is in the statistics (backends flush them about
    once a second): the heaps show ``heap_dead`` and two reads 0.3 s apart agree."""
    query = "SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables"
    deadline = time.monotonic() + 15
    last: Truth | None = None
    while time.monotonic() < deadline:
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute(query).fetchone()
        now = truth(dsn)
        if row is not None and row[0] == heap_dead and last and now.counts == last.counts:
            return now
        last = now
        time.sleep(0.3)
    raise AssertionError(f"the statistics never settled at {heap_dead} dead heap tuples")


def oldest(dsn: str, names: list[str]) -> tuple[int, int]:
    """The oldest relfrozenxid age of the public tables' heaps and TOAST relations, and that
    of the named tables', read at the same moment."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT max(g.age), max(g.age) FILTER (WHERE c.relname = ANY(%s)) FROM pg_class c "
            "LEFT JOIN pg_class t ON t.oid = c.reltoastrelid CROSS JOIN LATERAL "
            "(SELECT greatest(age(c.relfrozenxid), age(t.relfrozenxid)) AS age) g "
            "WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'",
            (names,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def samples_per_table_family(found: dict[str, Metric]) -> dict[str, int]:
    return {name: len(found[f"vacuumlab_{name}"].samples) for name, _, _ in TABLE_GAUGES}


def exported_totals(dsn: str) -> tuple[dict[str, Metric], Truth, Truth]:
    """One scrape of an exporter capped at CAP, between two reads of the server's totals."""
    before = truth(dsn)
    with exporting(dsn, pick=Pick(limit=CAP)) as (url, _):
        found = scrape(url)
    return found, before, truth(dsn)


def assert_totals(found: dict[str, Metric], before: Truth, after: Truth) -> None:
    db = {"database": before.database}
    assert value(found, "vacuumlab_relations") == before.relations == after.relations
    assert value(found, "vacuumlab_database_dead_tuples", **db) == before.dead == after.dead
    for threshold, count in (
        ("vacuum", before.vacuum),
        ("insert", before.insert),
        ("analyze", before.analyze),
    ):
        past = value(
            found, "vacuumlab_database_relations_past_threshold", threshold=threshold, **db
        )
        assert past == count, threshold
    # Ages grow with every transaction id assigned anywhere in the cluster: between the reads.
    for counter, low, high in (
        ("xid", before.xid_age, after.xid_age),
        ("mxid", before.mxid_age, after.mxid_age),
    ):
        age = value(found, "vacuumlab_wraparound_table_age", counter=counter)
        assert age is not None
        assert low <= age <= high, counter


def test_the_totals_cover_the_relations_the_cap_hides(embedded_database: str) -> None:
    dsn = embedded_database
    execute(dsn, *tables("t", 30), *CHANGES)
    server = settled(dsn, heap_dead=HEAP_DEAD)
    # What the changes were made to show: dead tuples in TOAST relations too, and relations
    # past each threshold (vacuum: t3, t7, t26 to t29 and t25's TOAST relation; insert: t5
    # and t20 to t23; analyze: t7, t20 to t23 and t26 to t29).
    assert server.dead > HEAP_DEAD
    assert (server.relations, server.vacuum, server.insert, server.analyze) == (60, 7, 5, 9)
    found, before, after = exported_totals(dsn)
    assert before.counts == server.counts
    assert_totals(found, before, after)
    assert value(found, "vacuumlab_relations_exported") == CAP
    shown = found["vacuumlab_table_dead_tuples"].samples
    assert len(shown) == CAP
    # The cap hides some: the totals are not the exported series'.
    assert sum(s.value for s in shown) < server.dead
    # The oldest relation is hidden too: the age exported is not the exported relations'.
    every, exported = oldest(dsn, [s.labels["table"] for s in shown])
    assert every > exported
    thirty = samples_per_table_family(found)

    execute(dsn, *tables("t", 30, first=30), "DELETE FROM t40 WHERE id <= 20")
    server = settled(dsn, heap_dead=HEAP_DEAD + 20)
    assert server.relations == 120
    found, before, after = exported_totals(dsn)
    assert_totals(found, before, after)
    assert samples_per_table_family(found) == thirty


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not on PATH")
def test_promtool_accepts_a_scrape(embedded_database: str) -> None:
    execute(embedded_database, *tables("t", 3))
    with (
        exporting(embedded_database, pick=Pick(limit=CAP)) as (url, _),
        urllib.request.urlopen(url, timeout=60) as response,
    ):
        text = response.read()
    assert PROMTOOL is not None
    checked = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=text, capture_output=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
