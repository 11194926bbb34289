"""The shape of the package's code: modules over a size, and function lengths.

    python bench/code_shape.py            # src/vacuumlab, modules over 500 lines
    python bench/code_shape.py --over 400

A function's length counts its lines from ``def`` to its last statement, decorators and
docstring included, nested functions counted in their own right (and in their parent's).
"""

from __future__ import annotations

import argparse
import ast
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "vacuumlab"


def function_lengths(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            end = node.end_lineno or node.lineno
            found.append(
                (end - start + 1, f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}")
            )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--over", type=int, default=500, help="list modules longer (default 500)")
    args = parser.parse_args()
    modules = sorted(ROOT.rglob("*.py"))
    sizes = [(len(p.read_text().splitlines()), p) for p in modules]
    lengths = [f for p in modules for f in function_lengths(p)]
    print(f"modules: {len(modules)}, lines: {sum(n for n, _ in sizes):,}")
    for n, p in sorted(sizes, reverse=True):
        if n > args.over:
            print(f"  over {args.over}: {p.relative_to(ROOT.parent)} {n} lines")
    values = [n for n, _ in lengths]
    print(
        f"functions: {len(values)}, median {statistics.median(values):.0f} lines, "
        f"90th percentile {statistics.quantiles(values, n=10)[-1]:.0f}"
    )
    for n, where in sorted(lengths, reverse=True)[:5]:
        print(f"  longest: {n} lines, {where}")


if __name__ == "__main__":
    main()
