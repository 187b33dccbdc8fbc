"""A pruning method of one's own, registered from outside `rem/` (docs/extending.md): random pruning to
`prune.target_sparsity` at initialisation, the floor any pruning criterion should beat. Its own option,
`prune.options.seed`, seeds the draw (declared once, on the method: `options = RandomOptions`). Trials find it through
REM_PLUGINS=tests.extending.toy_pruning."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rem.pruning.methods import PruningMethod, register_method


@dataclass(frozen=True)
class RandomOptions:
    """Its `prune.options`: anything else there is refused in one line naming these."""

    seed: int = 0  # of the draw: the trial's own seed already drew the weights


@register_method
class RandomPruning(PruningMethod):
    name = "random"
    options = RandomOptions

    @classmethod
    def check(cls, cfg) -> None:
        super().check(cfg)
        if not 0 < cfg.target_sparsity < 1:
            raise ValueError(f"PruneConfig.target_sparsity={cfg.target_sparsity!r} must be in (0, 1) "
                             "for method='random'")

    def at_start(self, pruner, model, batch_loss_fn) -> None:
        masks = pruner.masks.subset(self.cfg.threshold_tensors)
        generator = torch.Generator().manual_seed(self.options_of(self.cfg).seed)  # prune.options, defaults filled in
        scores = {n: torch.rand(m.shape, generator=generator).to(m.device) for n, m in masks.masks.items()}
        masks.prune_lowest(scores, round(self.cfg.target_sparsity * masks.numel))
        pruner.masks.update(masks)
