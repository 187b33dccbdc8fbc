"""The pruner a trial's `prune.method` asks for, so the training run never asks which method it is."""

from __future__ import annotations

from typing import Callable

from torch import nn

from rem.config.prune import PruneConfig
from rem.pruning.methods.registry import get_method
from rem.pruning.pruner import Pruner, TrialPruner


def trial_pruner(model: nn.Module, cfg: PruneConfig, build: Callable[..., nn.Module], in_shape: tuple[int, int, int],
                 precision: str) -> TrialPruner:
    """A `Pruner` masking `model`, or the method's own pruner that rebuilds it with `build(**args)`."""
    method = get_method(cfg.method)(cfg)
    return method.make_pruner(model, build, in_shape, precision) if method.rebuilds_model else Pruner(model, cfg)
