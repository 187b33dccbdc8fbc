"""Settings that moved from flat `data.*` keys into their dataset family's own `data.options` (issue 45): what was
written before the move still reads, through the one module that knows old keys (`rem.config.stored`), which the
live config path never imports; a params file with an old key gets one line naming the new one (that line:
tests/data/test_families.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rem.checks  # noqa: F401  (every package's checks: smallNORB's and affNIST's options among them)
from rem.config import Config, ConfigError, DataConfig, from_dict, from_stored
from rem.config.stored import MOVED
from rem.results.variants import arm_run_names
from tests.conftest import REPO

OLD_DATA = {"affnist_shift": 6, "norb_split": "standard", "norb_size": 48, "norb_crop": 32, "norb_brightness": 0.125,
            "norb_contrast": [0.5, 1.5]}  # the data keys as every stored config before the move has them
OLD_PRUNE = {"snip_batches": 1, "capsule_fraction": 0.0, "capsule_criterion": "weight_norm", "capsule_rule": "fraction"}


def stored_before_the_move(dataset: str, **data) -> dict:
    tree = Config().to_dict()
    del tree["data"]["options"]  # the section had no options then
    tree["data"].update(OLD_DATA, dataset=dataset, **data)
    return tree


def test_a_config_stored_before_the_move_reads_its_settings_as_options():
    assert from_stored(stored_before_the_move("fashion-mnist"), "old").data == DataConfig()  # unread: dropped
    affnist = from_stored(stored_before_the_move("affnist", affnist_shift=4, norb_crop=28), "old checkpoint")
    assert affnist.data.options == {"shift": 4}  # smallNORB's crop was never read by an affNIST trial
    norb = from_stored(stored_before_the_move("smallnorb", norb_split="azimuth", norb_size=40, norb_crop=28), "old")
    assert norb.data.options == {"split": "azimuth", "size": 40, "crop": 28}  # the defaults stay defaults


def test_an_old_key_is_one_line_naming_its_new_place_and_never_part_of_a_config():
    assert set(MOVED) == {f"data.{k}" for k in OLD_DATA} | {f"prune.{k}" for k in OLD_PRUNE}
    with pytest.raises(ConfigError) as err:
        from_dict(stored_before_the_move("smallnorb", norb_crop=28), "params.yaml")
    assert "\n" not in str(err.value) and "data.affnist_shift' was replaced by data.options.shift" in str(err.value)
    assert not {key.partition(".")[2] for key in MOVED} & set(Config().flat())  # the digest hashes today's keys


def assert_never_imports_old_keys(code: str) -> None:
    """`code`, run in a fresh interpreter, leaves the module that knows old keys unimported."""
    code += "\nimport sys\nassert 'rem.config.stored' not in sys.modules, 'imported'\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_live_config_path_does_not_import_what_reads_old_keys():
    """Loading params.yaml, every profile, building a model and naming the sweep: no old key is looked up."""
    assert_never_imports_old_keys(
        "import rem.checks\n"
        "from rem.config import load\n"
        "from rem.data.registry import get_dataset\n"
        "from rem.models.from_config import build_model\n"
        "for profile in ('quick', 'paper', 'evidence', 'horizon', 'horizon_gamma', 'confirm_gamma',\n"
        "                'deepcaps_routing', 'gpu_horizon', 'routing', 'claims'):\n"
        "    cfg = load('params.yaml', {'profile': profile})\n"
        "    cfg.digest()\n"
        "    build_model(cfg, get_dataset(cfg.data.dataset))\n")


def test_labelling_arms_never_imports_what_reads_old_keys():
    """Arms are labelled from today's keys: a table was upgraded where it was read (test_older_tables.py)."""
    assert_never_imports_old_keys(
        "from rem.results.variants import arm_of\n"
        "from rem.results.arms import compared_keys\n"
        "row = {'prune.method': 'capsules', 'prune.options': '{\"fraction\": 0.25}', 'model.name': 'capsnet'}\n"
        "assert arm_of(row).label == '+CAPS 25%'\n"
        "compared_keys(['data.dataset', 'train.lr'])\n")


def test_smallnorbs_protocols_are_tables_not_arms():
    cfg = Config().with_overrides({"data.dataset": "smallnorb"})
    points = [{"data.options": {"split": split}, "train.seed": 42} for split in ("standard", "azimuth", "elevation")]
    names = sorted(name["run_name"] for name in arm_run_names(cfg, points).values())
    assert names == ["capsnet·smallnorb (azimuth)·+Q·s42", "capsnet·smallnorb (elevation)·+Q·s42",
                     "capsnet·smallnorb·+Q·s42"]
    sized = [{"data.options": options, "train.seed": 42} for options in ({}, {"size": 40})]  # another option: an arm
    assert sorted(name["arm"] for name in arm_run_names(cfg, sized).values()) == ["+Q", "+Q · size=40"]


def test_capsule_pruning_and_snip_read_their_moved_settings_as_options():
    tree = Config().to_dict()
    tree["prune"].update(method="capsules", capsule_fraction=0.5, capsule_criterion="sensitivity",
                         capsule_rule="fraction", snip_batches=1)
    del tree["prune"]["options"]
    assert from_stored(tree, "old checkpoint").prune.options == {"fraction": 0.5, "criterion": "sensitivity"}
    tree["prune"].update(method="snip", snip_batches=3, target_sparsity=0.5)
    assert from_stored(tree, "old checkpoint").prune.options == {"batches": 3}  # capsules' were unread


def test_a_retired_key_is_dropped_from_a_stored_config():
    """A key replaced by one of another meaning holds nothing today's config can read: the checkpoint still loads."""
    tree = Config().to_dict()
    tree["prune"]["min_step_weights"], tree["train"]["log_every_steps"] = 64, 50
    assert from_stored(tree, "old checkpoint") == Config()
