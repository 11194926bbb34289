"""Real workloads for the scenario suite: pgbench from the sandbox's own installation, run in
the background while the advisor takes its two snapshots."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from vacuumlab.advise import advise
from vacuumlab.lab.advice import collect_two
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.records.advice import Advice, Finding, Recommendation
from vacuumlab.records.snapshot import Snapshot

RANKED = ("warning", "critical")


def pgbench_init(sandbox: Sandbox, dsn: str, scale: int) -> None:
    """``pgbench -i``: pgbench's four tables, loaded and vacuumed, as a new user would."""
    exe = str(sandbox.bin.exe("pgbench"))
    args = [exe, "--initialize", "--quiet", f"--scale={scale}", dsn]
    subprocess.run(args, check=True, capture_output=True, env=sandbox.environment())


@contextmanager
def pgbench_load(
    sandbox: Sandbox,
    dsn: str,
    seconds: int,
    *,
    clients: int = 4,
    script: Path | None = None,
    scripts: Sequence[Path] = (),
    rate: int | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """pgbench (TPC-B, or ``script``, or ``scripts`` chosen at random with equal weights) in
    the background for at most ``seconds``, at most ``rate`` transactions a second when
    given. It is stopped when the block ends (the advice taken, nothing more to load), and
    must have reported no error."""
    args = [str(sandbox.bin.exe("pgbench")), "--no-vacuum", f"--client={clients}"]
    args += [f"--jobs={min(clients, 2)}", *([f"--rate={rate}"] if rate else [])]
    files = [*([script] if script else []), *scripts]
    args += [f"--time={seconds}", *(f"--file={f}" for f in files), dsn]
    proc = subprocess.Popen(
        args, env=sandbox.environment(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode in (0, -signal.SIGTERM), err.decode()
        assert b"error" not in err, err.decode()


def snapshots(dsn: str, interval: float) -> tuple[Snapshot, Snapshot]:
    """Two snapshots ``interval`` seconds apart, as ``advise --interval`` takes them."""
    return collect_two(dsn, interval)


def advise_over(dsn: str, interval: float) -> tuple[Advice, Snapshot]:
    first, later = snapshots(dsn, interval)
    return advise(first, later), later


def recommendations(advice: Advice, setting: str) -> list[Recommendation]:
    return [r for f in advice.findings for r in f.recommendations if r.setting == setting]


def ranked(advice: Advice) -> list[Finding]:
    """Findings at warning or above: what a DBA acts on."""
    return [f for f in advice.findings if f.severity in RANKED]


def horizon_blame(advice: Advice) -> list[Finding]:
    return [f for f in advice.findings if "xmin horizon keeps" in f.title]


def describe(findings: list[Finding]) -> str:
    return "; ".join(f"[{f.severity}] {f.relation}: {f.title} {f.evidence}" for f in findings)


def write_script(directory: Path, name: str, text: str) -> Path:
    """A pgbench script file."""
    path = directory / f"{name}.sql"
    path.write_text(text)
    return path


def load_table(
    dsn: str, name: str, rows: int, *, options: str = "", pad: int = 60, index_n: bool = False
) -> None:
    """``name (id int PRIMARY KEY, n int, pad text)`` with ``rows`` rows, vacuumed and
    analysed; with ``index_n`` n is indexed, so updates of it are never HOT."""
    with_options = f" WITH ({options})" if options else ""
    execute_all(
        dsn,
        f"CREATE TABLE {name} (id int PRIMARY KEY, n int NOT NULL, pad text){with_options}",
        *([f"CREATE INDEX ON {name} (n)"] if index_n else []),
        f"INSERT INTO {name} SELECT g, 0, repeat('x', {pad}) FROM generate_series(1, {rows}) g",
        # The insert's counts reach shared statistics at the next flush (at most once a
        # second): forced now, so the VACUUM after it resets n_ins_since_vacuum for good.
        "SELECT pg_stat_force_next_flush()",
        f"VACUUM (ANALYZE) {name}",
    )


def update_script(table: str, rows: int) -> str:
    """One random row of ``table`` updated in place (HOT: n is not indexed)."""
    return f"\\set id random(1, {rows})\nUPDATE {table} SET n = n + 1 WHERE id = :id;\n"


def execute_all(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]  # the scenarios' own literals


@contextmanager
def running_query(dsn: str, query: str, *, settle: float = 0.0) -> Iterator[int]:
    """``query`` running on a connection of its own in a thread; yields its pid once the
    server shows it active (and ``settle`` seconds later), waits for it on exit."""
    conn = psycopg.connect(dsn, autocommit=True, application_name="vl-scenario-report")
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    pid: int = row[0]
    thread = threading.Thread(target=conn.execute, args=(query,))  # type: ignore[arg-type]
    thread.start()
    try:
        _wait_active(dsn, pid)
        time.sleep(settle)
        yield pid
    finally:
        thread.join()
        conn.close()


def _wait_active(dsn: str, pid: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(100):
            row = conn.execute(
                "SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
            if row is not None and row[0] == "active":
                return
            time.sleep(0.1)
    raise AssertionError(f"pid {pid} never became active")


#: Burns transaction ids: one committed transaction with an xid per loop.
BURN = (
    "CREATE PROCEDURE burn(n int) LANGUAGE plpgsql AS $$ BEGIN FOR i IN 1..n LOOP "
    "PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$"
)


def burn(dsn: str, xids: int) -> None:
    """``xids`` transaction ids consumed (the procedure ``BURN`` must exist)."""
    execute_all(dsn, "SET synchronous_commit = off", f"CALL burn({xids})")


@contextmanager
def fresh_database(admin_dsn: str, name: str) -> Iterator[str]:
    """A database of its own on another sandbox's server, dropped afterwards."""
    execute_all(admin_dsn, f"CREATE DATABASE {name}")
    try:
        yield make_conninfo(admin_dsn, dbname=name)
    finally:
        execute_all(admin_dsn, f"DROP DATABASE {name} WITH (FORCE)")
