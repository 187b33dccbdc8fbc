"""prune.method snip: SNIP prunes once, at initialisation, by connection sensitivity on a few batches."""

from __future__ import annotations

from dataclasses import dataclass

from rem.pruning.methods.registry import FixedTargetMethod, register_method
from rem.pruning.snip import snip_prune


@dataclass(frozen=True)
class SnipOptions:
    batches: int = 1  # distinct training batches the connection sensitivity |g * w| is summed over

    def __post_init__(self):
        if self.batches < 1:  # an int: read against its annotation (rem.config.options)
            raise ValueError(f"batches must be a whole number >= 1; got {self.batches!r}")


@register_method
class Snip(FixedTargetMethod):
    name = "snip"
    options = SnipOptions

    def at_start(self, pruner, model, batch_loss_fn) -> None:
        if batch_loss_fn is None:
            raise ValueError("Pruner.at_start: method='snip' needs batch_loss_fn(model) -> loss tensor")
        snip_prune(model, pruner.masks, batch_loss_fn, self.cfg.target_sparsity,
                   self.options_of(self.cfg).batches)
