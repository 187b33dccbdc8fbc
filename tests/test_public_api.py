"""The public API (docs/extending.md) is the one other code relies on: its example runs as written (the model trained
in a sweep aside, which needs an MLflow run), and the modules the page's layout names for each job exist."""

from __future__ import annotations

import importlib
import re

import torch

from tests.conftest import REPO


def page_section(title: str) -> str:
    text = (REPO / "docs" / "extending.md").read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_the_pages_example_runs():
    (code,) = re.findall(r"```python\n(.*?)```", page_section("Public API"), re.S)
    runnable = [line for line in code.splitlines() if "rem.load_model(" not in line]  # needs a sweep's MLflow run
    scope = {"images": torch.rand(2, 1, 28, 28)}
    exec("\n".join(runnable), scope)  # noqa: S102 -- the page's own lines
    assert scope["out"].lengths.shape == (2, 10) and scope["out"].couplings.shape == (2, 1152, 10)
    assert set(scope["stats"].columns) >= {"n_images", "n_parse_trees", "entropy_bits"}
    assert callable(scope["rem"].load_model)


def test_every_package_in_the_pages_layout_exists():
    (tree,) = re.findall(r"```\n(rem/.*?)```", page_section("Layout"), re.S)
    rem_tree = re.split(r"^\S", tree.split("\n", 1)[1], maxsplit=1, flags=re.M)[0]  # up to the next top-level folder
    packages = re.findall(r"^  (\w+)/", rem_tree, re.M)
    assert len(packages) >= 9
    for package in packages:
        importlib.import_module(f"rem.{package}")
