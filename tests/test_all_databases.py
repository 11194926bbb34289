"""``--all-databases`` of advise and snapshot, on the embedded PostgreSQL 18: three databases of
the shared server (one busy, one quiet, one whose CONNECT is revoked from PUBLIC), a
pg_monitor role, each database visited on a session of its own."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from helpers.cli import assert_one_line_error, run_cli
from helpers.db import execute, wait_for_counts
from vacuumlab.advise import advise
from vacuumlab.advise.wraparound import is_cluster
from vacuumlab.lab.all_databases import collect_all_advice
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Advice, Finding
from vacuumlab.records.all_databases import (
    AllDatabasesAdvice,
    AllDatabasesSnapshot,
    load_snapshots,
)
from vacuumlab.records.snapshot import Database, Snapshot

#: The busy database's table: 2,000 of 5,000 rows dead, far past its threshold of
#: 50 + 0.2 × 3,000, and autovacuum off for it, so nothing clears them before the advice.
BUSY = (
    "CREATE TABLE forgotten (id int PRIMARY KEY) WITH (autovacuum_enabled = off)",
    "INSERT INTO forgotten SELECT generate_series(1, 5000)",
    "DELETE FROM forgotten WHERE id <= 2000",
)
#: The age given by hand to every database in a saved snapshot: past 75 % of the stock
#: autovacuum_freeze_max_age (200 million), where the cluster's wraparound finding starts.
AGED = 160_000_000


@dataclass(frozen=True)
class Server:
    admin: str
    busy: str
    quiet: str
    locked: str
    role: str

    def dsn(self, database: str, user: str | None = None) -> str:
        if user is None:
            return make_conninfo(self.admin, dbname=database)
        return make_conninfo(self.admin, dbname=database, user=user)

    @property
    def mine(self) -> tuple[str, str, str]:
        return self.busy, self.quiet, self.locked


@pytest.fixture(scope="module")
def server(sandbox: Sandbox) -> Iterator[Server]:
    tag = uuid.uuid4().hex[:8]
    found = Server(
        admin=sandbox.dsn,
        busy=f"vl_alldb_{tag}_busy",
        quiet=f"vl_alldb_{tag}_quiet",
        locked=f"vl_alldb_{tag}_locked",
        role=f"vl_alldb_{tag}_monitor",
    )
    for name in found.mine:
        execute(sandbox.dsn, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        execute(
            sandbox.dsn,
            sql.SQL("CREATE ROLE {} LOGIN IN ROLE pg_monitor").format(sql.Identifier(found.role)),
            sql.SQL("REVOKE CONNECT ON DATABASE {} FROM PUBLIC").format(
                sql.Identifier(found.locked)
            ),
        )
        # A few rows each: a table nothing counts toward a threshold is left out of the
        # advice's status table.
        for name, table in ((found.quiet, "quiet_only"), (found.locked, "locked_only")):
            execute(
                found.dsn(name),
                f"CREATE TABLE {table} (id int)",
                f"INSERT INTO {table} SELECT generate_series(1, 10)",
            )
        execute(found.dsn(found.busy), *BUSY)
        wait_for_counts(found.dsn(found.busy), "forgotten", "n_tup_del", 2000)
        execute(found.dsn(found.busy), "ANALYZE forgotten")
        yield found
    finally:
        for name in found.mine:
            execute(
                sandbox.dsn,
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)),
            )
        execute(sandbox.dsn, sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(found.role)))


@pytest.fixture(scope="module")
def saved(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``snapshot --all-databases --save``, by the superuser: every database read."""
    path = tmp_path_factory.mktemp("alldb") / "server.json"
    result = run_cli("snapshot", server.dsn(server.quiet), "--all-databases", "--save", str(path))
    assert result.returncode == 0, result.stderr
    return path


def by_database(advice: AllDatabasesAdvice) -> dict[str, Advice]:
    return {one.server.database: one for one in advice.databases}


def about(advice: Advice, relation: str) -> list[Finding]:
    return [f for f in advice.findings if f.relation == relation]


def per_table(advice: AllDatabasesAdvice, names: tuple[str, ...]) -> dict[str, set[tuple]]:
    """Each of ``names``' findings about a table: what they say, not the numbers that move."""
    found = by_database(advice)
    return {
        name: {(f.question, f.relation, f.severity) for f in found[name].findings if f.relation}
        for name in names
    }


def text_sections(text: str) -> dict[str, str]:
    """The table view's part under each database's heading (a rule: ``═══ database x ═══``)."""
    parts = re.split(r"^═+ database (\S+) ═+$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_findings_come_grouped_under_each_database(server: Server) -> None:
    advice = collect_all_advice(server.dsn(server.quiet))
    found = by_database(advice)
    assert set(server.mine) <= set(found)
    assert advice.notes == []  # the superuser reads every database
    # Each database's advice is its own: its tables, its findings, its session's database.
    assert [t.relation for t in found[server.quiet].tables] == ["public.quiet_only"]
    assert [t.relation for t in found[server.locked].tables] == ["public.locked_only"]
    assert [t.relation for t in found[server.busy].tables] == ["public.forgotten"]
    [off] = [f for f in about(found[server.busy], "public.forgotten") if f.question == "thresholds"]
    assert off.severity == "critical"
    assert "autovacuum is off for it" in off.title
    assert off.evidence["n_dead_tup"] == 2000
    assert off.recommendations[0].sql == (
        'ALTER TABLE "public"."forgotten" SET ("autovacuum_enabled" = \'on\');'
    )
    assert all(not about(found[name], "public.forgotten") for name in found if name != server.busy)
    # The table view: a heading per database, the busy table's finding under its own.
    result = run_cli("advise", server.dsn(server.quiet), "--all-databases", "--limit", "5")
    assert result.returncode == 0, result.stderr
    sections = text_sections(result.stdout)
    assert set(server.mine) <= set(sections)
    assert "autovacuum is off for it" in sections[server.busy]
    assert "forgotten" not in "".join(v for k, v in sections.items() if k != server.busy)
    assert "quiet_only" in sections[server.quiet]
    # Progress on stderr, database by database.
    assert re.search(rf"· database {server.busy}: \d+\.\d+ s", result.stderr), result.stderr


def test_a_database_the_role_may_not_connect_to_is_a_note(server: Server) -> None:
    result = run_cli(
        "advise", server.dsn(server.busy, server.role), "--all-databases", "--format", "json"
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    advice = AllDatabasesAdvice.model_validate_json(result.stdout)
    assert advice.kind == "vacuumlab.all_databases_advice"
    found = by_database(advice)
    assert server.locked not in found
    assert {server.busy, server.quiet} <= set(found)
    assert all(one.server.user == server.role for one in advice.databases)
    [note] = [n for n in advice.notes if server.locked in n.reason]
    assert note.probe == "connect"
    assert note.reason.startswith(f"cannot connect to database {server.locked}: ")
    assert "permission denied for database" in note.reason
    assert note.fix == f'GRANT CONNECT ON DATABASE "{server.locked}" TO "{server.role}";'
    assert [n for n in advice.notes if server.busy in n.reason or server.quiet in n.reason] == []
    busy = about(found[server.busy], "public.forgotten")
    assert any("autovacuum is off" in f.title for f in busy)
    # The note is in the table view too, with its fix.
    text = run_cli("advise", server.dsn(server.busy, server.role), "--all-databases")
    assert text.returncode == 0, text.stderr
    assert "Databases not read" in text.stdout
    assert f'GRANT CONNECT ON DATABASE "{server.locked}"' in text.stdout
    assert server.locked not in text_sections(text.stdout)


def test_a_saved_snapshot_gives_the_same_findings(server: Server, saved: Path) -> None:
    raw = json.loads(saved.read_text())
    assert raw["kind"] == "vacuumlab.all_databases_snapshot"
    assert raw["schema_version"] == 1
    names = [snap["server"]["database"] for snap in raw["snapshots"]]
    assert names == sorted(names)
    assert set(server.mine) <= set(names)
    result = run_cli("advise", "--input", str(saved), "--format", "json")
    assert result.returncode == 0, result.stderr
    from_file = AllDatabasesAdvice.model_validate_json(result.stdout)
    live = collect_all_advice(server.dsn(server.quiet))
    assert per_table(from_file, server.mine) == per_table(live, server.mine)
    assert per_table(from_file, server.mine)[server.busy]  # something to compare
    # The same file re-renders as a snapshot, no server needed.
    again = run_cli("snapshot", "--input", str(saved), "--limit", "3")
    assert again.returncode == 0, again.stderr
    assert set(server.mine) <= set(text_sections(again.stdout))


def test_the_cluster_wraparound_finding_appears_once(
    server: Server, saved: Path, tmp_path: Path
) -> None:
    """Every database's snapshot carries every database's ages: aged by hand (as a server
    160 million transactions old would show them), each database alone says the same
    finding, and all together say it once, for the server; a table's own stays its own."""
    snaps = load_snapshots(saved)
    assert isinstance(snaps, AllDatabasesSnapshot)
    aged = [_aged(snap, forgotten=snap.server.database == server.busy) for snap in snaps.snapshots]
    for snap in aged:  # without the rule, each database's advice has it
        assert len([f for f in advise(snap).findings if is_cluster(f)]) == 1
    path = tmp_path / "aged.json"
    path.write_text(snaps.model_copy(update={"snapshots": aged}).dump_json())
    result = run_cli("advise", "--input", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    advice = AllDatabasesAdvice.model_validate_json(result.stdout)
    [cluster] = [f for f in advice.all_findings() if f.question == "wraparound" and not f.relation]
    assert cluster in advice.findings
    assert cluster.evidence["age"] == AGED
    assert cluster.evidence["databases"] == len(aged[0].databases)
    found = by_database(advice)
    [own] = [f for f in about(found[server.busy], "public.forgotten") if f.question == "wraparound"]
    assert own.evidence["age"] == AGED + 1
    assert [f for f in advice.findings if f.relation] == []
    text = run_cli("advise", "--input", str(path))
    assert text.returncode == 0, text.stderr
    assert text.stdout.count(f"transaction id age {AGED:,}") == 1


def _aged(snap: Snapshot, *, forgotten: bool) -> Snapshot:
    """A saved snapshot whose databases are all ``AGED`` old; with ``forgotten``, that table
    one transaction older."""
    databases = [
        Database(name=db.name, frozenxid_age=AGED, minmxid_age=0, allow_connections=True)
        for db in snap.databases
    ]
    tables = [
        t.model_copy(update={"heap": t.heap.model_copy(update={"frozenxid_age": AGED + 1})})
        if forgotten and t.heap.name == "forgotten"
        else t
        for t in snap.tables
    ]
    return snap.model_copy(update={"databases": databases, "tables": tables})


def test_bad_input_is_one_line(server: Server, saved: Path, tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    single = run_cli("snapshot", server.dsn(server.quiet), "--format", "json", "-o", str(one))
    assert single.returncode == 0, single.stderr
    assert_one_line_error(
        run_cli("advise", "--all-databases", "--input", str(one)),
        "is a snapshot of one database: --all-databases with --input takes a file saved by",
    )
    assert_one_line_error(
        run_cli("advise", "--input", str(one), "--input", str(saved)),
        "--input: give snapshots of one kind",
    )
    assert_one_line_error(
        run_cli("advise", server.dsn(server.quiet), "--all-databases", "--format", "html"),
        "--all-databases writes table, md or json",
    )


def test_interrupted_it_writes_nothing(server: Server, tmp_path: Path) -> None:
    """Ctrl-C while waiting for the second round: exit 130, no file, no part of one."""
    output = tmp_path / "advice.json"
    child = subprocess.Popen(
        [sys.executable, "-m", "vacuumlab", "advise", server.dsn(server.quiet),
         "--all-databases", "--interval", "60s", "--format", "json", "-o", str(output)],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stderr is not None
    deadline = time.monotonic() + 60
    for line in child.stderr:
        if "waiting" in line or time.monotonic() > deadline:
            break
    child.send_signal(signal.SIGINT)
    _, rest = child.communicate(timeout=30)
    assert child.returncode == 130, rest
    assert list(tmp_path.iterdir()) == []
