"""docs/extending.md's recipe for a pruning method of one's own (tests/extending/toy_pruning.py;
tests/extending/test_recipes.py runs it through a real sweep and the report): a name no module registered is one line
naming the known ones, and the method's own option (`prune.options.seed`, declared on its class) reaches its code
from a params file."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO
from tests.sweep_helpers import sweep_env

PLUGIN = "tests.extending.toy_pruning"  # imported by the processes that need it, never by this one's collection


def test_an_unregistered_method_is_one_line_naming_the_known_ones_and_the_plugin_variable():
    from rem.pruning import PruneConfig

    with pytest.raises(ValueError) as err:
        PruneConfig(method="no_such_method")
    assert "no_such_method" in str(err.value) and "REM_PLUGINS" in str(err.value) and "'rem'" in str(err.value)


# The method as a trial's pruner runs it, from the params file with its option set and with none: another draw, the
# same count; the config row (what a trial records, and its MLflow run logs as params) carries the option; a key it
# does not declare is one line naming the method and its options.
OPTIONS = {"seed": 7}
READ_OPTION = """
import sys
import torch
import rem.checks
from rem.config import ConfigError, load
from rem.models import create_model
from rem.pruning import Pruner

params = sys.argv[1]


def kept(cfg):
    model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=4, conv_channels=32, primary_types=8)
    pruner = Pruner(model, cfg.prune)
    pruner.at_start(model)
    return torch.cat([mask.flatten() for _, mask in sorted(pruner.masks.masks.items())])


seeded, plain = load(params), load(params, {"prune.options": {}})
drawn = [kept(cfg) for cfg in (seeded, plain)]
print(seeded.flat()["prune.options"], torch.equal(*drawn), int(drawn[0].sum()) == int(drawn[1].sum()))
try:
    load(params, {"prune.options": {"seed": 7, "fraction": 0.5}})
except ConfigError as err:
    print(err)
"""


def test_a_method_reads_its_own_option_from_the_params_file_and_refuses_an_undeclared_one(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"profile": "quick", "profiles": {"quick": {}}, "prune": {
        "method": "random", "target_sparsity": 0.5, "options": OPTIONS}}))
    done = subprocess.run([sys.executable, "-c", READ_OPTION, str(params)], cwd=REPO,
                          env=sweep_env(REM_PLUGINS=PLUGIN, PYTHONPATH=str(REPO)), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    recorded, error = done.stdout.splitlines()
    assert recorded == f"{OPTIONS} False True"  # another draw of as many weights
    assert error == f"{params}: prune.options.fraction is not an option of pruning method 'random'; its options: seed"
