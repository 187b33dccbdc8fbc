"""prune.method imp: iterative magnitude pruning to a target sparsity on a schedule, one step per epoch."""

from __future__ import annotations

from rem.pruning.imp import magnitude_prune_to, schedule_sparsity
from rem.pruning.methods.registry import FixedTargetMethod, register_method


@register_method
class Imp(FixedTargetMethod):
    name = "imp"
    reports_magnitudes = True

    @classmethod
    def check_epochs(cls, cfg, epochs: int) -> str | None:
        if epochs > 1 and (cfg.schedule_epochs or 0) >= epochs:
            return (f"prune.schedule_epochs {cfg.schedule_epochs} must be < train.epochs {epochs}: IMP's last pruning "
                    "step needs training after it")
        return None

    def epochs_to_target(self, total_epochs: int) -> int:
        """`schedule_epochs`, else all but the last, so training follows the last pruning step."""
        return self.cfg.schedule_epochs or max(1, total_epochs - 1)

    def end_of_epoch(self, pruner, model, epoch: int, total_epochs: int, val_loss_fn) -> dict[str, float]:
        def scheduled(target: float) -> float:
            return schedule_sparsity(target, epoch + 1, self.epochs_to_target(total_epochs), self.cfg.schedule)

        sparsity = scheduled(self.cfg.target_sparsity)
        if self.cfg.scope == "tensor":  # each tensor along the schedule to its own target
            pruned = pruner.masks.subset(list(self.cfg.tensor_targets))
            magnitude_prune_to(model, pruned, {n: scheduled(t) for n, t in self.cfg.tensor_targets.items()}, "tensor")
        else:
            pruned = pruner.masks.subset(self.cfg.threshold_tensors)
            magnitude_prune_to(model, pruned, sparsity, self.cfg.scope)
        pruner.masks.update(pruned)
        return {"prune/scheduled_sparsity": 100.0 * sparsity}
