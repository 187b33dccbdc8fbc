"""prune.method snip: SNIP prunes once, at initialisation, by connection sensitivity on a few batches."""

from __future__ import annotations

from rem.pruning.methods.registry import FixedTargetMethod, register_method
from rem.pruning.snip import snip_prune


@register_method
class Snip(FixedTargetMethod):
    name = "snip"

    def at_start(self, pruner, model, batch_loss_fn) -> None:
        if batch_loss_fn is None:
            raise ValueError("Pruner.at_start: method='snip' needs batch_loss_fn(model) -> loss tensor")
        snip_prune(model, pruner.masks, batch_loss_fn, self.cfg.target_sparsity, self.cfg.snip_batches)
