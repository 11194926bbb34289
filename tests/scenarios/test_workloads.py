"""Scenarios of one table's workload on the session's server: a queue, an insert-only log,
a TOAST-heavy table, updates of an indexed column, a table with autovacuum off."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.expect import (
    NO_FILLFACTOR,
    NO_IDLE_TIMEOUT,
    SERVER,
    Expect,
    Match,
    Top,
    Verdict,
    no_blame,
)
from scenarios.workloads import (
    advise_over,
    execute_all,
    load_table,
    pgbench_load,
    snapshots,
    update_script,
    write_script,
)
from vacuumlab.advise import advise
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.snapshot import Snapshot

QUEUE = "public.queue"
QUEUE_SCRIPT = """INSERT INTO queue (payload) VALUES (repeat('j', 40));
DELETE FROM queue WHERE id = (SELECT id FROM queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED);
"""
QUEUE_COST = Match(
    "the queue unthrottled", "thresholds", QUEUE, setting="autovacuum_vacuum_cost_delay"
)
CHURN_QUEUE = Expect(
    must=(Match("the queue seen as a queue", "thresholds", QUEUE, title="queue-like"),),
    may=(
        Match("the queue's timing", "timing", QUEUE),
        # True at the rate measured when an autoanalyze falls in the interval (the rate then
        # comes from the deletes, not from ANALYZE's estimate): the bloated queue's dead tuples
        # fill pages at over half the shared cost budget. Its fix, a budget of the queue's
        # own, agrees with the cost_delay 0 expected at the top.
        Match("the budget the queue needs", "workers", SERVER, title="pages/s of vacuum"),
    ),
    must_not=(NO_IDLE_TIMEOUT, no_blame(), NO_FILLFACTOR),
    top=(
        Top(QUEUE_COST, needed=True),
        Top(
            Match(
                "a cost limit of the queue's own (the budget finding is the server's)",
                "workers",
                SERVER,
                setting="autovacuum_vacuum_cost_limit",
            )
        ),
        Top(Match("its scale factor", relation=QUEUE, setting="autovacuum_vacuum_scale_factor")),
        Top(Match("a shorter naptime", "timing", QUEUE, setting="autovacuum_naptime")),
    ),
)


@pytest.mark.slow
def test_churn_queue(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """The churn study's shape under the server's defaults (naptime 60 s): each transaction
    inserts a job and deletes the oldest, over a backlog of 500. Must: the table found
    queue-like at warning, with cost_delay 0 of its own at the top. May: its timing (faster
    than the launcher's round). Must not: horizon blame, an idle-session timeout, fillfactor."""
    execute_all(
        embedded_database,
        "CREATE TABLE queue (id bigserial PRIMARY KEY, payload text NOT NULL)",
        "INSERT INTO queue (payload) SELECT repeat('j', 40) FROM generate_series(1, 500)",
        "VACUUM (ANALYZE) queue",
    )
    script = write_script(tmp_path, "queue", QUEUE_SCRIPT)
    with pgbench_load(sandbox, embedded_database, 35, script=script):
        advice, _ = advise_over(embedded_database, interval=25)
    verdict(advice, CHURN_QUEUE)


LOG_SCRIPT = "INSERT INTO log (msg) SELECT 'event ' || g FROM generate_series(1, 20) g;\n"
INSERT_ONLY_LOG = Expect(
    may=(Match("its insert-threshold timing", "timing", "public.log", at_most="info"),),
)


@pytest.mark.slow
def test_insert_only_log(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """An append-only log: rows are inserted, never updated or deleted. Must not: any finding
    at warning or above (no bloat, no horizon, no dead tuples to speak of). May: when its
    insert threshold brings a vacuum (timing, info)."""
    execute_all(
        embedded_database,
        "CREATE TABLE log (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), "
        "msg text NOT NULL)",
        "INSERT INTO log (msg) SELECT 'event ' || g FROM generate_series(1, 20000) g",
        "VACUUM (ANALYZE) log",
    )
    script = write_script(tmp_path, "log", LOG_SCRIPT)
    with pgbench_load(sandbox, embedded_database, 25, clients=2, script=script):
        advice, _ = advise_over(embedded_database, interval=20)
    verdict(advice, INSERT_ONLY_LOG)


#: About 8 kB of hex digits: TOASTed out of line (compression halves it, no more).
BODY = "(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 250))"
DOCS_SCRIPT = f"\\set id random(1, 400)\nUPDATE docs SET body = {BODY} WHERE id = :id;\n"
META_SCRIPT = "\\set id random(1, 400)\nUPDATE meta SET hits = hits + 1 WHERE id = :id;\n"


def toast_heavy() -> Expect:
    share = [
        Match(f"{t}'s TOAST share", "toast", f"public.{t}", title="TOAST holds", at_least="info")
        for t in ("docs", "meta")
    ]
    dead_chunks = Match(
        "docs' dead chunks on its TOAST relation",
        "toast",
        "public.docs (TOAST)",
        title="TOAST past its vacuum threshold",
    )
    return Expect(
        must=(*share, dead_chunks),
        # True: the replaced values' chunks are dead until autovacuum comes (naptime 60 s).
        may=(
            Match("docs' TOAST bloat", "bloat", "public.docs (TOAST)"),
            Match("docs' TOAST timing", "timing", "public.docs (TOAST)"),
        ),
        must_not=(
            # Updating hits copies the TOAST pointer: no chunk is replaced, none is dead.
            Match(
                "no dead chunks in meta's TOAST",
                "toast",
                "public.meta (TOAST)",
                title="TOAST past",
                at_least="info",
            ),
            NO_FILLFACTOR,
        ),
    )


@pytest.mark.slow
def test_toast_heavy(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """Two tables whose 8 kB text values live in TOAST: docs has its large value replaced 20
    times a second, meta only a small counter beside it, as fast as it goes. Must: both found
    TOAST-heavy (info); docs' dead chunks found on its TOAST relation, past that relation's
    own threshold (warning). Must not: dead chunks reported for meta's TOAST relation (its
    values are never replaced: an update copies the TOAST pointer)."""
    for table in ("docs", "meta"):
        execute_all(
            embedded_database,
            f"CREATE TABLE {table} (id int PRIMARY KEY, hits int NOT NULL, body text)",
            f"INSERT INTO {table} SELECT g, 0, {BODY} FROM generate_series(1, 400) g",
            f"VACUUM (ANALYZE) {table}",
        )
    docs = write_script(tmp_path, "docs", DOCS_SCRIPT)
    meta = write_script(tmp_path, "meta", META_SCRIPT)
    with (
        pgbench_load(sandbox, embedded_database, 60, clients=1, script=docs, rate=20),
        pgbench_load(sandbox, embedded_database, 60, clients=1, script=meta),
    ):
        # The situation is the one the test claims only if no autovacuum of docs' TOAST
        # relation fell inside the interval (the launcher visits a new database at a moment
        # of its own choosing): one that did, near the end, leaves too few dead chunks to be
        # past the threshold. The next interval then has a whole naptime clear of it.
        for _attempt in range(2):
            first, later = snapshots(embedded_database, 25)
            if toast_vacuums(later, "docs") == toast_vacuums(first, "docs"):
                break
    assert toast_vacuums(later, "docs") == toast_vacuums(first, "docs")
    verdict(advise(first, later), toast_heavy())


def toast_vacuums(snapshot: Snapshot, table: str) -> int:
    """How many times autovacuum has vacuumed the TOAST relation of ``public.table``."""
    [found] = [
        t for t in snapshot.tables if t.heap.name == table and t.heap.schema_name == "public"
    ]
    assert found.toast is not None
    assert found.toast.autovacuum_count is not None
    return found.toast.autovacuum_count


INDEXED_SCRIPT = "\\set id random(1, 4000)\nUPDATE items SET status = status + 1 WHERE id = :id;\n"
INDEXED_COLUMN = Expect(
    must=(
        Match(
            "an indexed column changes",
            "hot",
            "public.items",
            title="indexed column",
            at_least="info",
        ),
    ),
    must_not=(NO_FILLFACTOR, NO_IDLE_TIMEOUT),
)


@pytest.mark.slow
def test_updates_on_an_indexed_column(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """Every update changes an indexed column, so none can be HOT; many new versions still
    go to another page. Must: the HOT question says an indexed column changes. Must not: a
    fillfactor recommendation (more free space does not make these updates HOT)."""
    execute_all(
        embedded_database,
        "CREATE TABLE items (id int PRIMARY KEY, status int NOT NULL, pad text NOT NULL)",
        "INSERT INTO items SELECT g, 0, repeat('p', 80) FROM generate_series(1, 4000) g",
        "CREATE INDEX ON items (status)",
        "VACUUM (ANALYZE) items",
    )
    script = write_script(tmp_path, "items", INDEXED_SCRIPT)
    with pgbench_load(sandbox, embedded_database, 30, script=script):
        advice, _ = advise_over(embedded_database, interval=25)
    verdict(advice, INDEXED_COLUMN)


def table_off() -> Expect:
    enable = Match("autovacuum back on", "thresholds", "public.off_t", setting="autovacuum_enabled")
    return Expect(
        must=(
            Match("off_t flagged", "thresholds", "public.off_t", title="autovacuum is off"),
            enable,
        ),
        may=(
            Match("off_t's timing", "timing", "public.off_t"),
            Match("off_t's bloat", "bloat", "public.off_t"),
        ),
        must_not=(
            Match("on_t not flagged", relation="public.on_t"),
            Match("no server-wide switch", relation=SERVER, title="autovacuum is off"),
        ),
        top=(Top(enable, needed=True),),
    )


@pytest.mark.slow
@pytest.mark.usefixtures("short_naptime")
def test_autovacuum_off_on_one_table(
    embedded_database: str, sandbox: Sandbox, tmp_path: Path, verdict: Verdict
) -> None:
    """Two tables churn alike (updates of an indexed column: no HOT pruning makes their
    dead tuples go away); one has autovacuum_enabled = off. Must: that table flagged,
    autovacuum_enabled = on recommended at the top. Must not: the other table flagged."""
    off = "autovacuum_enabled = off"
    load_table(embedded_database, "off_t", 2000, options=off, index_n=True)
    load_table(embedded_database, "on_t", 2000, index_n=True)
    scripts = [write_script(tmp_path, t, update_script(t, 2000)) for t in ("off_t", "on_t")]
    with pgbench_load(sandbox, embedded_database, 30, clients=2, scripts=scripts):
        advice, _ = advise_over(embedded_database, interval=20)
    verdict(advice, table_off())
