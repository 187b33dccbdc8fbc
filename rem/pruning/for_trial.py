"""The pruner a trial's `prune.method` asks for, so the training run never asks which method it is.

Not exported by `rem.pruning`: `rem.pruning.capsules` is built on that package, so the package cannot import it.
"""

from __future__ import annotations

from typing import Callable

from torch import nn

from rem.pruning.capsules import CapsulePruner
from rem.pruning.config import PruneConfig
from rem.pruning.pruner import Pruner, TrialPruner


def trial_pruner(model: nn.Module, cfg: PruneConfig, build: Callable[..., nn.Module], in_shape: tuple[int, int, int],
                 precision: str) -> TrialPruner:
    """`CapsulePruner` for "capsules" (it rebuilds the model smaller: `build(**extra_build_args)` creates one like
    `model`, for inputs of `in_shape`, its validation passes in `precision`), else a `Pruner` masking `model`."""
    if cfg.method == "capsules":
        return CapsulePruner(model, cfg, build, in_shape, precision)
    return Pruner(model, cfg)
