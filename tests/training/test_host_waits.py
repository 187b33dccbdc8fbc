"""A training step does not wait for the device: at most one host<->device wait per step (tests/host_waits.py
counts them), the non-finite-loss check read every few steps from the device, naming the step that went bad."""

from __future__ import annotations

import pytest
import torch

from rem.training.loop import CHECK_EVERY_STEPS, train
from rem.training.step_losses import NonFiniteLossError, StepLosses
from tests.host_waits import counted_epochs, waits_per_step
from tests.tiny_trials import tiny_cfg


@pytest.mark.parametrize("method", ["none", "capsules"])  # capsules: its sensitivity sums grow every step
def test_a_training_step_waits_for_the_device_at_most_once(synthetic_raw, tmp_path, method):
    cfg = tiny_cfg(synthetic_raw, epochs=2, batch_size=16, progress_every_s=0).with_overrides(
        {"data.augment": True, "prune.method": method,
         "prune.options": {"fraction": 0.5, "criterion": "sensitivity"} if method == "capsules" else {}})
    with counted_epochs() as epochs:
        train(cfg, workdir=tmp_path)
    assert [e["steps"] for e in epochs] == [16, 16]
    assert all(e["host draws"] == 0 for e in epochs)  # the augmentation was drawn before the steps
    assert waits_per_step(epochs) <= 1 / CHECK_EVERY_STEPS + 1 / 16  # the checks, and one read per epoch
    assert waits_per_step(epochs) <= 1


def test_progress_lines_cost_one_read_per_epoch_and_per_line(synthetic_raw, tmp_path):
    """With progress lines on (an interval longer than this trial), each epoch's first step reads the running loss
    once for its line; the reporter's thread asks again only when a line is due (tests/training/test_progress.py)."""
    cfg = tiny_cfg(synthetic_raw, epochs=2, batch_size=16, progress_every_s=3600)
    with counted_epochs() as epochs:
        train(cfg, workdir=tmp_path)
    assert [e["reads"] for e in epochs] == [2, 2]  # the first step's line and the epoch's total


def test_the_first_non_finite_step_is_named_at_the_next_check():
    sums = StepLosses(steps=6, device=torch.device("cpu"), epoch=2, check_every=3)
    one = torch.ones((), dtype=torch.int64)
    for step, loss in enumerate([0.5, 0.4, 0.3, 0.2, float("inf"), float("nan")]):
        sums.add(step, torch.tensor(loss), 10, one)
        if sums.due(step) and step < 5:
            assert sums.read(step + 1)[0] == pytest.approx((0.5 + 0.4 + 0.3) / 3)  # the first window is fine
    with pytest.raises(NonFiniteLossError, match=r"non-finite training loss inf at epoch 3, step 5"):
        sums.read(6)
