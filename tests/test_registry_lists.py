"""Every registry loads its built-in entries one way (rem/registry.py): it names the modules that define them and
imports them all when first asked, and each entry is named once, by its decorator. This test keeps the module lists
whole: each listed module registers an entry, and every entry a module of `rem` registers comes from a listed module
(a module left off would register nothing until something else happened to import it)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

import rem
from rem.data.registry import FAMILIES
from rem.models.registry import MODELS
from rem.pruning.methods.registry import METHODS
from rem.report.registry import TABLES
from rem.routing.registry import ROUTINGS
from tests.conftest import REPO

REGISTRIES = {"models": (MODELS, lambda entry: entry.builder.__module__),
              "routings": (ROUTINGS, lambda entry: entry.route.__module__),
              "pruning methods": (METHODS, lambda entry: entry.__module__),
              "dataset families": (FAMILIES, lambda entry: type(entry).__module__),
              "report tables": (TABLES, lambda entry: entry.build.__module__)}


def every_rem_module() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(rem.__path__, "rem.")]


@pytest.mark.parametrize("kind", list(REGISTRIES))
def test_each_listed_module_registers_an_entry(kind):
    registry, defined_in = REGISTRIES[kind]
    registry.names()  # loads the listed modules
    registering = {defined_in(entry) for entry in registry._entries.values()}
    assert [module for module in registry.modules if module not in registering] == []


@pytest.mark.parametrize("kind", list(REGISTRIES))
def test_every_entry_a_module_of_rem_registers_comes_from_a_listed_module(kind):
    registry, defined_in = REGISTRIES[kind]
    for module in every_rem_module():
        importlib.import_module(module)
    ours = {name: defined_in(entry) for name, entry in registry._entries.items()
            if defined_in(entry).startswith("rem.")}  # entries of tests or plugins may be registered too
    assert {name: module for name, module in ours.items() if module not in registry.modules} == {}


def test_a_fresh_interpreter_finds_every_kinds_built_in_entry_by_name_alone():
    """Nothing imported but the registries: asking for a name loads its kind's modules."""
    code = ("from rem.data.registry import FAMILIES\nfrom rem.models.registry import MODELS\n"
            "from rem.pruning.methods.registry import METHODS\nfrom rem.report.registry import TABLES\n"
            "from rem.routing.registry import ROUTINGS\n"
            "for registry, name in ((MODELS, 'capsnet'), (ROUTINGS, 'dynamic'), (METHODS, 'capsules'),\n"
            "                       (FAMILIES, 'smallnorb'), (TABLES, 'dataset')):\n"
            "    assert registry.find(name) is not None, name\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_rem_checks_imports_every_package_check_and_each_registers():
    """rem.checks is the one list of the packages' config checks: it names every `checks` module of rem's packages,
    and each of them registers at least one check with rem.config.checks."""
    import rem.checks
    from rem.config.checks import FIELDS_CHECKS, SECTION_CHECKS

    check_modules = {m for m in every_rem_module() if m.count(".") == 2 and m.endswith(".checks")
                     and m != "rem.config.checks"}
    listed = {getattr(rem.checks, name).__name__ for name in dir(rem.checks) if name.endswith("_checks")}
    assert listed == check_modules, \
        f"rem.checks lists {sorted(listed)}; the packages' checks are {sorted(check_modules)}"
    registered = {check.__module__ for table in (SECTION_CHECKS, FIELDS_CHECKS) for checks in table.values()
                  for check in checks}
    assert check_modules <= registered, f"registering nothing: {sorted(check_modules - registered)}"
