"""Linear learning-rate warm-up over the first optimizer steps (`train.warmup_steps`), on top of the per-epoch
ExponentialLR: step s of the trial trains at the epoch's rate x min(1, (s + 1) / warmup_steps).

Why: Adam's first steps move every weight by about the learning rate, in the direction of its gradient. A layer that
sums thousands of inputs (CapsNet's class capsules sum 1,152 votes on 28x28, 3,200 on 36x36) moves coherently, so
its outputs jump: the class capsules' lengths saturate near 1 after one step and the margin loss stops teaching.

The step count comes from the epoch and the step within it (every epoch has the same number of steps), so a
resumed trial warms up exactly as an uninterrupted one; the scheduler always sees the epoch's own rate.
"""

from __future__ import annotations

import torch


def warmup_factor(step: int, warmup_steps: int) -> float:
    """The factor on the learning rate at the trial's 0-based optimizer step `step`."""
    return 1.0 if warmup_steps <= 0 else min(1.0, (step + 1) / warmup_steps)


def set_rate(optimizer: torch.optim.Optimizer, rates: list[float], factor: float) -> None:
    """Each parameter group at its epoch rate (`rates`, in group order) times `factor`."""
    for group, rate in zip(optimizer.param_groups, rates):
        group["lr"] = rate * factor
