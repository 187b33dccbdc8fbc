"""rem.config is a true leaf: it builds, loads and type-checks params.yaml without torch or any other package of rem,
and the checks that need one are registered by that package (`import rem.checks` registers them all)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

LEAF = """
import sys
import rem.config
rem.config.Config()
cfg = rem.config.load({params!r}, {{"profile": "quick"}})
loaded = sorted(m for m in sys.modules if m == "torch" or (m.startswith("rem.") and not m.startswith("rem.config")))
print(loaded)
"""


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_building_and_loading_a_config_imports_neither_torch_nor_another_package_of_rem():
    proc = run(LEAF.format(params=str(REPO / "params.yaml")))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", f"rem.config loaded {proc.stdout.strip()}"


def test_the_packages_checks_run_once_registered():
    code = ("import rem.config\n{setup}\ntry:\n    rem.config.load({params!r}, {{'model.name': 'nope'}})\n"
            "    print('accepted')\nexcept rem.config.ConfigError as err:\n    print(err)\n")
    params = str(REPO / "params.yaml")
    # the config alone knows no model names: which models exist is the models package's to say
    assert run(code.format(setup="", params=params)).stdout.strip() == "accepted"
    checked = run(code.format(setup="import rem.checks", params=params)).stdout.strip()
    assert checked.startswith(f"{params}: model.name 'nope' is unknown; allowed: capsnet"), checked
