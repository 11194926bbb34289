"""``advise --all-databases`` with two snapshots of each database judges the worker slots for
the whole server: every database's relations simulated together (simulate_cluster()).

Three databases built by hand: ``busy``, whose twelve small tables gather a vacuum threshold of
dead tuples every 100 s and are vacuumed in a second, and two holders whose large tables (a
quarter dead, a cost limit of 1 of their own) keep a worker slot for most of an hour each:
``hold_a`` two of them, ``hold_b`` one, so that together they take all three slots. Once end
to end, on snapshots of the embedded PostgreSQL 18 scaled by hand."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from helpers.advise import changed, relation, snapshot
from helpers.cli import run_cli
from helpers.db import execute
from vacuumlab.advise import advise, cluster_workers
from vacuumlab.advise.all_databases import advise_all
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Advice, Finding
from vacuumlab.records.all_databases import (
    AllDatabasesAdvice,
    AllDatabasesSnapshot,
    load_snapshots,
)
from vacuumlab.records.snapshot import Database, Relation, Snapshot, Table

INTERVAL = 60.0
BLOCK = 8192
#: The databases of the launcher's round (pg_database): the three, and postgres, not read.
ROUND = ("busy", "hold_a", "hold_b", "postgres")
#: A holder's table: 400,000 pages, a quarter of its rows dead.
LARGE_PAGES = 400_000
LARGE_ROWS = 100 * LARGE_PAGES

Pair = tuple[Snapshot, Snapshot]


def queue(oid: int, name: str) -> tuple[Table, Table]:
    """10,000 rows on 100 pages, 20 dead tuples a second: past its threshold of
    50 + 0.2 × 10,000 every 100 s."""
    rel = relation(oid, name, reltuples=10_000.0, relpages=100, n_live_tup=10_000,
                   n_tup_ins=10_000)  # fmt: skip
    return Table(heap=rel, toast=None), Table(heap=changed(rel, n_dead_tup=20 * 60), toast=None)


def large(oid: int, name: str, *, idle: bool) -> Table:
    """Past its threshold from the start (idle: nothing dead), and no rate: one long vacuum."""
    rel = relation(
        oid, name, reltuples=float(LARGE_ROWS), relpages=LARGE_PAGES, n_live_tup=LARGE_ROWS,
        n_tup_ins=LARGE_ROWS, n_dead_tup=0 if idle else LARGE_ROWS // 4,
        reloptions={"autovacuum_vacuum_cost_limit": "1"},
    )  # fmt: skip
    return Table(heap=rel, toast=None)


def pair(name: str, before: list[Table], after: list[Table], **given: object) -> Pair:
    databases = [Database(name=n, frozenxid_age=1000, minmxid_age=0, allow_connections=True)
                 for n in ROUND]  # fmt: skip

    def taken(tables: list[Table], seconds: float) -> Snapshot:
        snap = snapshot(*tables, seconds=seconds, **given)  # type: ignore[arg-type]
        server = snap.server.model_copy(update={"database": name})
        return snap.model_copy(update={"server": server, "databases": databases})

    return taken(before, 0.0), taken(after, INTERVAL)


def server(*, idle: bool = False, own_long: int = 0, **given: object) -> dict[str, Pair]:
    """The three databases; ``own_long``: that many large tables in busy itself."""
    queues = [queue(1000 + i, f"q{i}") for i in range(12)]
    mine = [large(3000 + i, f"own{i}", idle=False) for i in range(own_long)]
    hold_a = [large(2000 + i, f"big{i}", idle=idle) for i in range(2)]
    hold_b = [large(2000, "big0", idle=idle)]
    return {
        "busy": pair("busy", [b for b, _ in queues] + mine, [a for _, a in queues] + mine, **given),
        "hold_a": pair("hold_a", hold_a, hold_a, **given),
        "hold_b": pair("hold_b", hold_b, hold_b, **given),
    }


def advise_server(pairs: dict[str, Pair]) -> AllDatabasesAdvice:
    def saved(at: int) -> AllDatabasesSnapshot:
        snaps = [p[at] for p in pairs.values()]
        return AllDatabasesSnapshot(vacuumlab_version="0", taken_at=snaps[0].taken_at,
                                    snapshots=snaps)  # fmt: skip

    return advise_all(saved(0), saved(1))


def by_database(advice: AllDatabasesAdvice) -> dict[str, Advice]:
    return {one.server.database: one for one in advice.databases}


def slots_findings(advice: AllDatabasesAdvice) -> list[Finding]:
    return [f for f in advice.findings if f.question == "workers" and "database" in f.evidence]


def own_workers(advice: Advice) -> Finding:
    [found] = [f for f in advice.findings if "autovacuum workers busy" in f.title]
    return found


def waits(text: str | None) -> tuple[str, str]:
    """The mean waits a recommendation's simulation gives, after and before."""
    found = re.search(r"waiting (.+) instead of (.+) past its threshold", text or "")
    assert found is not None, text
    return found[1], found[2]


def test_the_busy_databases_relations_wait_for_the_slots_the_holders_hold() -> None:
    pairs = server()
    advice = advise_server(pairs)
    [slots] = slots_findings(advice)
    assert (slots.relation, slots.severity) == (None, "warning")
    ev = slots.evidence
    assert (ev["database"], ev["relations"], ev["worker_slots"]) == ("busy", 12, 3)
    # hold_a's two workers held two slots, hold_b's one the third.
    assert (ev["holders"], ev["held_share"]) == ("hold_a, hold_b", "hold_a 67%, hold_b 33%")
    assert isinstance(ev["max_wait_s"], float)
    assert isinstance(ev["max_wait_alone_s"], float)
    assert ev["max_wait_s"] > 40 * 60  # behind vacuums of most of an hour
    assert ev["max_wait_alone_s"] < ev["naptime_s"]  # alone: a worker at each round
    assert slots.title.startswith("12 relations of database busy wait up to 4")
    assert "every slot is busy with the workers of databases hold_a and hold_b" in slots.title
    assert "of waits in 6 h" in slots.title
    assert "Longest waits: public.q" in slots.detail
    assert "held hold_a 67% and hold_b 33% of the slot time" in slots.detail
    assert slots.detail.endswith("Not read, so taken to have nothing to vacuum: postgres.")
    # The workers question's recommendation, for the server, simulated over every database.
    [rec] = slots.recommendations
    assert rec.sql == "ALTER SYSTEM SET \"autovacuum_max_workers\" = '6'; SELECT pg_reload_conf();"
    assert rec.simulated is not None
    assert " in busy: " in rec.simulated
    assert waits(rec.simulated) == ("18 s", "35 s")
    srv = cluster_workers.server(pairs)
    assert srv is not None
    more = srv.run(launcher=replace(srv.launcher, workers=6))
    assert max(w.max_wait for w in more.waits() if w.database == "busy") < ev["naptime_s"]
    # Each database's own advice stays as it is; busy's workers finding, which simulated it
    # alone and saw no relation wait for a slot, says where to look.
    found = by_database(advice)
    alone = advise(*pairs["busy"])
    mine = own_workers(found["busy"])
    assert mine.evidence["simulated_waiting_for_a_slot"] == 0
    assert mine.detail == own_workers(alone).detail + (
        " Simulated with the server's other databases too, 12 of its relations wait for worker "
        "slots that the workers of databases hold_a and hold_b hold: see the findings for the "
        "whole server."
    )
    assert [f for f in found["busy"].findings if f is not mine] == [
        f for f in alone.findings if f.title != mine.title
    ]
    for name in ("hold_a", "hold_b"):
        assert found[name] == advise(*pairs[name])
    assert all(slots not in one.findings for one in advice.databases)  # the server's only


def test_with_the_holders_idle_no_database_waits_on_another() -> None:
    pairs = server(idle=True)
    advice = advise_server(pairs)
    assert slots_findings(advice) == []
    for name, advised in by_database(advice).items():  # as advised one by one
        alone = advise(*pairs[name])
        kept = [f for f in alone.findings if f not in advice.findings]  # said once: the server's
        assert advised == alone.model_copy(update={"findings": kept})


def test_relations_that_wait_on_their_own_databases_workers_are_its_own_advice() -> None:
    """busy's own three long vacuums take every slot: its queues wait as long as behind the
    holders, but for its own workers, which its own advice simulates already."""
    pairs = server(idle=True, own_long=3)
    srv = cluster_workers.server(pairs)
    assert srv is not None
    waited = [w for w in srv.run().waits() if w.label.startswith("public.q")]
    assert min(w.max_wait for w in waited) > 40 * 60
    assert {name for w in waited for name in w.held_by} == {"busy"}
    assert slots_findings(advise_server(pairs)) == []


@pytest.mark.parametrize(
    ("given", "restart"), [({}, False), ({"version": 170000}, True)], ids=["18", "17"]
)
def test_more_workers_follow_the_versions_rules(given: dict[str, object], restart: bool) -> None:
    """autovacuum_max_workers takes a reload from 18 (within autovacuum_worker_slots), a
    restart before."""
    [slots] = slots_findings(advise_server(server(**given)))
    [rec] = slots.recommendations
    assert (rec.setting, rec.value) == ("autovacuum_max_workers", "6")
    assert rec.sql.endswith("-- then restart the server" if restart else "pg_reload_conf();")


def test_with_every_worker_slot_in_use_the_holders_get_cost_limits_of_their_own() -> None:
    """autovacuum_worker_slots = 3 on 18: no more workers without a restart, so each holder's
    long vacuums get a cost limit that ends them within a naptime, run in their database."""
    [slots] = slots_findings(advise_server(server(values={"autovacuum_worker_slots": "3"})))
    assert "autovacuum_max_workers already uses all 3 autovacuum_worker_slots" in slots.detail
    assert [r.sql for r in slots.recommendations] == [
        f'\\connect "{db}"\nALTER TABLE "public"."{table}" SET '
        "(\"autovacuum_vacuum_cost_limit\" = '100');"
        for db, table in (("hold_a", "big0"), ("hold_a", "big1"), ("hold_b", "big0"))
    ]
    first = slots.recommendations[0]
    assert first.reason.startswith("in database hold_a, a vacuum of public.big0 sleeps about")
    assert waits(first.simulated) == ("18 s", "35 s")  # all three made, as many as more workers


# -- end to end ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Real:
    names: dict[str, str]  # busy, hold_a, hold_b -> the database's name on the server
    saved: Path


@pytest.fixture(scope="module")
def real(sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Real]:
    """Three databases of the embedded server with small tables of the shapes above, and one
    ``snapshot --all-databases`` of them."""
    tag = uuid.uuid4().hex[:8]
    names = {role: f"vl_cw_{tag}_{role}" for role in ("busy", "hold_a", "hold_b")}
    tables = {
        "busy": [f"CREATE TABLE q{i} (id int)" for i in range(12)],
        "hold_a": [f"CREATE TABLE big{i} (id int) WITH (autovacuum_vacuum_cost_limit = 1)"
                   for i in range(2)],
        "hold_b": ["CREATE TABLE big0 (id int) WITH (autovacuum_vacuum_cost_limit = 1)"],
    }  # fmt: skip
    try:
        for role, name in names.items():
            execute(sandbox.dsn, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            execute(make_conninfo(sandbox.dsn, dbname=name), *tables[role])
        path = tmp_path_factory.mktemp("clusterw") / "server.json"
        dsn = make_conninfo(sandbox.dsn, dbname=names["busy"])
        result = run_cli("snapshot", dsn, "--all-databases", "--save", str(path))
        assert result.returncode == 0, result.stderr
        yield Real(names, path)
    finally:
        for name in names.values():
            execute(
                sandbox.dsn,
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)),
            )


def scaled(rel: Relation, pages: int, rows: int, dead: int) -> Relation:
    return rel.model_copy(update={
        "relpages": pages, "reltuples": float(rows), "heap_bytes": pages * BLOCK,
        "n_live_tup": rows, "n_dead_tup": dead,
    })  # fmt: skip


def adjusted(snap: Snapshot, role: str | None, *, later: bool, idle: bool) -> Snapshot:
    """The real snapshot as the shapes above would show it, a minute later with ``later``."""
    tables = []
    for table in snap.tables:
        heap = table.heap
        if role == "busy":
            heap = scaled(heap, 100, 10_000, 20 * 60 if later else 0)
        elif role is not None and not idle:
            heap = scaled(heap, LARGE_PAGES, LARGE_ROWS, LARGE_ROWS // 4)
        tables.append(table.model_copy(update={"heap": heap}))
    taken = snap.taken_at + timedelta(seconds=INTERVAL if later else 0.0)
    return snap.model_copy(update={"tables": tables, "taken_at": taken})


def saved_pair(real: Real, folder: Path, *, idle: bool) -> list[str]:
    """Two saved all-databases snapshots a minute apart, from the one taken of the server."""
    snaps = load_snapshots(real.saved)
    assert isinstance(snaps, AllDatabasesSnapshot)
    role = {name: role for role, name in real.names.items()}
    paths = []
    for later in (False, True):
        each = [adjusted(s, role.get(s.server.database), later=later, idle=idle)
                for s in snaps.snapshots]  # fmt: skip
        path = folder / f"{'later' if later else 'first'}.json"
        path.write_text(snaps.model_copy(update={"snapshots": each}).dump_json())
        paths += ["--input", str(path)]
    return paths


def test_saved_snapshots_of_a_real_server_show_the_holders(real: Real, tmp_path: Path) -> None:
    busy, hold_a, hold_b = real.names["busy"], real.names["hold_a"], real.names["hold_b"]
    inputs = saved_pair(real, tmp_path, idle=False)
    result = run_cli("advise", *inputs, "--format", "json")
    assert result.returncode == 0, result.stderr
    advice = AllDatabasesAdvice.model_validate_json(result.stdout)
    [slots] = slots_findings(advice)
    assert (slots.evidence["database"], slots.evidence["relations"]) == (busy, 12)
    assert slots.evidence["holders"] == f"{hold_a}, {hold_b}"
    assert f"12 relations of database {busy} wait up to" in slots.title
    [rec] = slots.recommendations
    assert rec.setting == "autovacuum_max_workers"
    assert rec.simulated
    # The table view shows it once, with the server's findings, and its change.
    text = run_cli("advise", *inputs, "--limit", "3")
    assert text.returncode == 0, text.stderr
    head = " ".join(
        re.split(rf"^═+ database {busy} ═+$", text.stdout, flags=re.MULTILINE)[0].split()
    )
    assert "The whole server (every database)" in head
    assert f"12 relations of database {busy} wait up to" in head
    assert "ALTER SYSTEM SET \"autovacuum_max_workers\" = '6'" in head
    assert "predicted: simulated over 6 h, public.q" in head
    # The holders idle, the same server shows no such finding.
    idle = run_cli("advise", *saved_pair(real, tmp_path, idle=True), "--format", "json")
    assert idle.returncode == 0, idle.stderr
    assert slots_findings(AllDatabasesAdvice.model_validate_json(idle.stdout)) == []
    assert json.loads(idle.stdout)["kind"] == "vacuumlab.all_databases_advice"
