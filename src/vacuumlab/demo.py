"""The demo: a few high-churn tables on the sandbox, then a snapshot of where vacuum stands.

It creates, in schema ``vacuumlab_demo``: a queue (``jobs``: insert one, delete the oldest),
a session table updated in place (``sessions``, fillfactor 80), a table with wide values
stored in TOAST (``documents``) and a counter table with autovacuum turned off. pgbench churns
them with naptime 1s so autovacuum visibly runs; then an idle-in-transaction session pins the
xmin horizon while the snapshot is taken, so that part of the snapshot has something to show.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from vacuumlab.collect.snapshot import collect
from vacuumlab.pg import pgbench
from vacuumlab.pg.connect import Timeouts, connect
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.snapshot import Snapshot

SETUP = """
DROP SCHEMA IF EXISTS vacuumlab_demo CASCADE;
CREATE SCHEMA vacuumlab_demo;
CREATE TABLE vacuumlab_demo.jobs (id bigserial PRIMARY KEY, payload text, queued_at timestamptz
    DEFAULT now());
CREATE TABLE vacuumlab_demo.sessions (id int PRIMARY KEY, seen_at timestamptz, hits int DEFAULT 0)
    WITH (fillfactor = 80);
CREATE TABLE vacuumlab_demo.documents (id int PRIMARY KEY, body text, version int DEFAULT 0)
    WITH (toast.autovacuum_vacuum_scale_factor = 0.05);
CREATE TABLE vacuumlab_demo.counters (name text PRIMARY KEY, n bigint DEFAULT 0)
    WITH (autovacuum_enabled = false);
INSERT INTO vacuumlab_demo.jobs (payload) SELECT md5(i::text) FROM generate_series(1, 20000) i;
INSERT INTO vacuumlab_demo.sessions (id, seen_at) SELECT i, now() FROM generate_series(1, 5000) i;
-- Incompressible 8 kB values: md5 chains do not compress, so they go out of line to TOAST.
INSERT INTO vacuumlab_demo.documents (id, body)
    SELECT i, (SELECT string_agg(md5(i::text || j::text), '') FROM generate_series(1, 256) j)
      FROM generate_series(1, 500) i;
INSERT INTO vacuumlab_demo.counters (name) SELECT 'c' || i FROM generate_series(1, 100) i;
ANALYZE;
"""
SCRIPT = """\\set sid random(1, 5000)
\\set doc random(1, 500)
\\set c random(1, 100)
BEGIN;
INSERT INTO vacuumlab_demo.jobs (payload) VALUES (md5(:sid::text));
DELETE FROM vacuumlab_demo.jobs WHERE id = (SELECT id FROM vacuumlab_demo.jobs ORDER BY id LIMIT 1
    FOR UPDATE SKIP LOCKED);
UPDATE vacuumlab_demo.sessions SET seen_at = now(), hits = hits + 1 WHERE id = :sid;
UPDATE vacuumlab_demo.documents SET body = md5(body) || substr(body, 33), version = version + 1
    WHERE id = :doc;
UPDATE vacuumlab_demo.counters SET n = n + 1 WHERE name = 'c' || :c;
END;
"""
DEMO_SETTINGS: dict[str, str | None] = {"autovacuum_naptime": "1s"}
#: Loading the demo tables takes longer than the default statement limit allows.
SETUP_TIMEOUTS = Timeouts(statement_ms=0, lock_ms=60_000)


def run(
    sandbox: Sandbox, *, seconds: int = 20, progress: Callable[[str], None] = print
) -> Snapshot:
    """Build the demo tables, churn them for ``seconds``, and snapshot the result."""
    progress("creating the demo tables")
    with connect(sandbox.dsn, read_only=False, timeouts=SETUP_TIMEOUTS) as session:
        session.execute(SETUP)
    sandbox.configure(DEMO_SETTINGS)
    try:
        progress(f"churning them with pgbench for {seconds} s (autovacuum_naptime = 1s)")
        _churn(sandbox, seconds)
        progress("taking a snapshot while an idle transaction holds the xmin horizon")
        return _snapshot_with_holder(sandbox)
    finally:
        sandbox.configure(dict.fromkeys(DEMO_SETTINGS))


def _churn(sandbox: Sandbox, seconds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="vacuumlab-demo-") as tmp:
        script = Path(tmp) / "churn.sql"
        script.write_text(SCRIPT, encoding="utf-8")
        load = pgbench.Load(script=script, clients=4, jobs=2, seconds=seconds)
        pgbench.run_subprocess(pgbench.command(sandbox.bin.exe("pgbench"), load, sandbox.dsn))


def _snapshot_with_holder(sandbox: Sandbox) -> Snapshot:
    with connect(sandbox.dsn, application_name="vacuumlab-demo-holder") as holder:
        # READ COMMITTED drops its snapshot after each statement; REPEATABLE READ keeps it
        # until the transaction ends, pinning the horizon while the session sits idle in it.
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM vacuumlab_demo.jobs")
        with connect(sandbox.dsn) as session:
            return collect(session)
