"""Packages are layers, whichever way one module reaches another.

`test_house_rules.py` draws the package graph from module-level imports. Here an edge from package A to package B
is any way a module of A reaches a module of B: an import at module level, one inside a function (a lazy import), one
under `if TYPE_CHECKING:`, and a string that names the module for a loader to import (`import_module("rem.x.checks")`,
a registry's built-in modules). A lazy import or a name in a string still makes A depend on B; it only hides the
circle from Python's import order.

- The packages of `rem` (each top-level module counts as one) and `pipeline` form no strongly connected group of more
  than one package, but for the edges ALLOWED lists, each with the one-line reason it is there for now.
- `rem.analysis` (measurements of a model) imports neither `rem.report` (figures and pages, above it) nor
  `rem.tracking` (MLflow and model packages): those layers read the model and draw the results, and hand the
  analysis data and callables.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from fnmatch import fnmatchcase
from functools import cache

from tests.test_house_rules import MODULES, ROOT, cycles, package_of

# "importer -> imported" module patterns whose edges the package graph leaves out, with why each is there for now
ALLOWED: dict[str, str] = {
    "rem.config.checks -> rem.checks": "a loaded config is a checked one: the registries' checks, registered when "
                                       "a config is loaded, never when rem.config is imported (issue 66)",
}
MAX_ALLOWED = 3


def relative_base(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module a `from . import x` / `from ..a import x` of `importer` starts from."""
    parts = importer.split(".") if is_package else importer.split(".")[:-1]
    parts = parts[:len(parts) - node.level + 1]
    return ".".join([*parts, node.module] if node.module else parts)


def reached_modules(tree: ast.AST, importer: str, known, is_package: bool = False) -> Iterator[tuple[int, str]]:
    """(line, module) for each of the `known` modules the source of `importer` reaches: by an import statement
    anywhere in it (`from pkg import sub` names the submodule), or by a string that is exactly a submodule's name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = relative_base(node, importer, is_package) if node.level else node.module
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value:
            names = [node.value]  # dotted: a bare "rem" is the pruning method's name far more often than the package
        else:
            continue
        yield from ((node.lineno, name) for name in names if name in known)


@cache
def every_edge() -> tuple[tuple[str, int, str], ...]:
    """(importer, line, imported) for every module of `rem` and `pipeline` and each project module it reaches."""
    edges = []
    for importer, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        edges += [(importer, line, module) for line, module in
                  reached_modules(tree, importer, MODULES, path.name == "__init__.py") if module != importer]
    return tuple(edges)


def allowed_by(importer: str, module: str) -> str | None:
    return next((pattern for pattern in ALLOWED if fnmatchcase(f"{importer} -> {module}", pattern)), None)


def package_edges(edges) -> dict[tuple[str, str], list[str]]:
    """(package, package it reaches) -> the 'importer:line module' places that make the edge."""
    found: dict[tuple[str, str], list[str]] = {}
    for importer, line, module in edges:
        source, target = package_of(importer), package_of(module)
        if source != target:
            found.setdefault((source, target), []).append(f"{importer}:{line} {module}")
    return found


def circles(edges) -> list[str]:
    """Each group of packages that reach each other, with the places of the edges inside it."""
    between = package_edges(edges)
    graph: dict[str, set[str]] = {}
    for source, target in between:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    return [" <-> ".join(group) + "".join(f"\n    {place}" for (a, b), places in between.items()
                                         if a in group and b in group for place in places[:3])
            for group in cycles(graph)]


def test_no_package_circles_counting_lazy_imports_and_modules_named_in_strings():
    kept = [edge for edge in every_edge() if not allowed_by(edge[0], edge[2])]
    found = circles(kept)
    assert not found, "packages reaching each other (a layer must only use those below it):\n" + "\n".join(found)


def test_the_analysis_imports_neither_the_report_nor_tracking():
    found = [f"{MODULES[importer].relative_to(ROOT)}:{line} {module}" for importer, line, module in every_edge()
             if package_of(importer) == "rem.analysis" and package_of(module) in ("rem.report", "rem.tracking")]
    assert not found, "rem.analysis must be handed data, not read packages or draw figures:\n" + "\n".join(found)


def test_the_allow_list_is_short_and_each_entry_still_needed_with_its_reason():
    assert len(ALLOWED) <= MAX_ALLOWED, sorted(ALLOWED)
    used = {allowed_by(importer, module) for importer, _, module in every_edge()}
    assert not set(ALLOWED) - used, f"allowed edges no module has any more: {sorted(set(ALLOWED) - used)}"
    assert all(reason.strip() and "\n" not in reason for reason in ALLOWED.values())


SAMPLE = '''
import importlib
from typing import TYPE_CHECKING

import rem.a.top
if TYPE_CHECKING:
    from rem.c import Typed

CHECKS = {"eval": "rem.d.checks"}


def later():
    from rem.b import sub
    from . import sibling
    return importlib.import_module("rem.d")
'''


def test_the_edge_finder_sees_every_kind_of_import():
    known = {"rem.a.top", "rem.a.sibling", "rem.b", "rem.b.sub", "rem.c", "rem.d", "rem.d.checks"}
    reached = sorted(module for _, module in reached_modules(ast.parse(SAMPLE), "rem.a.x", known))
    assert reached == ["rem.a.sibling", "rem.a.top", "rem.b.sub", "rem.c", "rem.d", "rem.d.checks"]
    edges = [("rem.b.sub", 1, "rem.a.x"), ("rem.a.x", 2, "rem.b.sub"), ("rem.a.x", 3, "rem.c")]
    assert circles(edges) == ["rem.a <-> rem.b\n    rem.b.sub:1 rem.a.x\n    rem.a.x:2 rem.b.sub"]
