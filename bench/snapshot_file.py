"""The snapshot file, schema 1 against schema 2: size, write and read side by side.

Schema 1 is the whole snapshot as pydantic JSON, one object of ~40 keys per relation, indented;
schema 2 (records/snapshot_file.py) holds the relations as columns with the defaults left
out. Both are written to a file and read back as ``--input`` reads them (``load_snapshot``),
from one snapshot: a synthetic one of ``--relations`` heap and TOAST relations by default
(tenant schemas of 40 tables each, every table with a TOAST relation, half of them never
vacuumed, one in ten with reloptions), or the snapshot of a server (``--dsn``). Each figure
is the median of ``--repeat`` rounds; the ratios are what travels (issue 27: under 60 MB at
100,000 tables, 200,000 relations). The schema-2 file must read back equal, field for
field, to schema 1's.

    .venv/bin/python bench/snapshot_file.py [--relations 200000] [--repeat 3] [--dsn DSN]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

from vacuumlab.model.knobs import stock_settings
from vacuumlab.records.snapshot import (
    Relation,
    ServerInfo,
    Setting,
    Snapshot,
    Table,
    load_snapshot,
)

#: Bytes of a schema-2 file at 100,000 tables (issue 27).
SIZE_GOAL = 60_000_000
TABLES_PER_TENANT = 40
NAMES = (
    "accounts", "audit_log", "carts", "events", "invoices", "jobs", "line_items", "messages",
    "notifications", "orders", "payments", "sessions", "tokens", "users", "webhooks",
)  # fmt: skip
T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
OPTIONS = (
    {"autovacuum_vacuum_scale_factor": "0.01", "autovacuum_vacuum_threshold": "1000"},
    {"fillfactor": "90"},
    {"autovacuum_enabled": "false", "toast.autovacuum_enabled": "false"},
)


def at(rng: random.Random) -> datetime:
    """A moment in the week before the snapshot, to the microsecond."""
    return T0 - timedelta(seconds=rng.uniform(0, 7 * 86400))


def relation(
    rng: random.Random, oid: int, schema: str, name: str, toast_of: int | None
) -> Relation:
    """One relation as a PostgreSQL 18 snapshot holds it: half never vacuumed nor analysed.
    The total times are whole milliseconds, as pgstat_report_vacuum() adds them
    (TimestampDifferenceMilliseconds, pgstat_relation.c)."""
    toast = toast_of is not None
    seen = rng.random() < 0.5
    rows = 0 if toast and rng.random() < 0.7 else rng.randrange(0, 2_000_000)
    pages = rows // 60
    ins, upd, dele = rng.randrange(rows + 1), rng.randrange(rows + 1), rng.randrange(rows // 10 + 1)
    indexes = 1 if toast else rng.randrange(1, 5)
    return Relation.model_validate({
        "oid": oid, "schema_name": schema, "name": name, "kind": "t" if toast else "r",
        "toast_of": toast_of, "reltuples": float(rows) if seen else -1.0, "relpages": pages,
        "relallvisible": pages // 2, "relallfrozen": pages // 4, "n_live_tup": rows,
        "n_dead_tup": rng.randrange(rows // 20 + 1), "n_ins_since_vacuum": ins // 3,
        "n_mod_since_analyze": upd // 5, "n_tup_ins": ins, "n_tup_upd": upd, "n_tup_del": dele,
        "n_tup_hot_upd": upd // 2, "n_tup_newpage_upd": upd // 7,
        "last_vacuum": at(rng) if seen and rng.random() < 0.2 else None,
        "last_autovacuum": at(rng) if seen else None,
        "last_analyze": at(rng) if seen and not toast and rng.random() < 0.2 else None,
        "last_autoanalyze": at(rng) if seen and not toast else None,
        "vacuum_count": rng.randrange(3) if seen else 0,
        "autovacuum_count": rng.randrange(1, 500) if seen else 0,
        "analyze_count": 0, "autoanalyze_count": 0 if toast or not seen else rng.randrange(200),
        "total_vacuum_time_ms": 0.0, "total_analyze_time_ms": 0.0,
        "total_autovacuum_time_ms": float(rng.randrange(100_000)) if seen else 0.0,
        "total_autoanalyze_time_ms": float(rng.randrange(10_000)) if seen and not toast else 0.0,
        "heap_bytes": pages * 8192, "index_bytes": indexes * 8192 * (pages // 10 + 1),
        "toast_bytes": None if toast else rng.randrange(0, 1 << 24), "n_indexes": indexes,
        "reloptions": {} if toast or rng.random() < 0.9 else rng.choice(OPTIONS),
        "catalog_position": rng.randrange(1 << 30), "frozenxid_age": rng.randrange(200_000_000),
        "minmxid_age": rng.randrange(1000),
    })  # fmt: skip


def synthetic(relations: int) -> Snapshot:
    """A snapshot of ``relations`` heap and TOAST relations, in tenants' schemas."""
    rng = random.Random(27)
    tables = []
    for i in range(relations // 2):
        schema = f"tenant_{i // TABLES_PER_TENANT + 1:05d}"
        name = f"{NAMES[i % TABLES_PER_TENANT % len(NAMES)]}_{i % TABLES_PER_TENANT}"
        oid = 16_384 + 4 * i
        heap = relation(rng, oid, schema, name, None)
        tables.append(
            Table(heap=heap, toast=relation(rng, oid + 1, "pg_toast", f"pg_toast_{oid}", oid))
        )
    server = ServerInfo(
        version_num=180001, version="PostgreSQL 18.1", database="app", user="postgres",
        is_superuser=True, in_recovery=False, block_size=8192, can_read_all_stats=True,
        extensions=frozenset({"pg_stat_statements"}), columns=frozenset(),
    )  # fmt: skip
    settings = [
        Setting(name=k, setting=v, unit=None, vartype="real", source="default",
                context="sighup", pending_restart=False, shown=v)
        for k, v in stock_settings(180000).items()
    ]  # fmt: skip
    return Snapshot(
        vacuumlab_version="bench", taken_at=T0, server=server, settings=settings, tables=tables
    )


def of_server(dsn: str) -> Snapshot:
    from vacuumlab.collect.snapshot import collect
    from vacuumlab.pg.connect import connect

    with connect(dsn) as session:
        return collect(session)


@dataclass(frozen=True, slots=True)
class Figures:
    size: int
    write_s: float
    read_s: float


def timed(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def write_both(snap: Snapshot, paths: tuple[Path, Path], repeat: int) -> tuple[int, int]:
    """Write ``snap`` as schema 1 and as schema 2, ``repeat`` times each; the median seconds
    land in ``WRITE``. Returns the number of relations and of tables."""
    old = snap.model_copy(update={"schema_version": 1})
    WRITE[paths[0]] = timed(
        repeat, partial(write, paths[0], partial(old.model_dump_json, indent=2))
    )
    WRITE[paths[1]] = timed(repeat, partial(write, paths[1], snap.dump_json))
    return sum(1 + (t.toast is not None) for t in snap.tables), len(snap.tables)


def write(path: Path, text: Callable[[], str]) -> None:
    path.write_text(text(), encoding="utf-8")


#: Each file's median write time.
WRITE: dict[Path, float] = {}


def row(what: str, v1: float, v2: float, unit: str) -> str:
    return f"{what:<6} {v1:>10.2f} {unit:<2} {v2:>10.2f} {unit:<2} {v1 / v2:>8.1f}×"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--relations", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dsn", help="snapshot this server instead of a synthetic one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vacuumlab-bench-") as tmp:
        paths = Path(tmp, "v1.json"), Path(tmp, "v2.json")
        start = time.perf_counter()
        # The snapshot is not kept: files are read as --input reads them, in a process that
        # holds no other snapshot, where the collector has no large heap to walk.
        relations, tables = write_both(
            of_server(args.dsn) if args.dsn else synthetic(args.relations), paths, args.repeat
        )
        gc.collect()
        print(f"{relations:,} relations ({tables:,} tables), "
              f"built and written in {time.perf_counter() - start:.1f} s")  # fmt: skip
        read = [timed(args.repeat, partial(load_snapshot, path)) for path in paths]
        back = load_snapshot(paths[1]).model_copy(update={"schema_version": 1})
        same = back.model_dump_json(indent=2) == paths[0].read_text(encoding="utf-8")
        assert same, "the schema-2 file did not read back equal to schema 1's"
        v1, v2 = (Figures(p.stat().st_size, WRITE[p], r) for p, r in zip(paths, read, strict=True))
    print(f"{'':<6} {'schema 1':>13} {'schema 2':>13} {'1 / 2':>9}")
    print(row("size", v1.size / 1e6, v2.size / 1e6, "MB"))
    print(row("write", v1.write_s, v2.write_s, "s"))
    print(row("read", v1.read_s, v2.read_s, "s"))
    per_table = v2.size / max(tables, 1)
    verdict = "met" if per_table * 100_000 < SIZE_GOAL else "NOT MET"
    print(f"schema 2 at 100,000 tables: {per_table * 100_000 / 1e6:.1f} MB "
          f"(goal < {SIZE_GOAL / 1e6:.0f} MB: {verdict})")  # fmt: skip


if __name__ == "__main__":
    main()
