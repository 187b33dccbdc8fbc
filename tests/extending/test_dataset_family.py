"""README's recipe for a dataset of one's own: one file (tests/extending/toy_dataset.py) registers its family, found
through REM_PLUGINS (tests/extending/test_recipes.py runs it through a real sweep -- its file fetched from a mirror and
verified like any dataset's -- and the report)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from tests.conftest import REPO
from tests.sweep_helpers import sweep_env

PLUGIN = "tests.extending.toy_dataset"  # imported by the processes that need it, never by this one's collection
NAME = "toy-npz"
SIZES = {"train": 400, "val": 100, "test": 200}


def toy_splits(images: np.ndarray, labels: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Four of synthetic-fashion's classes (generated pixels), cut into the toy's fixed splits."""
    keep = np.flatnonzero(labels < 4)
    out, start = {}, 0
    for split, n in SIZES.items():
        chosen = keep[start:start + n]
        out[split], start = (images[chosen], labels[chosen]), start + n
    return out


# Run where no test has imported the plugin: a name is found only through REM_PLUGINS, as in a trial's worker.
LOOK_UP = f"""
import os
from rem.config import Config, ConfigError
from rem.data import get_dataset, list_datasets
try:
    Config().with_overrides({{"data.dataset": "{NAME}"}})
except ConfigError as err:
    print(err)
os.environ["REM_PLUGINS"] = "{PLUGIN}"
print(Config().with_overrides({{"data.dataset": "{NAME}"}}).data.dataset, get_dataset("{NAME}").num_classes,
      "{NAME}" in list_datasets())
"""


def test_a_dataset_is_found_through_rem_plugins_and_an_unknown_one_is_one_line_naming_the_known_ones():
    env = sweep_env(PYTHONPATH=str(REPO))
    env.pop("REM_PLUGINS", None)
    done = subprocess.run([sys.executable, "-c", LOOK_UP], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    unknown, found = done.stdout.splitlines()
    assert f"dataset '{NAME}' is unknown; allowed: " in unknown and "fashion-mnist" in unknown
    assert unknown.endswith("imagefolder:<folder>")
    assert found == f"{NAME} 4 True"
