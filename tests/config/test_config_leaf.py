"""rem.config is a leaf when imported: it builds and type-checks a config without torch or any other package of rem.
Its loaders (`load`, `resolve`, `load_from_args`, `from_dict`) import the registries' checks when they are called
(`rem.checks`), so a loaded config is always a checked one, whatever the caller imported first."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

PARAMS = str(REPO / "params.yaml")

OTHERS = """
import sys
def others():
    return sorted(m for m in sys.modules if m == "torch" or (m.startswith("rem.") and not m.startswith("rem.config")))
"""

LEAF = OTHERS + """
import rem.config
from rem.config.root import build_config
rem.config.Config()
build_config({"train": {"epochs": 2}, "model": {"name": "capsnet"}}, "x")  # type-checked, not yet checked across
print(others())
rem.config.load(%r, {"profile": "quick"})
print("rem.checks" in others(), "torch" in others())
"""


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_importing_and_building_a_config_imports_neither_torch_nor_another_package_and_loading_imports_the_checks():
    proc = run(LEAF % PARAMS)
    assert proc.returncode == 0, proc.stderr[-2000:]
    built, loaded = proc.stdout.strip().splitlines()
    assert built == "[]", f"importing rem.config or building a config loaded {built}"
    assert loaded == "True True", "loading a config registers every package's checks (rem.checks, which needs torch)"


REFUSED = """
from rem.config import ConfigError, {loader}
try:
    {call}
    print("accepted")
except ConfigError as err:
    print(err)
"""


@pytest.mark.parametrize("loader,call", [
    ("load", f"load({PARAMS!r}, {{'model.name': 'no_such_model'}})"),
    ("from_dict", "from_dict({'model': {'name': 'no_such_model'}}, 'x.yaml')"),
    ("resolve", "resolve({'profiles': {'quick': {}}, 'model': {'name': 'no_such_model'}}, source='x.yaml')"),
])
def test_a_fresh_interpreters_loader_refuses_an_unknown_model_in_one_line(loader, call):
    """Nothing imported but the loader: the model registry is still asked (no `import rem.checks` first)."""
    proc = run(REFUSED.format(loader=loader, call=call))
    assert proc.returncode == 0, proc.stderr[-2000:]
    source = PARAMS if loader == "load" else "x.yaml"
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{source}: model.name 'no_such_model' is unknown; allowed: "
                                                   "capsnet"), proc.stdout
