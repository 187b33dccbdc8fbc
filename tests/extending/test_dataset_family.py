"""docs/extending.md's recipe for a dataset of one's own: one file (tests/extending/toy_dataset.py) registers its
family, found through REM_PLUGINS (tests/extending/test_recipes.py runs it through a real sweep -- its file fetched
from a mirror and verified like any dataset's -- and the report)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import yaml

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


# The family reads its own option from a params file: the splits it loads with `data.options.noise` are the stored
# images plus noise, the config row (what a trial records, and its MLflow run logs as params) carries the option, and
# a key it does not declare is one line naming the dataset and its options.
OPTIONS = {"noise": 20.0}
READ_OPTION = f"""
import sys
from pathlib import Path
import numpy as np
import rem.checks
from rem.config import ConfigError, load
from rem.data import get_dataset
from rem.data.loading import load_splits
from tests.extending.toy_dataset import FILE, write_npz

params, folder = sys.argv[1], Path(sys.argv[2])
generator = np.random.default_rng(0)
write_npz(folder / FILE, {{split: (generator.integers(60, 200, (n, 28, 28)), np.arange(n) % 4)
                          for split, n in {SIZES}.items()}})
noisy, plain = load(params), load(params, {{"data.options": {{}}}})
images = [load_splits(get_dataset("{NAME}"), folder, cfg.data).train.images.float() for cfg in (noisy, plain)]
print(noisy.flat()["data.options"], round(float((images[0] - images[1]).abs().mean())))
try:
    load(params, {{"data.options": {{"noise": 20.0, "nosie": 1}}}})
except ConfigError as err:
    print(err)
"""


def test_a_dataset_reads_its_own_option_from_the_params_file_and_refuses_an_undeclared_one(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"profile": "quick", "profiles": {"quick": {}},
                                      "data": {"dataset": NAME, "options": OPTIONS}}))
    done = subprocess.run([sys.executable, "-c", READ_OPTION, str(params), str(tmp_path / NAME)], cwd=REPO,
                          env=sweep_env(REM_PLUGINS=PLUGIN, PYTHONPATH=str(REPO)), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    recorded, error = done.stdout.splitlines()
    assert recorded == f"{OPTIONS} 16"  # |N(0, 20)| averages 20 * sqrt(2 / pi) = 16 pixel levels
    assert error == f"{params}: data.options.nosie is not an option of dataset '{NAME}'; its options: noise"
