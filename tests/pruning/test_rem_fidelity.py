"""REM as its official code runs it, where the project used to differ: the threshold search evaluates in fp32
whatever the training precision, the best epoch and patience read the plain forward's validation loss, and the
REM arms the evidence profile adds (a larger lambda, a threshold over some tensors only, shrinkage alone) are
what their labels say."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from rem.evaluate import batches_of, evaluate
from rem.results import grid
from rem.results.variants import variant_of
from rem.training.checkpoint import CHECKPOINT_FILE, trial_checkpoint_dir
from rem.training.loop import set_up, train
from tests.tiny_trials import tiny_cfg


def rem_cfg(raw, **prune):
    cfg = tiny_cfg(raw, precision="bf16", epochs=1, max_steps_per_epoch=4)
    return cfg.with_overrides({"prune.method": "rem", "prune.require_accuracy": False,
                               **{f"prune.{k}": v for k, v in prune.items()}})


def val_loss(run, precision: str) -> float:
    split = run.splits.val
    return evaluate(run.model, batches_of(split.images, split.labels, run.cfg.train.eval_batch_size, run.transform),
                    num_classes=10, precision=precision, parse_trees=False, loss_kwargs=run.loss_kwargs)["loss"]


def test_threshold_search_evaluates_in_fp32_under_bf16_training(synthetic_raw):
    run = set_up(rem_cfg(synthetic_raw), Path.cwd())
    assert run.cfg.train.precision == "bf16" and run.search_val.precision == "fp32"
    searched = run.search_val(run.model)["loss"]
    assert searched == val_loss(run, "fp32")
    assert searched != val_loss(run, "bf16")  # the rounding REM's zero-tolerance rule would otherwise decide on
    assert run.cfg.flat()["prune.search_precision"] == "fp32"  # logged with the trial's params


def test_search_precision_train_follows_the_training_precision(synthetic_raw):
    run = set_up(rem_cfg(synthetic_raw, search_precision="train"), Path.cwd())
    assert run.search_val.precision == "bf16"


def test_best_epoch_reads_the_plain_forward_and_keeps_the_quantized_one_beside_it(synthetic_raw, tmp_path):
    cfg = tiny_cfg(synthetic_raw, epochs=2).with_overrides({"eval.quantized_forward": True})
    seen = []
    train(cfg, workdir=tmp_path, on_epoch=lambda m, *_: seen.append(dict(m)))
    state = torch.load(trial_checkpoint_dir(tmp_path) / CHECKPOINT_FILE, weights_only=True)
    run = set_up(cfg, Path.cwd())
    run.model.load_state_dict(state["model"])
    split = run.splits.val
    plain = evaluate(run.model, batches_of(split.images, split.labels, 128, run.transform), num_classes=10,
                     parse_trees=False, loss_kwargs=run.loss_kwargs)
    quantized = evaluate(run.model, batches_of(split.images, split.labels, 128, run.transform), num_classes=10,
                         parse_trees=False, loss_kwargs=run.loss_kwargs, quantize_levels=11)
    last = seen[-1]
    assert last["val/loss"] == pytest.approx(plain["loss"], rel=1e-12)
    assert last["val_q/loss"] == pytest.approx(quantized["loss"], rel=1e-12)
    assert last["val/loss"] != last["val_q/loss"]
    best = min(seen, key=lambda m: m["val/loss"])  # REM's choice: the lowest plain validation loss
    assert state["best"]["epoch"] == best["epoch"] and state["best"]["val_loss"] == best["val/loss"]
    assert last["final/val/loss"] == last["val_q/loss"] or last["final/checkpoint_epoch"] != last["epoch"]


def test_threshold_over_named_tensors_prunes_only_those(synthetic_raw, tmp_path):
    metrics = train(rem_cfg(synthetic_raw, lambda0=0.01, threshold_tensors=["votes.weight"]), workdir=tmp_path)
    assert metrics["sparsity/votes.weight"] > 0
    assert metrics["sparsity/conv1.weight"] == 0 and metrics["sparsity/primary.conv.weight"] == 0
    assert 0 < metrics["sparsity"] < metrics["sparsity/votes.weight"]  # measured over every prunable tensor
    assert {"magnitude/votes.weight", "magnitude/primary.conv.weight"} <= set(metrics)


def test_unknown_threshold_tensor_is_one_line_naming_the_prunable_ones(synthetic_raw, tmp_path):
    with pytest.raises(KeyError, match=r"\['W'\] are not prunable tensors.*votes\.weight"):
        train(rem_cfg(synthetic_raw, threshold_tensors=["W"]), workdir=tmp_path)


def test_shrinkage_only_control_searches_nothing(synthetic_raw, tmp_path):
    cfg = rem_cfg(synthetic_raw, lambda0=0.01, threshold_search="none")
    assert set_up(cfg, Path.cwd()).search_val is None
    metrics = train(cfg, workdir=tmp_path)
    assert "prune/evaluations" not in metrics and metrics["prune/lambda"] == pytest.approx(0.01 * 0.99)
    assert metrics["magnitude/votes.weight"] > 0


def test_each_control_matches_the_rem_arm_with_its_lambda():
    points = grid.points({"model.name": ["capsnet"], "train.seed": [42],
                          "prune": [{"method": "rem"}, {"method": "rem", "lambda0": 0.01},
                                    {"method": "imp", "target_from": "rem"},
                                    {"method": "imp", "target_from": "rem", "lambda0": 0.01}]})
    _, matched = grid.split_matched(points)
    refs = {key: ref.get("prune.lambda0") for key, ref in matched.items()}
    assert sorted(refs.values(), key=str) == [0.01, None]
    for key, lam in refs.items():
        assert ("lambda0=0.01" in key) == (lam == 0.01)


@pytest.mark.parametrize("prune, label", [
    ({"prune.method": "rem"}, "+REM"),
    ({"prune.method": "rem", "prune.lambda0": 0.01}, "+REM λ×100"),
    ({"prune.method": "rem", "prune.lambda0": 0.001, "prune.threshold_tensors": '["votes.weight"]'},
     "+REM λ×10 W only"),
    ({"prune.method": "rem", "prune.lambda0": 0.01, "prune.threshold_search": "none"}, "LOBSTER λ×100 (no threshold)"),
    ({"prune.method": "imp", "prune.target_from": "rem", "prune.lambda0": 0.01}, "+IMP@REM λ×100"),
])
def test_rem_arms_are_labelled_by_what_differs_from_the_paper(prune, label):
    assert variant_of(pd.Series(prune)) == label


def test_a_control_of_a_reference_that_pruned_everything_stays_a_valid_target():
    point = {"model.name": "capsnet", "prune.method": "imp", "prune.target_from": "rem"}
    assert grid.resolve_matched(point, 1.0)["prune.target_sparsity"] == grid.MAX_MATCHED_TARGET
    assert grid.resolve_matched(point, 0.3012344)["prune.target_sparsity"] == 0.301234
