"""What an installed wheel needs besides Python: every data file under src/vacuumlab (SQL,
templates, the TUI's stylesheet) is named by pyproject's package-data. The editable install
the tests run from finds files that a wheel would leave out, so the globs are checked here."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "vacuumlab"
#: Files Python writes beside the sources, never shipped.
BUILT = {".pyc"}


def test_every_data_file_is_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["vacuumlab"]
    shipped = {path for glob in globs for path in PACKAGE.glob(glob)}
    data = {
        path for path in PACKAGE.rglob("*") if path.is_file() and path.suffix not in {".py", *BUILT}
    }
    assert PACKAGE / "tui" / "watch.tcss" in data
    assert sorted(str(path.relative_to(PACKAGE)) for path in data - shipped) == []
