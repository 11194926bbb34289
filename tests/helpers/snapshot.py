"""Tables for the snapshot's tests."""

from __future__ import annotations

#: Tables whose sizes the snapshot must give exactly as PostgreSQL's own functions do, each
#: built so that one shortcut taken wrongly would show: pg_class.relpages says 0 pages for
#: the heap and 1 per index of every table here that no vacuum or analyze has seen.
SIZED = (
    # Never written: its TOAST relation and indexes are as CREATE TABLE made them.
    "CREATE TABLE fresh (id int PRIMARY KEY, body text UNIQUE)",
    # Written but never vacuumed nor analysed (autovacuum off): relpages still says empty.
    "CREATE TABLE written (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off)",
    """INSERT INTO written SELECT i, (SELECT string_agg(md5(i::text || j::text), '')
        FROM generate_series(1, 128) j) FROM generate_series(1, 300) i""",
    # Written then emptied, in a transaction that rolled back: pages left behind.
    "CREATE TABLE rolled_back (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off)",
    """DO $$ BEGIN INSERT INTO rolled_back SELECT i, repeat('x', 5000)
        FROM generate_series(1, 500) i; RAISE EXCEPTION 'undo'; EXCEPTION WHEN OTHERS THEN
        NULL; END $$""",
    # Emptied by VACUUM: the heap truncated to nothing, its index keeps its pages.
    "CREATE TABLE emptied (id int PRIMARY KEY) WITH (autovacuum_enabled = off)",
    "INSERT INTO emptied SELECT generate_series(1, 5000)",
    "DELETE FROM emptied",
    "VACUUM emptied",
    # Truncated: new, empty files for the heap, its TOAST relation and its index.
    "CREATE TABLE truncated (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off)",
    "INSERT INTO truncated SELECT i, repeat(md5(i::text), 200) FROM generate_series(1, 100) i",
    "TRUNCATE truncated",
    # Unlogged: its main fork where a logged table's is, and an init fork beside it.
    "CREATE UNLOGGED TABLE unlogged (id int PRIMARY KEY, body text)",
    "INSERT INTO unlogged SELECT i, repeat(md5(i::text), 100) FROM generate_series(1, 300) i",
    # Rewritten: a new relfilenode for the heap, its TOAST relation and its index.
    "CREATE TABLE rewritten (id int PRIMARY KEY, body text) WITH (autovacuum_enabled = off)",
    "INSERT INTO rewritten SELECT i, repeat(md5(i::text), 100) FROM generate_series(1, 300) i",
    "DELETE FROM rewritten WHERE id % 2 = 0",
    "VACUUM FULL rewritten",
)
