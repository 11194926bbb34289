"""Markdown that nothing from the database can break, for every report written in Markdown
(the advice, a simulation, a verification): text escaped inline, code spans and fences longer
than any run of backticks inside them, GFM tables whose rows no cell can split.

Pure and light: it loads no template engine and no plotting library.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

# Always escaped: characters that start inline markup, entities, raw HTML or a table cell.
# An underscore between two letters or digits cannot open or close emphasis, so it is left.
_INLINE = re.compile(r"[\\`*\[\]<>&|~#]|(?<![^\W_])_|_(?![^\W_])")
# At the start of a paragraph: what would turn it into a list, a heading rule or a quote.
_BLOCK_START = re.compile(r"^(\d+)([.)])|^([-+=])")


def md_text(value: str) -> str:
    """Database text as inline Markdown: on one line, with nothing interpreted."""
    flat = " ".join(value.splitlines())
    if _INLINE.search(flat) is None:  # most cells: a number, a plain name
        return flat
    return _INLINE.sub(lambda m: "\\" + m.group(0), flat)


def md_paragraph(value: str) -> str:
    """Like :func:`md_text`, also safe at the start of a line."""
    return _BLOCK_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", md_text(value))


def md_code(value: str) -> str:
    """An inline code span (not for table cells), fenced past any backticks inside."""
    flat = " ".join(value.splitlines()) or " "
    fence = "`" * (_longest_run(flat, "`") + 1)
    pad = " " if flat[0] in "` " or flat[-1] in "` " else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def md_fence(code: str, info: str = "sql") -> list[str]:
    """A fenced code block, as lines."""
    fence = "`" * max(3, _longest_run(code, "`") + 1)
    return [f"{fence}{info}", *code.splitlines(), fence]


def md_table(
    columns: Sequence[str], rows: Iterable[Sequence[str]], *, numbers: Collection[str] = ()
) -> str:
    """A GFM table; the columns named in `numbers` are right-aligned."""
    rule = " | ".join("---:" if column in numbers else "---" for column in columns)
    lines = [_md_row(columns), f"| {rule} |"]
    lines.extend(_md_row(row) for row in rows)
    return "\n".join(lines)


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(md_text(cell) for cell in cells) + " |"


def _longest_run(text: str, char: str) -> int:
    return max((len(run) for run in re.findall(f"{re.escape(char)}+", text)), default=0)
