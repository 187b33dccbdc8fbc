"""`rem.training.loop.train` on generated data (synthetic-fashion), shrunk: metrics, checkpoints, exact resume,
non-finite loss."""

from __future__ import annotations

import pytest
import torch

from rem.training.checkpoint import CHECKPOINT_FILE, trial_checkpoint_dir
from rem.training.loop import NonFiniteLossError, train
from tests.tiny_trials import tiny_cfg


def test_one_epoch_records_every_metric_and_a_checkpoint(synthetic_raw, tmp_path):
    seen = []
    metrics = train(tiny_cfg(synthetic_raw), workdir=tmp_path, on_epoch=lambda m, d, h: seen.append((m, d)))
    assert len(seen) == 1 and (seen[0][1] / CHECKPOINT_FILE).exists()
    for key in ("train/loss", "val/loss", "test/loss", "train/acc", "val/acc", "test/acc",
                "entropy/mean", "entropy/std", "parse_trees/total", "params"):
        assert key in metrics
    assert 0.0 <= metrics["test/acc"] <= 1.0
    per_class = sum(metrics[f"images/class_{j}"] for j in range(10))
    assert per_class == 256  # every test image is counted under its predicted class
    assert all(0 <= metrics[f"entropy/class_{j}"] <= 8.0 + 1e-9 for j in range(10))  # <= log2(256)


def test_resume_continues_exactly_where_it_stopped(synthetic_raw, tmp_path):
    straight = train(tiny_cfg(synthetic_raw, epochs=2), workdir=tmp_path / "a")
    train(tiny_cfg(synthetic_raw, epochs=1), workdir=tmp_path / "b")
    epochs = []
    resumed = train(tiny_cfg(synthetic_raw, epochs=2), workdir=tmp_path / "b",
                    on_epoch=lambda m, d, h: epochs.append((m["epoch"], [row["epoch"] for row in h])))
    assert epochs == [(2, [1, 2])]  # only the missing epoch ran; the history it is handed has the restored one too
    for key in ("train/loss", "test/loss", "test/acc", "entropy/mean"):
        assert resumed[key] == pytest.approx(straight[key], rel=1e-5, abs=1e-7)


def test_nonfinite_loss_stops_the_trial(synthetic_raw, tmp_path):
    with pytest.raises(NonFiniteLossError, match="non-finite training loss"):
        train(tiny_cfg(synthetic_raw, lr=1e30, epochs=2), workdir=tmp_path)


def test_bf16_training_step_stays_finite(synthetic_raw, tmp_path):
    metrics = train(tiny_cfg(synthetic_raw, precision="bf16"), workdir=tmp_path)
    assert torch.isfinite(torch.tensor(metrics["train/loss"]))


def test_final_evaluation_uses_best_checkpoint_with_quantized_forward(synthetic_raw, tmp_path):
    metrics = train(tiny_cfg(synthetic_raw, epochs=2), workdir=tmp_path)
    assert metrics["final/quantized"] == 1.0 and metrics["final/best_checkpoint"] == 1.0
    assert metrics["final/checkpoint_epoch"] in (1, 2)
    assert 0 <= metrics["final/test/acc"] <= 1 and "final/entropy/mean" in metrics
    assert sum(metrics[f"final/images/class_{j}"] for j in range(10)) == 256
    assert metrics["sparsity"] == 0.0 and metrics["nonzero_params"] > 0  # measured every epoch, even unpruned


def test_rem_pruning_grows_sparsity_and_evaluates_the_last_epoch(synthetic_raw, tmp_path):
    cfg = tiny_cfg(synthetic_raw, epochs=2).with_overrides({"prune.method": "rem", "prune.search_tolerance_pp": 1.0})
    seen = []
    metrics = train(cfg, workdir=tmp_path, on_epoch=lambda m, *_: seen.append(m))
    assert all(m["prune/val_loss"] <= m["prune/base_val_loss"] + 1e-12 for m in seen)  # never raises val loss
    assert metrics["sparsity"] > 0 and metrics["prune/evaluations"] >= 2
    assert metrics["final/best_checkpoint"] == 0.0 and metrics["final/checkpoint_epoch"] == 2
    state = torch.load(trial_checkpoint_dir(tmp_path) / CHECKPOINT_FILE, weights_only=True)
    pruned = sum(int((~mask).sum()) for mask in state["pruner"]["masks"].values())
    assert pruned > 0  # masks are saved with the checkpoint, so a resumed trial keeps its pruned weights at zero


def test_imp_reaches_its_target_sparsity(synthetic_raw, tmp_path):
    cfg = tiny_cfg(synthetic_raw, epochs=2).with_overrides({"prune.method": "imp", "prune.target_sparsity": 0.5})
    metrics = train(cfg, workdir=tmp_path)
    assert metrics["sparsity"] == pytest.approx(50.0, abs=0.01)
