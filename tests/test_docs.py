"""The docs keep up with the code: every command and option is documented, every link lands.

Walks the click command tree that Typer builds, in-process (no subprocess, no server), the way
sqlite-utils' tests/test_docs.py keeps its CLI reference honest. Typer 0.29 carries its own copy
of click (``typer._click``), so parameters are told apart by ``param_type_name``, not by class.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from vacuumlab.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
COMMANDS_DOC = DOCS / "commands.md"

#: A Markdown heading: its level (number of #) and its text.
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
#: An inline Markdown link or image: [text](target) or ![alt](target "title").
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
#: A fenced code block, whose lines are neither headings (a shell comment) nor links.
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)


def prose(page: Path) -> str:
    """A Markdown page without its fenced code blocks."""
    return FENCE.sub("", page.read_text())


Command = Any  # typer._click.core.Command: a private module, so not named in annotations


def walk(command: Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Command]]:
    """Every command below ``command`` (groups included), with its path of names."""
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield (*path, name), sub
        yield from walk(sub, (*path, name))


def long_options(command: Command) -> list[str]:
    """The long form of every visible option, and of a flag's negation (``--no-parallel``)."""
    found: list[str] = []
    for param in command.params:
        if param.param_type_name != "option" or param.hidden:
            continue
        found.extend(o for o in (*param.opts, *param.secondary_opts) if o.startswith("--"))
    return [o for o in found if o != "--help"]


ROOT_COMMAND = get_command(app)
COMMANDS = list(walk(ROOT_COMMAND))
OPTIONS = [
    (path, option)
    for path, command in [((), ROOT_COMMAND), *COMMANDS]
    for option in long_options(command)
]


def sections(text: str) -> dict[str, str]:
    """Each heading's text mapped to its body, up to the next heading as high or higher."""
    lines = text.splitlines()
    heads = [(i, len(m[1]), m[2]) for i, line in enumerate(lines) if (m := HEADING.match(line))]
    found: dict[str, str] = {}
    for n, (start, level, title) in enumerate(heads):
        end = next((i for i, lv, _ in heads[n + 1 :] if lv <= level), len(lines))
        found[title] = "\n".join(lines[start + 1 : end])
    return found


def command_section(path: tuple[str, ...]) -> str:
    """The body of the heading that names ``vacuumlab <path>`` in code, in docs/commands.md."""
    name = " ".join(("vacuumlab", *path))
    for title, body in sections(prose(COMMANDS_DOC)).items():
        if re.search(rf"`{re.escape(name)}`", title):
            return body
    raise AssertionError(f"docs/commands.md has no heading naming `{name}`")


def names(option: str, text: str) -> bool:
    """Whether ``text`` names ``option`` as a whole word (``--set`` is not in ``--settings``)."""
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def test_the_walk_finds_the_command_tree() -> None:
    """A guard on the walk itself: an empty tree would make every test below pass vacuously."""
    paths = {" ".join(p) for p, _ in COMMANDS}
    assert {"run churn", "sandbox start", "advise", "watch"} <= paths
    assert len(OPTIONS) > 50


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=" ".join)
def test_every_command_has_a_section_in_docs_commands(path: tuple[str, ...]) -> None:
    assert command_section(path).strip()


@pytest.mark.parametrize(
    ("path", "option"), OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else v
)
def test_every_option_is_named_in_its_commands_section(path: tuple[str, ...], option: str) -> None:
    if not path:
        assert names(option, COMMANDS_DOC.read_text()), f"docs/commands.md does not name {option}"
        return
    assert names(option, command_section(path)), (
        f"docs/commands.md: the section of `vacuumlab {' '.join(path)}` does not name {option}"
    )


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def slug(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings; a repeated heading gets -1, -2, ... as on GitHub."""
    found: set[str] = set()
    for line in prose(page).splitlines():
        if m := HEADING.match(line):
            base = anchor = slug(m[2])
            n = 0
            while anchor in found:
                n += 1
                anchor = f"{base}-{n}"
            found.add(anchor)
    return found


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file(page: Path) -> None:
    """A link to a file that is gone, or to a heading that is not on its page, is broken."""
    broken = []
    for target in LINK.findall(prose(page)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # a URL: https:, mailto:
        path, _, anchor = target.partition("#")
        file = page.parent / path if path else page
        check_anchor = file.exists() and anchor and file.suffix == ".md"
        if not file.exists() or (check_anchor and anchor not in anchors(file)):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} has broken links: {broken}"


def test_the_readme_is_a_front_door() -> None:
    """About 150 lines, 200 at most; the rest lives in docs/."""
    assert len(README.read_text().splitlines()) <= 200


def test_every_doc_page_is_linked() -> None:
    """A page no link reaches is a page nobody reads: each is linked from the README or a doc."""
    linked: set[Path] = set()
    for page in markdown_files():
        for target in LINK.findall(prose(page)):
            linked.add((page.parent / target.split("#", 1)[0]).resolve())
    orphans = [
        str(p.relative_to(ROOT))
        for p in DOCS.rglob("*")
        if p.is_file() and p.resolve() not in linked
    ]
    assert not orphans, f"no page links to {orphans}"
