"""Both arms of a seed start alike (issue 64's paired study): the seed is set before the model is built, and each
epoch's batches come from a generator seeded by (seed, epoch), so +Q and +REM of one seed hold identical weights at
step 0 and train on identical first-epoch batches, augmentation included. REM's shrinkage changes the weights from
the first step on, never what the arm is shown."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import rem.training.loop as loop
from rem.training.loop import set_up, train_one_epoch
from tests.tiny_trials import tiny_cfg


def first_epoch(cfg, monkeypatch) -> tuple[dict, list]:
    """The arm's weights at step 0 and the (indices, augmentation draws) of each of its first epoch's steps."""
    run = set_up(cfg, Path.cwd())
    start = {k: v.clone() for k, v in run.model.state_dict().items()}
    seen, real_step = [], loop.train_step

    def recording(run, idx, draws, *rest):
        seen.append((idx.clone(), None if draws is None else {k: v.clone() for k, v in draws.items()}))
        return real_step(run, idx, draws, *rest)

    monkeypatch.setattr(loop, "train_step", recording)
    train_one_epoch(run, 0)
    monkeypatch.setattr(loop, "train_step", real_step)
    return start, seen


@pytest.mark.parametrize("model", ["gamma_capsnet", "capsnet"])
def test_plus_q_and_plus_rem_of_a_seed_share_their_start_and_batches(synthetic_raw, monkeypatch, model):
    base = tiny_cfg(synthetic_raw, max_steps_per_epoch=3, seed=45).with_overrides(
        {"model.name": model, "model.options": {}, "data.augment": True, "eval.quantized_forward": True})
    if model == "gamma_capsnet":
        base = base.with_overrides({"model.options": {"conv_channels": 16, "primary_types": 4}})
    q_start, q_batches = first_epoch(base, monkeypatch)
    rem_start, rem_batches = first_epoch(base.with_overrides({"prune.method": "rem"}), monkeypatch)
    assert q_start.keys() == rem_start.keys()
    assert all(torch.equal(q_start[k], rem_start[k]) for k in q_start)
    assert len(q_batches) == len(rem_batches) == 3
    for (q_idx, q_draws), (r_idx, r_draws) in zip(q_batches, rem_batches):
        assert torch.equal(q_idx, r_idx)
        assert q_draws is not None and q_draws.keys() == r_draws.keys()
        assert all(torch.equal(q_draws[k], r_draws[k]) for k in q_draws)
    other_seed, _ = first_epoch(base.with_overrides({"train.seed": 46}), monkeypatch)
    assert not all(torch.equal(q_start[k], other_seed[k]) for k in q_start)  # the seed does set them
