"""Linear learning-rate warm-up (`train.warmup_steps`) over the per-epoch ExponentialLR: step s trains at the epoch's
rate x min(1, (s + 1) / warmup_steps). Why: Adam's first steps move CapsNet's class capsules (sums of 1,152 votes)
coherently, saturating their lengths near 1 so the margin loss stops teaching."""

from __future__ import annotations

import torch


def warmup_factor(step: int, warmup_steps: int) -> float:
    """The factor on the learning rate at the trial's 0-based optimizer step `step`."""
    return 1.0 if warmup_steps <= 0 else min(1.0, (step + 1) / warmup_steps)


def set_rate(optimizer: torch.optim.Optimizer, rates: list[float], factor: float) -> None:
    """Each parameter group at its epoch rate (`rates`, in group order) times `factor`."""
    for group, rate in zip(optimizer.param_groups, rates):
        group["lr"] = rate * factor
