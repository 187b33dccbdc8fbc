"""docs/extending.md's layout block names only paths that exist: every file (`x.py`) and folder (`x/`) it lists is
found under the folder its line sits in (a top-level entry like `rem/`, or the package an indented line opens), so
the map cannot drift from the tree unnoticed."""

from __future__ import annotations

import re

from tests.conftest import REPO

PATH = re.compile(r"(?<![\w.`/-])([\w-]+(?:/[\w-]+)*(?:\.py|/))(?![\w`])")


def layout_block() -> list[str]:
    text = (REPO / "docs/extending.md").read_text()
    section = text.split("## Layout", 1)[1]
    return section.split("```", 2)[1].splitlines()[1:]


def named_paths() -> list[tuple[str, list[str]]]:
    """(path, the folders it may sit in) for every path the block names, by the lines' indentation."""
    top, package, found = "", "", []
    for line in layout_block():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        first = line.split()[0]
        if indent == 0 and first.endswith("/"):
            top, package = first, ""
        elif indent == 2 and first.endswith("/"):
            package = top + first
        bases = ["", top, package]
        for path in PATH.findall(line):
            found.append((path, bases))
    return found


def test_every_path_the_layout_names_exists():
    paths = named_paths()
    assert len(paths) > 40  # the block was read
    missing = [path for path, bases in paths if not any((REPO / base / path).exists() for base in bases)]
    assert not missing, f"docs/extending.md's layout names paths that do not exist: {missing}"
