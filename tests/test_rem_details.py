"""The REM details that change results, each as REM's official code does it (rem-paper.md), and the trainer's
stopping rule, final evaluation and SNIP batches."""

from __future__ import annotations

import logging
import math
import types

import numpy as np
import pandas as pd
import pytest
import torch

from rem.report import tables
from rem.config import from_dict
from rem.models import create_model
from rem.parse_trees import entropy_over_classes
from rem.pruning import Masks, PruneConfig, ThresholdProbe, magnitude_prune_to, prunable_parameters, \
    shrinkable_parameters, threshold_search
from rem.training.final_evaluation import final_evaluation
from rem.losses import batch_losses
from rem.training.loop import train
from tests.test_train import tiny_cfg

MNIST_SHAPE = (1, 28, 28)


@pytest.mark.parametrize("name,biases", [
    ("capsnet", {"routing_bias"}),
    ("gamma_capsnet", {"fc_bias", "class_bias"}),
    ("deepcaps", {"class_bias"}),
])
def test_lobster_shrinks_every_routing_bias_rem_shrinks(name, biases):
    model = create_model(name, in_shape=MNIST_SHAPE, num_classes=10)
    shrunk = set(shrinkable_parameters(model))
    assert biases <= shrunk
    assert not any("decoder" in n for n in shrunk)
    assert set(prunable_parameters(model)) <= shrunk


def test_deepcaps_class_matrix_is_shrunk_but_never_thresholded_unless_asked():
    model = create_model("deepcaps", in_shape=MNIST_SHAPE, num_classes=10)
    assert "votes.weight" not in prunable_parameters(model)  # REM's `W`: its search zeroes only `weight`s
    assert "votes.weight" in shrinkable_parameters(model)
    assert "votes.weight" in prunable_parameters(model, rem_tensors=False)
    assert "votes.weight" not in Masks.dense(model).masks
    assert "votes.weight" in Masks.dense(model, rem_tensors=False).masks


def test_gamma_capsnet_plus_q_quantizes_the_fc_layer_with_11_and_the_class_layer_with_6(monkeypatch):
    from rem.models import gamma_capsnet as module

    cfg = from_dict({"model": {"name": "gamma_capsnet"}})
    assert cfg.eval.levels_for("gamma_capsnet") == 6 and cfg.eval.levels_for("capsnet") == 11
    real, seen = module.scaled_distance_routing, []

    def recording(*args, quantize_levels=None, **kwargs):
        seen.append(quantize_levels)
        return real(*args, quantize_levels=quantize_levels, **kwargs)

    monkeypatch.setattr(module, "scaled_distance_routing", recording)
    model = create_model("gamma_capsnet", in_shape=MNIST_SHAPE, num_classes=10, conv_channels=16, primary_types=4).eval()
    x = torch.rand(2, *MNIST_SHAPE)
    model(x, quantize_levels=cfg.eval.levels_for("gamma_capsnet"))
    model(x)
    assert seen == [11, 6, None, None]  # FC layer, class layer (+Q); then the plain forward quantizes neither


def _two_layer_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Conv2d(4, 2, 3))


def test_search_range_covers_every_prunable_weight_zeros_included_and_the_tolerance_is_relative():
    model = _two_layer_net()
    masks = Masks.dense(model)
    magnitude_prune_to(model, masks, 0.3)
    every = torch.cat([p.detach().abs().flatten() for p in prunable_parameters(model).values()])
    cfg = PruneConfig(method="rem", twt=0.05, require_accuracy=False)
    probe = ThresholdProbe(model, masks, lambda m: 2.0, cfg)
    low, high, mean = probe.range
    assert low == 0.0 and high == pytest.approx(float(every.max())) and mean == pytest.approx(float(every.mean()))
    assert probe.n_live == int((every > 0).sum())
    assert probe.bound == pytest.approx(2.0 * 1.05)  # base * (1 + twt), REM's rule


def test_each_search_pass_is_logged_as_it_goes(caplog):
    model = _two_layer_net()
    x = torch.rand(8, 1, 8, 8)
    target = model(x).detach()

    def loss(m):
        with torch.no_grad():
            return float((m(x) - target).pow(2).mean())

    with caplog.at_level(logging.INFO, logger="rem.pruning"):
        result = threshold_search(model, Masks.dense(model), loss, PruneConfig(method="rem", require_accuracy=False))
    passes = [r.getMessage() for r in caplog.records if "threshold search: pass" in r.getMessage()]
    assert len(passes) == result.evaluations - 1  # every pass after the unpruned one
    assert all("vs bound" in p and ("accepted" in p or "rejected" in p) for p in passes)
    assert any("threshold search done" in r.getMessage() for r in caplog.records)


def test_the_collapse_guard_is_on_by_default():
    cfg = PruneConfig(method="rem")
    assert cfg.require_accuracy and 0 < cfg.accuracy_tolerance <= 0.01 and cfg.search_tolerance_pp == 0


def test_snip_batches_are_distinct_batches_of_one_permutation():
    split = _Split(torch.arange(40).view(40, 1, 1, 1).float(), torch.zeros(40, dtype=torch.long))
    cfg = from_dict({"train": {"batch_size": 8, "seed": 3}})
    seen = []

    class Recorder(torch.nn.Module):
        def forward(self, x):
            seen.append(sorted(int(v) for v in x.flatten()))
            return types.SimpleNamespace(lengths=torch.full((len(x), 10), 0.5, requires_grad=True))

    next_loss = batch_losses(split, lambda images, train: (images, None), cfg, {})
    for _ in range(5):
        next_loss(Recorder())
    assert all(len(b) == 8 for b in seen)
    assert sorted(v for b in seen for v in b) == list(range(40))  # 5 batches of 8 cover the 40 images once
    next_loss(Recorder())
    assert seen[5] == seen[0]  # only then does it wrap around


class _Split:
    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)


def test_final_evaluation_reads_protocol_splits_from_the_same_weights_and_says_when_best_was_missing():
    cfg = from_dict({"eval": {"final_checkpoint": "best"}})
    model = torch.nn.Linear(2, 2)
    calls = []

    def split_metrics(split, prefix, parse_trees, quantized=False, net=None, keys=None):
        calls.append((split, prefix, net))
        return {f"{prefix}/acc": 0.5}

    splits = types.SimpleNamespace(test="T", val="V", extra={"familiar": "F"})
    last = {"epoch": 3, "test/acc": 0.1}
    best = {"epoch": 2, "model": {k: v.clone() for k, v in model.state_dict().items()}, "val_loss": 0.1}
    out = final_evaluation(cfg, model, best, last, split_metrics, splits)
    assert out["final/checkpoint_epoch"] == 2 and out["final/best_checkpoint"] == 1.0
    assert [c[:2] for c in calls] == [("T", "final/test"), ("V", "final/val"), ("F", "final/extra/familiar")]
    assert len({id(c[2]) for c in calls}) == 1 and calls[0][2] is not model  # one net: the best epoch's copy
    calls.clear()
    fallback = final_evaluation(cfg, model, {"epoch": 0, "model": None, "val_loss": math.inf}, last, split_metrics, splits)
    assert fallback["final/best_checkpoint"] == 0.0 and fallback["final/checkpoint_epoch"] == 3
    assert all(c[2] is model for c in calls)


def test_entropy_over_classes_is_the_same_in_the_trial_and_the_table():
    entropy = np.array([[1.0, 2.0, 0.0], [3.0, 0.0, 0.5]])
    images = np.array([[10, 5, 0], [10, 0, 4]])  # class 2 unseen by seed 0, class 1 by seed 1
    mean, std = entropy_over_classes(entropy, images)
    per_class = np.array([2.0, 2.0, 0.5])  # each class over the seeds that saw it
    assert mean == pytest.approx(per_class.mean()) and std == pytest.approx(per_class.std())
    one_seed = entropy_over_classes(entropy[:1], images[:1])
    assert one_seed == pytest.approx((1.5, 0.5))  # the trial's entropy/mean: class 2 (no images) left out
    frame = pd.DataFrame([{"status": "FINISHED", "trial_key": "a", "epoch": 1, "train.seed": 42, "data.dataset": "d",
                           "model.name": "m", "prune.method": "none", "test/acc": 0.5, "params": 1,
                           **{f"entropy/class_{j}": entropy[0, j] for j in range(3)},
                           **{f"images/class_{j}": images[0, j] for j in range(3)},
                           **{f"parse_trees/class_{j}": 1 for j in range(3)}}])
    (row,) = tables.aggregate(frame)
    assert (row.entropy_mean, row.entropy_std) == pytest.approx(one_seed)


def test_patience_stops_the_run_and_a_resume_does_not_train_past_it(synthetic_raw, tmp_path):
    """lr 0: the validation loss never improves after epoch 1, so patience 1 stops after epoch 2 of 5."""
    cfg = tiny_cfg(synthetic_raw, epochs=5, patience=1, lr=0.0)
    seen = []
    last = train(cfg, workdir=tmp_path, on_epoch=lambda m, *_: seen.append(m["epoch"]))
    assert seen == [1, 2] and last["stopped_early"] == 1.0 and last["epochs_without_improvement"] == 1
    assert last["final/checkpoint_epoch"] == 1  # +Q reads the best-validation-loss epoch
    again = train(cfg, workdir=tmp_path, on_epoch=lambda m, *_: seen.append(m["epoch"]))
    assert seen == [1, 2] and again["epoch"] == 2


@pytest.mark.slow
@pytest.mark.realdata
def test_a_short_rem_run_keeps_its_accuracy_near_plus_q_on_real_data(fashion_raw, tmp_path):
    """Real Fashion-MNIST, Efficient-CapsNet, the same seed: +REM prunes and stays within 2 points of +Q."""
    def run(method, **prune):
        cfg = from_dict({
            "data": {"root": str(fashion_raw), "mirror": "", "system_root": "", "download": False, "augment": False,
                     "train_subset": 6400, "val_subset": 500, "test_subset": 2000},
            "model": {"name": "efficient_capsnet"},
            "train": {"epochs": 2, "batch_size": 64, "eval_batch_size": 500, "precision": "fp32", "seed": 42},
            "prune": {"method": method, **prune},
        })
        return train(cfg, workdir=tmp_path / method)

    plus_q, plus_rem = run("none"), run("rem")
    assert plus_rem["sparsity"] > 0 and plus_rem["prune/evaluations"] > 1
    assert plus_q["final/test/acc"] > 0.6
    assert abs(plus_rem["final/test/acc"] - plus_q["final/test/acc"]) <= 0.02, (plus_q["final/test/acc"], plus_rem["final/test/acc"])
    imp = run("imp", target_sparsity=0.5)
    assert imp["sparsity"] == pytest.approx(50.0, abs=0.01) and imp["prune/scheduled_sparsity"] == pytest.approx(50.0)
