"""README is the front door and docs/ holds one page a topic (each study's description is in its folder): a reader
following any relative link of README.md or docs/*.md reaches a file that exists, and a link's `#anchor` reaches a
heading of its page (as GitHub slugs it). The front door stays short (about 250 lines) and its figure small, so it
loads at a glance."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
         *sorted((REPO / "pipeline" / "studies").glob("*/README.md"))]  # each study's description
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def links(page: Path) -> list[str]:
    """Every link target of the page outside code blocks, where `[x](y)` is code, not a link."""
    text = FENCE.sub("", page.read_text())
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(title) for title in re.findall(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    fences = re.findall(r"^```", page.read_text(), re.M)
    assert len(fences) % 2 == 0, f"{page.relative_to(REPO)}: a code block is not closed (the rest reads as code)"
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading '{anchor}' in {file.relative_to(REPO)}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)


def test_the_front_door_is_short_and_links_every_docs_page():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250, "README.md: expected at most 250 lines"
    linked = {Path(target.partition("#")[0]).name for target in links(REPO / "README.md")}
    assert {page.name for page in PAGES[1:]} <= linked, "README.md: every docs/ page is linked from it"
    for figure in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme):
        assert figure.startswith("docs/") and (REPO / figure).stat().st_size < 150_000, figure


def test_ci_runs_readmes_commands_word_for_word():
    """README's two set-up commands are the ones a fresh clone runs, and CI's last line is the second one."""
    commands = re.findall(r"```bash\n(python3 -m venv .*)\n```", (REPO / "README.md").read_text())
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]' && PATH=\"$PWD/.venv/bin:$PATH\" dvc repro",
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]' && .venv/bin/python -m pytest"]
    assert (REPO / ".ci" / "run").read_text().strip().splitlines()[-1] == commands[1]
