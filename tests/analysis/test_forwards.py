"""The forward a final-model measurement reads (rem.analysis.forwards): a capsule model whose final evaluation is
+Q is measured in the plain forward too, under `.../plain/...`; a CNN or a plain final forward once. Robustness and
equivariance of a trial's final model on an untrained small CapsNet and the matched CNN (generated images)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from rem.analysis.equivariance import equivariance
from rem.analysis.forwards import PLAIN, forwards
from rem.analysis.points import point_metrics
from rem.analysis.transformed import trial_transformed
from rem.config import ConfigError
from rem.data import BatchTransform, get_dataset
from rem.data.splits import Split
from rem.models.from_config import build_model
from rem.training.run import evaluate_split
from tests.tiny_trials import tiny_cfg

FAMILIES = {"rotation": [0.0, 30.0], "translation": [2.0]}
IMAGES = 400  # each fold's fit (4/5 of them) outnumbers the 161 numbers per output of CapsNet's class poses


def run_for(cfg, images: torch.Tensor, labels: torch.Tensor):
    """What `trial_transformed` reads of a `rem.training.run.TrainingRun`, for an untrained
    model of `cfg` whose final model is its current one."""
    torch.manual_seed(0)
    spec = get_dataset(cfg.data.dataset)
    return SimpleNamespace(cfg=cfg, model=build_model(cfg, spec), best={"model": None, "epoch": 0},
                           transform=BatchTransform.from_config(spec, cfg.data), loss_kwargs=cfg.train.margin(0),
                           splits=SimpleNamespace(test=Split(images, labels), spec=SimpleNamespace(num_classes=10)))


@pytest.fixture(scope="module")
def test_images(synthetic_train):
    images, labels = synthetic_train
    return torch.from_numpy(images[:IMAGES].copy())[:, None], torch.from_numpy(labels[:IMAGES].copy())


@pytest.fixture(scope="module")
def capsule_cfg(synthetic_raw):
    return tiny_cfg(synthetic_raw).with_overrides({"eval.robust_families": FAMILIES, "eval.robust_images": 0})


FINAL = {"final/checkpoint_epoch": 1, "epoch": 1}


def test_which_forwards_each_model_is_measured_with(capsule_cfg):
    assert [(f.quantized, f.segment) for f in forwards(capsule_cfg)] == [(True, ""), (False, PLAIN)]
    plain_final = capsule_cfg.with_overrides({"eval.final_quantized": False})
    assert [(f.quantized, f.segment) for f in forwards(plain_final)] == [(False, "")]
    cnn = capsule_cfg.with_overrides({"model.name": "cnn_matched", "model.options": {}})
    assert [(f.quantized, f.segment) for f in forwards(cnn)] == [(True, "")]  # +Q has nothing to act on in a CNN


def test_robustness_of_a_plus_q_capsule_model_reads_the_plain_forward_beside_it(capsule_cfg, test_images):
    run = run_for(capsule_cfg, *test_images)
    metrics = trial_transformed(run, FINAL, robust=True, equivariant=False)
    plain = evaluate_split(capsule_cfg, run.model, run.splits.test, run.transform, 10, quantized=False,
                           parse_trees=True, loss_kwargs=run.loss_kwargs)
    quantized = evaluate_split(capsule_cfg, run.model, run.splits.test, run.transform, 10, quantized=True,
                               parse_trees=True, loss_kwargs=run.loss_kwargs)
    assert metrics["robust/rotation/0/plain/test/loss"] == plain["loss"]  # the identity is that forward's evaluation
    assert metrics["robust/rotation/0/test/loss"] == quantized["loss"] != plain["loss"]
    assert {k.replace("/plain/", "/") for k in metrics if "/plain/" in k} == {k for k in metrics if "/plain/" not in k}


def test_a_cnn_and_a_plain_final_forward_are_measured_once(capsule_cfg, test_images):
    for cfg in (capsule_cfg.with_overrides({"model.name": "cnn_matched", "model.options": {}}),
                capsule_cfg.with_overrides({"eval.final_quantized": False})):
        metrics = trial_transformed(run_for(cfg, *test_images), FINAL, robust=True, equivariant=False)
        assert metrics and not [k for k in metrics if f"/{PLAIN}/" in k]


def test_equivariance_of_a_trials_final_model_in_both_forwards(capsule_cfg, test_images):
    cfg = capsule_cfg.with_overrides({"eval.equivariance": True})
    metrics = trial_transformed(run_for(cfg, *test_images), FINAL, robust=False, equivariant=True)
    for segment in ("", "plain/"):
        assert metrics[f"equivariance/rotation/0/{segment}error"] < 1e-6  # the identity: exactly linear
        assert 0 < metrics[f"equivariance/rotation/30/{segment}error"]
        assert metrics[f"equivariance/translation/2/{segment}width"] == 160
        assert metrics[f"equivariance/rotation/30/{segment}null_error"] > 0.9  # shuffled pairs: nothing to explain
        assert metrics[f"equivariance/rotation/30/{segment}images"] == IMAGES
    cnn_cfg = cfg.with_overrides({"model.name": "cnn_matched", "model.options": {}})
    cnn = trial_transformed(run_for(cnn_cfg, *test_images),
                            FINAL, robust=False, equivariant=True)
    assert cnn["equivariance/rotation/30/width"] == 160 and not [k for k in cnn if "/plain/" in k]  # its hidden layer


def test_too_few_images_for_equivariance_is_one_line_before_training(capsule_cfg):
    with pytest.raises(ConfigError,
                       match=r"eval.equivariance needs eval.robust_images 0 \(all\) or >= 2500, so that each of "
                             r"its 5 folds' maps is fitted on 2000 images or more; got 300"):
        capsule_cfg.with_overrides({"eval.equivariance": True, "eval.robust_images": 300})


@pytest.mark.parametrize("families", [FAMILIES, {"translation": [2.0, 4.0]}])  # the second holds no identity
def test_robustness_and_equivariance_from_one_pass_equal_each_measured_alone(capsule_cfg, test_images, families):
    cfg = capsule_cfg.with_overrides({"eval.robust_families": families})
    run = run_for(cfg, *test_images)
    both = trial_transformed(run, FINAL, robust=True, equivariant=True)
    robust = trial_transformed(run, FINAL, robust=True, equivariant=False)
    alone = trial_transformed(run, FINAL, robust=False, equivariant=True)
    assert both == {**robust, **alone} and alone and robust
    # and the standalone measurement of a model gives the same numbers as the trial's shared pass
    plain = equivariance(run.model, run.splits.test.images, families, transform=run.transform,
                         batch=cfg.train.eval_batch_size, seed=cfg.eval.robust_seed, precision=cfg.train.precision)
    assert point_metrics(plain, "equivariance", PLAIN) == {k: v for k, v in alone.items() if "/plain/" in k}
