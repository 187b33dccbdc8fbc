"""The experiment the profiles run: rem.results.grid's expansion, the quick and paper grids, and what DVC tracks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rem import config
from rem.config import TRIAL_SECTIONS, ConfigError, load
from rem.models import has_routing
from rem.results import grid
from tests.conftest import REPO


def test_a_mapping_is_a_product_and_a_list_is_a_union_of_products():
    assert grid.points({"model.name": ["a", "b"], "train.seed": [1, 2]}) == [
        {"model.name": "a", "train.seed": 1}, {"model.name": "a", "train.seed": 2},
        {"model.name": "b", "train.seed": 1}, {"model.name": "b", "train.seed": 2}]
    union = grid.points([{"model.name": ["a"], "train.seed": [1]}, {"model.name": ["b", "a"], "train.seed": [1]}])
    assert union == [{"model.name": "a", "train.seed": 1}, {"model.name": "b", "train.seed": 1}]  # (a, 1) runs once


def test_a_section_axis_sets_its_keys_together_and_dict_values_of_a_key_stay_whole():
    points = grid.points({"prune": [{"method": "none"}, {"method": "imp", "target_sparsity": 0.5}],
                          "model.options": [{"conv_channels": 16}]})
    assert points == [
        {"prune.method": "none", "model.options": {"conv_channels": 16}},
        {"prune.method": "imp", "prune.target_sparsity": 0.5, "model.options": {"conv_channels": 16}}]
    assert grid.trial_key(points[1]) == 'model.options={"conv_channels": 16},prune.method=imp,prune.target_sparsity=0.5'
    assert grid.axes([{"prune": [{"method": "rem"}]}, {"train.seed": [1]}]) == ["prune.method", "train.seed"]


@pytest.mark.parametrize("bad,message", [
    ({"train.seed": 42}, r"sweep.grid.train.seed must be a non-empty list; got 42"),
    ({"prune": ["rem"]}, r"sweep.grid.prune: each choice of a section axis is a mapping"),
    ({"prune": [{"method": "rem"}], "prune.method": ["none"]}, r"key prune.method is set by two axes"),
    ([], r"sweep.grid must name at least one axis"),
    ("capsnet", r"sweep.grid must be a mapping of axes or a list of such mappings; got str"),
])
def test_grid_shape_errors_name_the_axis(bad, message):
    with pytest.raises(grid.GridError, match=message):
        grid.points(bad)


def test_every_grid_point_is_validated_as_a_config():
    with pytest.raises(ConfigError, match=r"sweep.grid: .*method='nope' is not one of"):
        load(REPO / "params.yaml", {"sweep.grid": [{"prune": [{"method": "nope"}]}]})
    with pytest.raises(ConfigError, match=r"prune.schedule_epochs 2 must be < train.epochs 2"):
        load(REPO / "params.yaml", {"sweep.grid": {"prune": [{"method": "imp", "target_sparsity": 0.5,
                                                              "schedule_epochs": 2}]}})


def _arms(cfg) -> dict[str, set]:
    """model -> the set of (method, target) it runs, over the grid."""
    arms: dict[str, set] = {}
    for point in grid.points(cfg.sweep.grid):
        trial = cfg.with_overrides(point)
        arms.setdefault(trial.model.name, set()).add((trial.prune.method, trial.prune.target_sparsity))
    return arms


def test_the_quick_profile_exercises_every_axis_of_the_experiment():
    cfg = load(REPO / "params.yaml")
    # REM searches twice
    assert cfg.profile == "quick" and cfg.data.dataset == "fashion-mnist" and cfg.train.epochs >= 2
    arms = _arms(cfg)
    assert {"capsnet", "efficient_capsnet"} <= set(arms)
    for model, runs in arms.items():  # every capsule model +Q against +REM; the CNN baseline unpruned
        assert {m for m, _ in runs} >= ({"none", "rem"} if has_routing(model) else {"none"}), model
    assert any(not has_routing(model) for model in arms)  # the CNN row robustness is compared against
    assert cfg.eval.robustness and {"rotation", "affnist"} <= set(cfg.eval.robust_families)
    assert any(m == "capsules" for m, _ in arms["capsnet"])  # whole capsules removed, the net rebuilt smaller
    ablation = arms["efficient_capsnet"]
    assert len({t for m, t in ablation if m == "imp"}) >= 2 and any(m == "snip" for m, _ in ablation)
    seeds = grid.values_of(cfg.sweep.grid, "train.seed", cfg.train.seed)
    assert len(seeds) >= 2  # the tables show a spread over seeds


def test_the_paper_profile_is_rems_protocol_whole():
    cfg = load(REPO / "params.yaml", {"profile": "paper"})
    assert cfg.train.patience == 200 and cfg.train.epochs > cfg.train.patience  # epochs: a cap only
    assert (cfg.train.batch_size, cfg.train.lr, cfg.train.lr_decay, cfg.train.precision) == (128, 1e-3, 0.99, "fp32")
    assert cfg.data.augment and cfg.data.val_size == 5500 and cfg.data.train_subset == 0
    datasets = {"mnist", "fashion-mnist", "svhn", "cifar10", "affnist", "smallnorb"}
    models = {"capsnet", "gamma_capsnet", "deepcaps", "efficient_capsnet"}
    covered: dict[tuple, set] = {}
    for point in grid.points(cfg.sweep.grid):
        trial = cfg.with_overrides(point)
        cell = (trial.model.name, trial.data.dataset, trial.prune.method)
        covered.setdefault(cell, set()).add(trial.train.seed)
        if trial.model.name == "deepcaps":
            assert trial.train.hard_margin_epoch == 100  # REM's DeepCaps setting
        if trial.prune.method == "imp":
            assert trial.prune.schedule_epochs and trial.prune.schedule_epochs < trial.train.epochs
    for model in models:
        for dataset in datasets:
            for method in ("none", "rem"):
                assert covered.get((model, dataset, method)) == {42, 43, 44, 45, 46}, (model, dataset, method)
    assert {m for (_, _, m) in covered} == {"none", "rem", "imp", "snip"}
    # + the routing ablation (2 models x 2 datasets x 3 iteration counts x 5 seeds), the decoder (2 datasets x +Q,
    # +REM x 5) and the CNN baselines (2 x 3 datasets x 5): 350 + 60 + 20 + 30
    assert len(grid.points(cfg.sweep.grid)) == 460
    ablations = {(cfg.with_overrides(p).model.name, cfg.with_overrides(p).model.routing_iterations)
                 for p in grid.points(cfg.sweep.grid)}
    assert {("capsnet", n) for n in (1, 2, 3, 5)} <= ablations
    assert {("gamma_capsnet", n) for n in (1, 2, 3, 5)} <= ablations
    assert {"cnn_sabour", "cnn_matched"} <= {m for m, _ in ablations} and cfg.eval.robustness
    assert cfg.eval.levels_for("gamma_capsnet") == 6 and cfg.eval.levels_for("capsnet") == 11
    assert cfg.sweep.gpus_per_trial == 0.25 and cfg.sweep.resources_per_model["deepcaps"]["gpu"] == 0.5


def _env() -> dict:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "DVC_NO_ANALYTICS": "1"}


def test_the_fetch_stage_resolves_each_profiles_datasets():
    def listed(*args):
        out = subprocess.run([sys.executable, "-m", "pipeline.fetch", "--list", *args], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout
        return out.split()

    assert listed() == ["fashion-mnist"]
    assert sorted(listed("-S", "profile=paper")) \
        == sorted(["mnist", "fashion-mnist", "svhn", "cifar10", "affnist", "smallnorb"])


def test_dvc_resolves_the_paper_profiles_stages_without_training(tmp_path):
    """`dvc repro --dry` on a copy whose params select `paper`: the three stages run, with their commands."""
    from tests.pipeline.test_pipeline_e2e import copy_repo

    repo = copy_repo(tmp_path / "repo")
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["profile"] = "paper"
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "data" / "raw").mkdir(parents=True)  # a dry run does not create the fetch stage's output
    # up to the sweep: a dry run stops at the report, whose input (the sweep's table) does not exist yet
    proc = subprocess.run(["dvc", "repro", "--dry", "sweep"], cwd=repo, env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ran = [line.split("'")[1] for line in proc.stdout.splitlines() if line.startswith("Running stage")]
    assert ran == ["fetch", "sweep"]
    assert "> python -m pipeline.fetch" in proc.stdout and "> python -m pipeline.sweep" in proc.stdout
    dag = subprocess.run(["dvc", "dag", "--md"], cwd=repo, env=_env(), capture_output=True, text=True,
                         check=True).stdout
    names = dict(re.findall(r'(node\d+)\["(\w+)"\]', dag))
    edges = {(names[a], names[b]) for a, b in re.findall(r"(node\d+)-->(node\d+)", dag)}
    assert edges == {("fetch", "sweep"), ("sweep", "report")}


def test_the_sweep_stage_depends_on_every_section_that_changes_a_trial():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    params = set(stages["sweep"]["params"])
    assert set(TRIAL_SECTIONS) | {"profile", "profiles", "sweep"} <= params
    assert {"profile", "profiles", "fetch", "data", "sweep"} <= set(stages["fetch"]["params"])


def test_no_committed_file_holds_a_machine_path():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    offenders = []
    for name in files:
        path = REPO / name
        if name.startswith("tests/") or not path.is_file() or path.suffix in (".png", ".parquet", ".gz"):
            continue
        text = path.read_text(errors="ignore")
        for root in ("/work/", "/home/", "/root/", "/tmp/"):
            if root in text:
                offenders.append(f"{name}: {root}")
    assert offenders == []
    # reports/ is the pipeline's output; only the published runs are committed (tests/report/test_evidence.py,
    # test_claims.py, test_routing_study.py)
    published = ("reports/evidence/", "reports/claims/", "reports/routing/")
    assert "dvc.lock" not in files and not any(f.startswith("reports/") and not f.startswith(published) for f in files)


def test_matched_controls_run_after_their_reference_with_its_reached_sparsity():
    points = grid.points({"model.name": ["capsnet"], "train.seed": [1, 2],
                          "prune": [{"method": "rem"}, {"method": "none"}, {"method": "imp", "target_from": "rem"}]})
    first, matched = grid.split_matched(points)
    assert [p["prune.method"] for p in first] == ["rem", "none", "rem", "none"]
    control = next(p for p in points if p.get("prune.target_from") and p["train.seed"] == 2)
    assert matched[grid.trial_key(control)] == {"model.name": "capsnet", "train.seed": 2, "prune.method": "rem"}
    resolved = grid.resolve_matched(control, 0.3123456789)
    assert resolved["prune.target_sparsity"] == 0.312346 and resolved["prune.method"] == "imp"


def test_a_matched_control_without_exactly_one_reference_is_refused_before_any_trial():
    raw = {"sweep": {"grid": {"model.name": ["capsnet"], "prune": [{"method": "imp", "target_from": "rem"}]}}}
    with pytest.raises(ConfigError, match=r"matches 0 trials pruned by 'rem'"):
        config.from_dict(raw)
    with pytest.raises(ConfigError, match=r"target_from='snip' must be 'rem'"):
        config.from_dict({"prune": {"method": "imp", "target_from": "snip"}})


def test_a_single_run_of_a_matched_control_needs_its_target():
    from rem.models import create_model
    from rem.pruning import PruneConfig, Pruner

    model = create_model("efficient_capsnet", in_shape=(1, 28, 28), num_classes=10)
    with pytest.raises(ValueError, match=r"sweep sets prune.target_sparsity from the matching rem trial"):
        Pruner(model, PruneConfig(method="imp", target_from="rem"))
    assert Pruner(model, PruneConfig(method="imp", target_from="rem", target_sparsity=0.25)).cfg.target_sparsity == 0.25


def test_a_control_on_one_tensor_is_matched_on_that_tensors_sparsity():
    """+IMP@REM W only prunes W to the sparsity +REM W only reached on W, not to its sparsity over all weights."""
    from pipeline.sweep import reached_sparsity

    points = grid.points({"model.name": ["capsnet"], "prune": [
        {"method": "rem", "threshold_tensors": ["votes.weight"]},
        {"method": "imp", "target_from": "rem", "threshold_tensors": ["votes.weight"]}]})
    _, matched = grid.split_matched(points)
    reference = next(iter(matched.values()))
    assert grid.matched_column(reference) == "sparsity/votes.weight"
    table = pd.DataFrame({"trial_key": [grid.trial_key(reference)] * 2, "status": ["FINISHED"] * 2, "epoch": [1, 2],
                          "sparsity": [5.0, 6.0], "sparsity/votes.weight": [40.0, 61.5]})
    assert reached_sparsity(table, reference) == pytest.approx(0.615)
    several = {"method": "imp", "target_from": "rem", "threshold_tensors": ["votes.weight", "conv1.weight"]}
    with pytest.raises(grid.GridError, match=r"matched on 2 tensors"):
        grid.split_matched(grid.points({"model.name": ["capsnet"], "prune": [
            {"method": "rem", "threshold_tensors": ["votes.weight", "conv1.weight"]}, several]}))
