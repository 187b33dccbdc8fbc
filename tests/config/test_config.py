"""params.yaml validation: unknown or ill-typed keys fail before any work, naming the key and what is allowed."""

from __future__ import annotations

import pytest
import yaml

from rem.config import ConfigError, load, parse_override, resolve
from rem.config.loading import SAFE_LOADER
from rem.results import grid
from tests.conftest import REPO


def test_repo_params_resolve_for_both_profiles():
    quick = load(REPO / "params.yaml")
    assert quick.profile == "quick" and quick.train.epochs >= 1
    assert len(grid.values_of(quick.sweep.grid, "train.seed", quick.train.seed)) >= 2
    paper = load(REPO / "params.yaml", {"profile": "paper"})
    assert paper.train.precision == "fp32"
    assert grid.values_of(paper.sweep.grid, "train.seed", paper.train.seed) == [42, 43, 44, 45, 46]
    assert paper.data.train_subset == 0  # the published protocol trains on every image


@pytest.mark.parametrize("override,pattern", [
    ({"train.epoch": 3}, r"unknown key 'train.epoch'; allowed: epochs"),
    ({"train.epochs": "two"}, r"train.epochs must be an integer \(int\); got 'two' \(str\)$"),
    ({"train.precision": "fp16"}, r"train.precision must be one of auto, fp32, bf16; got 'fp16'"),
    ({"model.name": "capsnett"}, r"model.name 'capsnett' is unknown; allowed: .*capsnet"),
    ({"data.dataset": "imagenet"}, r"dataset 'imagenet' is unknown; allowed: .*fashion-mnist"),
    ({"data.augment": "yes"}, r"data.augment must be true or false"),
    ({"sweep.grid": {"train.seed": [1, "x"]}}, r"sweep.grid: train.seed must be an integer \(int\); got 'x'"),
    ({"sweep.grid": {"model.name": ["capsnet", "nope"]}}, r"sweep.grid: model.name 'nope' is unknown"),
    ({"sweep.grid": {"train.seed": []}}, r"sweep.grid.train.seed must be a non-empty list"),
    ({"trian.epochs": 1}, r"unknown key 'trian.epochs'"),
    ({"prune.min_step_weights": 64}, r"key 'prune.min_step_weights' was replaced by prune.search_tolerance_pp"),
    ({"profile": "fast"}, r"profile 'fast' is not defined; defined profiles: quick, paper"),
    ({"model.routing_iterations": 0}, r"model.routing_iterations must be >= 1; got 0"),
    ({"sweep.grid": {"model.routing_iterations": [1, 0]}}, r"model.routing_iterations must be >= 1; got 0"),
    ({"eval.robust_families": {"rotation": [0, 90, 200]}},
     r"eval.robust_families.rotation: strength 200 is out of range; expected degrees in \[-180, 180\]$"),
    ({"eval.robust_families": {"zoom": [1.0]}}, r"eval.robust_families: unknown family 'zoom'; known: rotation"),
])
def test_bad_params_are_named(override, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load(REPO / "params.yaml", override)


def test_unknown_top_level_key_in_file(tmp_path):
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    raw["trainer"] = {"epochs": 1}
    with pytest.raises(ConfigError, match="unknown top-level key 'trainer'"):
        resolve(raw, source="x.yaml")


def test_digest_ignores_report_settings_but_not_training():
    base = load(REPO / "params.yaml")
    assert base.digest() == base.with_overrides({"report.out_dir": "elsewhere", "sweep.verbose": 0}).digest()
    assert base.digest() != base.with_overrides({"train.lr": 0.01}).digest()


def test_parse_override():
    assert parse_override("train.epochs=3") == ("train.epochs", 3)
    assert parse_override("sweep.grid={train.seed: [1, 2]}") == ("sweep.grid", {"train.seed": [1, 2]})
    with pytest.raises(ConfigError, match="key=value"):
        parse_override("train.epochs")


def test_sweep_scheduler_and_resources_come_from_params():
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    from pipeline.sweep import resources, scheduler

    cfg = load(REPO / "params.yaml", {"train.epochs": 4})
    assert isinstance(scheduler(cfg), FIFOScheduler)  # every table cell needs its full run
    asha = scheduler(cfg.with_overrides({"sweep.scheduler": "asha", "sweep.asha_grace_epochs": 2}))
    assert isinstance(asha, ASHAScheduler) and asha._max_t == 4 and asha._metric == "val/loss"
    assert resources(cfg) == {"cpu": 1.0, "gpu": 0.0}
    per_model = resources(cfg.with_overrides({"sweep.resources_per_model": {"deepcaps": {"cpu": 4, "gpu": 1}},
                                              "sweep.gpus_per_trial": 0.25}))
    assert per_model({"point": {"model.name": "deepcaps"}}) == {"cpu": 4, "gpu": 1}
    assert per_model({"point": {"model.name": "capsnet"}}) == {"cpu": 1.0, "gpu": 0.25}
    with pytest.raises(ConfigError, match="resources_per_model.nope"):
        load(REPO / "params.yaml", {"sweep.resources_per_model": {"nope": {"cpu": 1}}})


def test_a_bare_yaml_on_or_off_is_the_setting_not_a_boolean(tmp_path):
    """YAML 1.1 reads `flip: off` as False, and DVC's `-S` rewrites params.yaml with such values unquoted."""
    path = tmp_path / "params.yaml"
    path.write_text("data:\n  flip: off\nprofile: quick\nprofiles: {quick: {}}\n")
    assert load(path).data.flip == "off"
    path.write_text("data:\n  flip: on\nprofile: quick\nprofiles: {quick: {}}\n")
    assert load(path).data.flip == "on"


def test_params_files_load_with_libyaml_to_the_trees_pyyamls_own_parser_gives():
    """The loader reads params.yaml with libyaml's parser (PyYAML's wheels carry it): the repo's params and every
    YAML file under pipeline/ parse to the same tree as with PyYAML's pure-Python SafeLoader."""
    assert SAFE_LOADER is yaml.CSafeLoader
    files = [REPO / "params.yaml", *sorted((REPO / "pipeline").rglob("*.yaml"))]
    for path in files:
        text = path.read_text()
        assert yaml.load(text, Loader=SAFE_LOADER) == yaml.safe_load(text), path
