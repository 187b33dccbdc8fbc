"""prune.method snip: SNIP prunes once, at initialisation, by connection sensitivity on a few batches."""

from __future__ import annotations

from rem.pruning.methods.registry import PruningMethod, register_method
from rem.pruning.snip import snip_prune


def check_target(name: str, cfg) -> None:
    """A fixed-target method needs its target, unless a matched control's sweep sets it later (the pruner checks)."""
    if cfg.target_from is None and cfg.target_sparsity <= 0:
        raise ValueError(f"PruneConfig.target_sparsity={cfg.target_sparsity!r} must be in (0, 1) for method={name!r}")


@register_method
class Snip(PruningMethod):
    name = "snip"
    controls = True

    @classmethod
    def check(cls, cfg) -> None:
        super().check(cfg)
        check_target(cls.name, cfg)

    def at_start(self, pruner, model, batch_loss_fn) -> None:
        if batch_loss_fn is None:
            raise ValueError("Pruner.at_start: method='snip' needs batch_loss_fn(model) -> loss tensor")
        snip_prune(model, pruner.masks, batch_loss_fn, self.cfg.target_sparsity, self.cfg.snip_batches)
