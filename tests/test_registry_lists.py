"""The registries that list their built-in entries by module (so that the config's light imports stay light: a
module is imported the first time its name is looked up) name each entry twice, in the list and at its registration.
This test is what keeps the two one: every listed module registers the name listed for it, and every entry a module
of `rem` registers is listed, under the module that registers it. (Models and routings list nothing: their packages
import every registering module, tests/models/test_registration.py.)"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import rem
from rem.data.registry import FAMILIES
from rem.pruning.methods.registry import METHODS
from rem.report.registry import TABLES

REGISTRIES = {"pruning methods": (METHODS, lambda entry: entry.__module__),
              "dataset families": (FAMILIES, lambda entry: type(entry).__module__),
              "report tables": (TABLES, lambda entry: entry.build.__module__)}


def every_rem_module() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(rem.__path__, "rem.")]


@pytest.mark.parametrize("kind", list(REGISTRIES))
def test_each_listed_module_registers_its_name(kind):
    registry, defined_in = REGISTRIES[kind]
    for name, module in registry.built_in.items():
        importlib.import_module(module)
        assert name in registry._entries, f"{module} registers no {registry.kind} {name!r}"
        assert defined_in(registry._entries[name]) == module, name


@pytest.mark.parametrize("kind", list(REGISTRIES))
def test_every_entry_a_module_of_rem_registers_is_listed_under_it(kind):
    registry, defined_in = REGISTRIES[kind]
    for module in every_rem_module():
        importlib.import_module(module)
    ours = {name: defined_in(entry) for name, entry in registry._entries.items()
            if defined_in(entry).startswith("rem.")}  # entries of tests or plugins may be registered too
    assert ours == {name: registry.built_in.get(name) for name in ours}, "registered but listed nowhere (or elsewhere)"
    assert set(ours) == set(registry.built_in)


def test_rem_checks_imports_every_package_check_and_each_registers():
    """rem.checks is the one list of the packages' config checks: it names every `checks` module of rem's packages,
    and each of them registers at least one check with rem.config.checks."""
    import rem.checks
    from rem.config.checks import FIELDS_CHECKS, SECTION_CHECKS

    check_modules = {m for m in every_rem_module() if m.count(".") == 2 and m.endswith(".checks") and m != "rem.config.checks"}
    listed = {getattr(rem.checks, name).__name__ for name in dir(rem.checks) if name.endswith("_checks")}
    assert listed == check_modules, f"rem.checks lists {sorted(listed)}; the packages' checks are {sorted(check_modules)}"
    registered = {check.__module__ for table in (SECTION_CHECKS, FIELDS_CHECKS) for checks in table.values()
                  for check in checks}
    assert check_modules <= registered, f"registering nothing: {sorted(check_modules - registered)}"
