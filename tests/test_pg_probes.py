"""collect/probes.py: each small monitoring question, asked of the real embedded server, comes
back as its record."""

from __future__ import annotations

from psycopg import sql
from pydantic import BaseModel, Field, field_validator

from helpers.db import execute
from vacuumlab.collect import probes
from vacuumlab.pg.connect import connect
from vacuumlab.records.fillfactor import Counters, StatementTimes
from vacuumlab.records.probes import TableIo, VisibilityMap

AWKWARD = 'Odd "schema"'
TABLE = "public.probed"


def _probed(dsn: str) -> None:
    execute(
        dsn,
        "CREATE TABLE public.probed (id integer PRIMARY KEY, v integer)",
        "INSERT INTO public.probed SELECT i, 0 FROM generate_series(1, 1000) i",
        "UPDATE public.probed SET v = 1 WHERE id <= 100",
        "SELECT pg_stat_force_next_flush()",
    )


def test_table_questions_read_into_records(database: str) -> None:
    """On 18 and on the server of VACUUMLAB_TEST_DSN (an older major)."""
    _probed(database)
    with connect(database) as session:
        rel = probes.relation_size(session, TABLE)
        assert rel.bytes >= 8192
        assert rel.oid > 0
        assert rel.pages == rel.bytes // 8192
        dead = probes.dead_tuples(session, rel.oid)
        assert dead is not None
        assert probes.dead_tuples(session, 0) is None
        assert isinstance(probes.table_io(session, rel.oid), TableIo)
        [counters] = session.fetch("hot_counters", Counters, {"schema": "public", "name": "probed"})
        assert counters.n_tup_upd >= 0
        assert counters.heap_bytes == rel.bytes
        # PostgreSQL 16 adds the count of updates that moved the row to another page.
        newpage_known = session.info.version_num >= 160000
        assert (counters.n_tup_newpage_upd is not None) == newpage_known


def test_table_io_counts_the_difference(embedded_database: str) -> None:
    before = TableIo(1, 2, 3, 4)
    after = TableIo(11, 12, 13, 14)
    assert set(after.minus(before).values()) == {10}


def test_server_questions_read_into_records(embedded_database: str) -> None:
    with connect(embedded_database) as session:
        shown = probes.shown_settings(session)
        cost = probes.settings(session, {"vacuum_cost_limit", "vacuum_cost_page_miss"})
        facts = probes.server_facts(session)
        start = probes.wal_position(session)
        execute(embedded_database, "CREATE TABLE walled AS SELECT generate_series(1, 1000) AS i")
        later = probes.wal_position(session, start.lsn)
    assert shown["shared_buffers"].endswith("B")  # "128MB", never "163848kB"
    assert set(cost) == {"vacuum_cost_limit", "vacuum_cost_page_miss"}
    assert facts.shared_buffers_bytes > 0
    assert facts.shared_buffers_bytes % 8192 == 0
    assert facts.block_size == 8192
    assert facts.default_toast_compression in {"pglz", "lz4"}
    assert start.bytes_since == 0
    assert later.bytes_since > 0


def test_holds_lock_sees_a_granted_lock(embedded_database: str) -> None:
    _probed(embedded_database)
    with connect(embedded_database) as watcher, connect(embedded_database) as holder:
        oid = probes.relation_size(watcher, TABLE).oid
        pid = int(holder.scalar("SELECT pg_backend_pid()"))
        assert not probes.holds_lock(watcher, pid, oid)
        with holder.conn.transaction():
            holder.execute("SELECT count(*) FROM public.probed")
            assert probes.holds_lock(watcher, pid, oid)


def test_extension_views_are_read_in_their_schema(embedded_database: str) -> None:
    _probed(embedded_database)
    execute(
        embedded_database,
        sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(AWKWARD)),
        sql.SQL("CREATE EXTENSION pg_visibility SCHEMA {}").format(sql.Identifier(AWKWARD)),
        sql.SQL("CREATE EXTENSION pg_stat_statements SCHEMA {}").format(sql.Identifier(AWKWARD)),
        "UPDATE public.probed SET v = 2 WHERE id = 1",
    )
    with connect(embedded_database) as session:
        rel = probes.relation_size(session, TABLE)
        vm = probes.visibility_map(session, AWKWARD, rel.oid)
        rows = probes.fetch_in_schema(
            session, "statements", StatementTimes, AWKWARD, {"prefix": "UPDATE public.probed"}
        )
    assert isinstance(vm, VisibilityMap)
    assert not vm.settled(rel.pages)  # never vacuumed: nothing is all-visible yet
    assert vm.all_frozen <= vm.all_visible
    assert rows
    assert all(r.calls >= 1 and r.toplevel for r in rows)


class _Options(BaseModel):
    options: dict[str, str]

    @field_validator("options", mode="before")
    @classmethod
    def _pairs(cls, value: object) -> object:
        """A text[] of ``name=value`` reads as a mapping, as Relation.reloptions does."""
        return dict(str(o).partition("=")[::2] for o in value) if isinstance(value, list) else value


class _Plain(_Options):
    klass: int
    hidden: str


class _Odd(_Options):
    """Columns that cannot be a named tuple's fields: a keyword and a leading underscore."""

    klass: int = Field(alias="class")
    hidden: str = Field(alias="_hidden")


def test_rows_become_records_whatever_their_column_names(embedded_database: str) -> None:
    """Records come from named tuples of a row's columns, or from dicts where the names cannot
    be a tuple's fields; both ways give the same records, field validators included."""
    statement = "SELECT 7 AS {}, 'x' AS {}, '{{a=1,b==2}}'::text[] AS options"
    with connect(embedded_database) as session:
        odd = session.query(statement.format('"class"', '"_hidden"'), _Odd)
        plain = session.query(statement.format("klass", "hidden"), _Plain)
    want = (7, "x", {"a": "1", "b": "=2"})
    assert [(r.klass, r.hidden, r.options) for r in odd + plain] == [want, want]
