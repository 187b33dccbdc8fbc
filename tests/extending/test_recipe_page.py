"""docs/extending.md is where the recipes this folder runs are written down: every worked example the page names is
a file here, every plugin module its commands put in REM_PLUGINS is one of them, and every YAML snippet parses, so
the page cannot drift from the tests that run its recipes."""

from __future__ import annotations

import importlib.util
import re

import yaml

from tests.conftest import REPO

PAGE = (REPO / "docs" / "extending.md").read_text()


def test_every_worked_example_the_page_names_exists():
    named = set(re.findall(r"`(tests/extending/\w+\.py)`", PAGE))
    assert len(named) >= 5, f"docs/extending.md: expected the five worked examples, found {sorted(named)}"
    assert all((REPO / path).is_file() for path in named), sorted(p for p in named if not (REPO / p).is_file())


def test_every_plugin_module_the_page_runs_is_importable():
    modules = set(re.findall(r"REM_PLUGINS=([\w.]+)", PAGE))
    assert modules, "docs/extending.md: expected REM_PLUGINS=<module> in its commands"
    assert all(importlib.util.find_spec(module) for module in modules), sorted(modules)


def test_every_yaml_snippet_parses():
    snippets = re.findall(r"```yaml\n(.*?)```", PAGE, re.S)
    assert len(snippets) >= 3
    for snippet in snippets:
        assert isinstance(yaml.safe_load(snippet), dict), snippet
