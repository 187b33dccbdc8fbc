"""docs/extending.md's recipe for an architecture of one's own: one file (tests/extending/toy_architecture.py)
registers the family -- its builder, routing and roles in one decorator -- and ends in the shared class-capsule head.
A trial finds it only through REM_PLUGINS, and its own option reaches the model from the params file and the trial's
record (the config MLflow logs as the run's params). Never imported by this process: the families other tests list
stay the built-in ones."""

from __future__ import annotations

import subprocess
import sys

import torch
import yaml

from rem.config.root import flatten
from rem.training.checkpoint import CHECKPOINT_FILE, trial_checkpoint_dir
from tests.conftest import REPO
from tests.sweep_helpers import sweep_env, write_params

PLUGIN = "tests.extending.toy_architecture"
NAME = "flat_capsnet"
OPTIONS = {"capsules": 12}  # the toy's own option (its default is 16)


def params_for_the_toy(folder, raw_root):
    """The repo's params (quick profile, shrunk, on synthetic-fashion) with the toy as the model."""
    params = write_params(folder, raw_root, grid={"train.seed": [42]}, name="architecture", train_subset=128)
    tree = yaml.safe_load(params.read_text())
    tree["model"].update({"name": NAME, "options": OPTIONS})
    params.write_text(yaml.safe_dump(tree, sort_keys=False))
    return params


def rem_train(params, workdir, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rem.cli", "train", "--params", str(params), "--workdir",
                           str(workdir)],
                          cwd=workdir.parent, env=env, capture_output=True, text=True, timeout=600)


def test_an_unregistered_architecture_is_one_line_naming_the_known_ones_and_the_plugin_variable(synthetic_raw,
                                                                                                tmp_path):
    env = sweep_env(PYTHONPATH=str(REPO))
    env.pop("REM_PLUGINS", None)
    done = rem_train(params_for_the_toy(tmp_path, synthetic_raw), tmp_path / "trial", env)
    assert done.returncode == 2
    error = done.stderr.strip().splitlines()[-1]
    assert f"model.name '{NAME}' is unknown; allowed: " in error and "capsnet" in error and "REM_PLUGINS" in error


def test_an_architecture_found_through_rem_plugins_trains_with_its_own_option_from_the_params_file(
        synthetic_raw, tmp_path):
    env = sweep_env(REM_PLUGINS=PLUGIN, PYTHONPATH=str(REPO))
    done = rem_train(params_for_the_toy(tmp_path, synthetic_raw), tmp_path / "trial", env)
    assert done.returncode == 0, done.stderr[-3000:]
    state = torch.load(trial_checkpoint_dir(tmp_path / "trial") / CHECKPOINT_FILE, map_location="cpu",
                       weights_only=False)
    weights = state["model"]
    assert weights["votes.weight"].shape == (12, 10, 16, 8)  # 12 primary capsules (the option) x 10 classes
    assert weights["routing_bias"].shape == (10, 16)  # its registered routing (dynamic) takes a per-parent bias
    assert flatten(state["config"])["model.options"] == OPTIONS  # what the trial's MLflow run logs as its params
    assert state["history"][-1]["routing/coupling_entropy"] > 0  # it routes: couplings measured like any capsule net
