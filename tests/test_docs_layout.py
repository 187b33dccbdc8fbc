"""docs/extending.md's layout block names only paths that exist: every file (`x.py`) and folder (`x/`) it lists is
found under a folder its line sits in (a top-level entry like `rem/`, or the folder an indented line opens, nested
as deep as the block nests), so the map cannot drift from the tree unnoticed."""

from __future__ import annotations

import re

from tests.conftest import REPO

PATH = re.compile(r"(?<![\w.`/-])([\w-]+(?:/[\w-]+)*(?:\.py|/))(?![\w`])")


def layout_block() -> list[str]:
    text = (REPO / "docs/extending.md").read_text()
    section = text.split("## Layout", 1)[1]
    return section.split("```", 2)[1].splitlines()[1:]


def named_paths() -> list[tuple[str, list[str]]]:
    """(path, the folders it may sit in) for every path the block names, by the lines' indentation: a line that
    opens with a folder two columns in from the folder above it (`rem/`, then `  report/`, then `    x/`) nests in it;
    a more deeply indented line continues the one above."""
    opened: list[tuple[int, str]] = []  # (indent, folder) of the folders the current line sits in
    found = []
    for line in layout_block():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        first = line.split()[0]
        if first.endswith("/") and indent <= (opened[-1][0] + 2 if opened else 0):
            opened = [(i, folder) for i, folder in opened if i < indent]
            opened.append((indent, (opened[-1][1] if opened else "") + first))
        bases = ["", *(folder for _, folder in opened)]
        for path in PATH.findall(line):
            found.append((path, bases))
    return found


def test_every_path_the_layout_names_exists():
    paths = named_paths()
    assert len(paths) > 40  # the block was read
    missing = [path for path, bases in paths if not any((REPO / base / path).exists() for base in bases)]
    assert not missing, f"docs/extending.md's layout names paths that do not exist: {missing}"
