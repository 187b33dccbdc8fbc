"""One way to declare options, for every kind of registry entry (`rem.config.options`): a model family, a routing, a
dataset family, a pruning method and a report table, each registered from a module outside `rem/` (the toys here,
found through REM_PLUGINS) with a frozen options dataclass. One params file sets all five; loading it checks them,
and each entry receives an instance of its dataclass holding the values set, every other at its default. A key an
entry does not declare is refused when the params are read, in one line naming the entry and its options.

The model is also where the config meets a constructor: `build_model(cfg)` -> `create_model(name, ...)` (which reads
the options into the family's dataclass) -> the family's `__init__(in_shape, num_classes, options, ...)`. The test
counts those calls (at most five)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO
from tests.sweep_helpers import sweep_env

PLUGINS = ",".join(f"tests.extending.toy_{kind}" for kind in ("architecture", "routing", "dataset", "pruning", "table"))
PARAMS = {"profile": "quick", "profiles": {"quick": {}},
          "model": {"name": "flat_capsnet", "options": {"capsules": 12}, "routing": "uniform",
                    "routing_options": {"sharpness": 2.0}},
          "data": {"dataset": "toy-npz", "options": {"noise": 8.0}},
          "prune": {"method": "random", "target_sparsity": 0.5, "options": {"seed": 7}},
          "report": {"options": {"trials-per-arm": {"decimals": 3}}},
          "sweep": {"grid": {"train.seed": [42]}}}  # the default grid's points are CapsNet's
# What each entry receives: its dataclass, the values set and the defaults of the rest
RECEIVED = {"model": "FlatOptions(capsules=12, capsule_dim=8, class_dim=16)",
            "routing": "UniformOptions(sharpness=2.0)", "data": "NpzOptions(noise=8.0)",
            "prune": "RandomOptions(seed=7)",
            "report": "TrialsPerArmOptions(decimals=3)"}
# A key no entry declares, and the one line that refuses it
REFUSED = {
    "model.options": ({"capsules": 12, "capsule": 3}, "model.options.capsule is not an option of model 'flat_capsnet'; "
                                                      "its options: capsules, capsule_dim, class_dim"),
    "model.routing_options": ({"sharp": 1.0}, "model.routing_options.sharp is not an option of routing 'uniform'; "
                                              "its options: sharpness"),
    "data.options": ({"nois": 1.0}, "data.options.nois is not an option of dataset 'toy-npz'; its options: noise"),
    "prune.options": ({"sed": 1}, "prune.options.sed is not an option of pruning method 'random'; its options: seed"),
    "report.options": ({"trials-per-arm": {"decimal": 2}}, "report.options.trials-per-arm.decimal is not an option "
                                                           "of report table 'trials-per-arm'; its options: decimals"),
}

READ_ALL = """
import dataclasses, inspect, json, sys
import pandas as pd
import torch
import rem.checks
from rem.config import ConfigError, load
from rem.data import get_dataset
from rem.data.registry import get_family
from rem.models.from_config import build_model
from rem.pruning.methods.registry import get_method
from rem.report.registry import Context
from rem.routing import ROUTINGS
from rem.routing.registry import Routing
from tests.extending import toy_architecture, toy_routing

params, refused = sys.argv[1], json.loads(sys.argv[2])
cfg = load(params)
out = {"refused": {}}
build = toy_architecture.FlatCapsNet.__init__


def init(self, in_shape, num_classes, options, **head):  # stands in for the family's __init__, as it is called
    calls = [frame.function for frame in inspect.stack()[1:]]
    out["model"], out["chain"] = repr(options), [*reversed(calls[:calls.index("build_model") + 1]), "__init__"]
    build(self, in_shape, num_classes, options, **head)


def route(*args, **keywords):  # the routing's call: its options arrive as keywords
    out["routing"] = repr(toy_routing.UniformOptions(**{k: keywords[k] for k in ("sharpness",)}))
    return toy_routing.uniform_routing(*args, **keywords)


toy_architecture.FlatCapsNet.__init__ = init
ROUTINGS._entries["uniform"] = dataclasses.replace(ROUTINGS.get("uniform"), route=route)
model = build_model(cfg, get_dataset(cfg.data.dataset))
model(torch.rand(2, 1, 28, 28))
out["capsules"] = model.votes.weight.shape[0]
out["data"] = repr(get_family(cfg.data.dataset).options_of(cfg.data))
out["prune"] = repr(get_method(cfg.prune.method).options_of(cfg.prune))
out["report"] = repr(Context(pd.DataFrame(), cfg.report.options).options_of("trials-per-arm"))
for key, value in refused.items():
    try:
        load(params, {key: value})
    except ConfigError as err:
        out["refused"][key] = str(err)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def read(tmp_path_factory) -> dict:
    params = tmp_path_factory.mktemp("options") / "params.yaml"
    params.write_text(yaml.safe_dump(PARAMS, sort_keys=False))
    refused = {key: value for key, (value, _) in REFUSED.items()}
    done = subprocess.run([sys.executable, "-c", READ_ALL, str(params), json.dumps(refused)], cwd=REPO,
                          env=sweep_env(REM_PLUGINS=PLUGINS, PYTHONPATH=str(REPO)), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return {"params": str(params), **json.loads(done.stdout.splitlines()[-1])}


@pytest.mark.parametrize("kind", list(RECEIVED))
def test_each_kind_of_entry_receives_its_options_dataclass_with_the_values_the_params_set(read, kind):
    assert read[kind] == RECEIVED[kind]


def test_the_model_is_built_with_its_options_in_at_most_five_calls_from_the_config(read):
    assert read["capsules"] == 12
    assert read["chain"] == ["build_model", "create_model", "__init__"] and len(read["chain"]) <= 5


@pytest.mark.parametrize("key", list(REFUSED))
def test_an_undeclared_key_is_refused_in_one_line_naming_the_entry_and_its_options(read, key):
    assert read["refused"][key] == f"{read['params']}: {REFUSED[key][1]}"
