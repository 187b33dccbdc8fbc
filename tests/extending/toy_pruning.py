"""A pruning method of one's own, registered from outside `rem/` (README, "Extending"): random pruning to
`prune.target_sparsity` at initialisation, the floor any pruning criterion should beat. Trials find it through
REM_PLUGINS=tests.extending.toy_pruning."""

from __future__ import annotations

import torch

from rem.pruning.methods import PruningMethod, register_method


@register_method
class RandomPruning(PruningMethod):
    name = "random"

    @classmethod
    def check(cls, cfg) -> None:
        super().check(cfg)
        if not 0 < cfg.target_sparsity < 1:
            raise ValueError(f"PruneConfig.target_sparsity={cfg.target_sparsity!r} must be in (0, 1) for method='random'")

    def at_start(self, pruner, model, batch_loss_fn) -> None:
        masks = pruner.masks.subset(self.cfg.threshold_tensors)
        generator = torch.Generator().manual_seed(0)  # the trial's own seed already drew the weights
        scores = {n: torch.rand(m.shape, generator=generator).to(m.device) for n, m in masks.masks.items()}
        masks.prune_lowest(scores, round(self.cfg.target_sparsity * masks.numel))
        pruner.masks.update(masks)
