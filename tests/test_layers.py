"""The layers hold at run time too: importing a renderer, a record, the live view or the TUI
never loads the driver; no module imports itself back; docs/layout.md draws the order the
``layers`` contract states.

import-linter (``make lint``) checks the import graph; this checks what Python really loads,
package ``__init__`` modules included, in a fresh interpreter.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

import vacuumlab

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import importlib, json, pkgutil, sys

def forbidden():
    return {m for m in sys.modules if m.split(".")[0] in {"psycopg", "psycopg_binary"}
            or m.startswith(("vacuumlab.pg", "vacuumlab.collect", "vacuumlab.lab"))}

found, checked = {}, []

def check(name):
    before = forbidden()
    module = importlib.import_module(name)
    checked.append(name)
    if forbidden() - before:
        found[name] = sorted(forbidden() - before)
    return module

for root in ("vacuumlab.records", "vacuumlab.report", "vacuumlab.tui"):
    package = check(root)
    for info in pkgutil.walk_packages(package.__path__, root + "."):
        check(info.name)
for name in ("vacuumlab.watch.view", "vacuumlab.watch.cluster", "vacuumlab.watch.metrics"):
    check(name)
print(json.dumps({"checked": checked, "found": found}))
"""


def test_records_reports_and_the_tui_load_no_driver():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    result = json.loads(out.stdout)
    assert "vacuumlab.report.advice.markdown" in result["checked"]
    assert "vacuumlab.records.snapshot" in result["checked"]
    assert "vacuumlab.watch.view" in result["checked"]
    assert "vacuumlab.tui.app" in result["checked"]
    assert result["found"] == {}


def test_the_cli_and_the_tui_share_only_public_names():
    """What a command module takes from another is public (the options and helpers several
    commands share live in cli/options.py): a leading underscore says "this module's own"."""
    root = Path(vacuumlab.__file__).parent
    private = []
    for path in sorted([*root.glob("cli/*.py"), *root.glob("tui/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vacuumlab"):
                private += [
                    f"{path.relative_to(root)}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert private == []


def test_no_module_imports_itself_back():
    """No import cycles, function-level imports included: a cycle is two modules that each need
    the other, which the layers cannot order (a simulation's page and its chart were one)."""
    graph = grimp.build_graph("vacuumlab")
    modules = sorted(m for m in graph.modules if m.startswith("vacuumlab"))
    cycles = [
        (a, b)
        for a in modules
        for b in graph.find_modules_directly_imported_by(a)
        if b.startswith("vacuumlab") and a < b and graph.chain_exists(importer=b, imported=a)
    ]
    assert cycles == []


def _contract_layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [layers] = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    assert layers["containers"] == ["vacuumlab"]
    return [" | ".join(part.strip() for part in layer.split("|")) for layer in layers["layers"]]


def test_the_layout_draws_the_order_the_contract_states():
    """docs/layout.md draws the layers in the contract's order, and names every top-level
    module of the package."""
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    drawing = text.split("<!-- layers:", 1)[1].split("```", 2)[1]
    drawn = [
        " | ".join(part.strip() for part in line.split("  ", 1)[0].split("|"))
        for line in drawing.strip().splitlines()
    ]
    assert drawn == _contract_layers()
    package = Path(vacuumlab.__file__).parent
    tops = sorted(
        f"{p.name}/" if p.is_dir() else p.name
        for p in package.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and p.name != "__init__.py")
    )
    rooms = text.split("src/vacuumlab/", 1)[1]
    assert [t for t in tops if f"  {t}" not in rooms] == []


def test_tests_share_helpers_only_through_the_helpers_package() -> None:
    """A test file imports what others share from ``tests/helpers/``, never from conftest
    (pytest loads it as a plugin, and a second import makes a second copy) nor from another
    test file (whose tests would then be collected twice under another name)."""
    tests = ROOT / "tests"
    wrong = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                first = name.split(".")[0]
                if first == "conftest" or first.startswith("test_") or first.endswith("_fixtures"):
                    wrong.append(f"{path.relative_to(ROOT)}: {name}")
    assert not wrong, wrong


#: The most lines one module may have: past it, a module holds more than one thing.
MAX_MODULE_LINES = 500


def test_no_module_is_over_500_lines() -> None:
    package = Path(vacuumlab.__file__).parent
    sizes = {
        str(path.relative_to(package)): len(path.read_text(encoding="utf-8").splitlines())
        for path in package.rglob("*.py")
    }
    assert len(sizes) > 100
    over = {name: lines for name, lines in sizes.items() if lines > MAX_MODULE_LINES}
    assert not over, over


#: What may lie loose in report/: what every document shares (the package, the charts' and
#: Markdown's helpers, the common words, the run page), and the documents that fit in one
#: module (a comparison, a verification). Every other document has a folder of its own.
REPORT_LOOSE = {
    "__init__.py",
    "charts.py",
    "common.py",
    "markdown.py",
    "page.py",
    "compare.py",
    "verification.py",
}


def test_each_report_document_has_its_folder() -> None:
    report = Path(vacuumlab.__file__).parent / "report"
    loose = {p.name for p in report.glob("*.py")}
    assert loose <= REPORT_LOOSE, f"give these a folder of their own: {loose - REPORT_LOOSE}"
    folders = {p.name for p in report.iterdir() if (p / "__init__.py").exists()}
    assert {"advice", "simulation", "snapshot", "churn", "tune"} <= folders
