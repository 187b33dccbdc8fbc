"""What the GPU scripts' tests share: an environment in which Ray, MLflow and DVC cannot be imported (the scripts
run on a machine that has none of them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

BLOCKED = ("ray", "mlflow", "dvc")


@pytest.fixture
def without_ray_mlflow_dvc(tmp_path):
    """An environment whose Python processes cannot import Ray, MLflow or DVC (a sitecustomize on PYTHONPATH)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"import sys\nfor name in {BLOCKED!r}:\n    sys.modules[name] = None\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    probe = subprocess.run([sys.executable, "-c", "import mlflow"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr  # the block holds
    return env
