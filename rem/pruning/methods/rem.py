"""prune.method rem: LOBSTER's shrinkage every step, then REM's loss-bounded magnitude threshold every epoch."""

from __future__ import annotations

from rem.pruning.lobster import lobster_shrink_
from rem.pruning.methods.registry import OTHER_RANK, REM_RANK, PruningMethod, register_method
from rem.pruning.search import threshold_search


@register_method
class Rem(PruningMethod):
    name = "rem"
    routing_needed_because = "REM's threshold search minimizes routing entropy"
    reports_magnitudes = True
    arm_fields = ("lambda_ratio", "tensors", "shrinkage_only")

    @classmethod
    def arm_name(cls, arm) -> str:
        """"+REM", "+REM λ×100", "+REM W only"; with `threshold_search: none`, LOBSTER's shrinkage alone."""
        return f"LOBSTER{arm.rem_text()} (no threshold)" if arm.shrinkage_only else f"+REM{arm.rem_text()}"

    @classmethod
    def arm_rank(cls, arm) -> int:
        return OTHER_RANK if arm.shrinkage_only else REM_RANK

    @property
    def searches_threshold(self) -> bool:
        """Validation passes at each epoch's end (not with `threshold_search: none`, the shrinkage-only control)."""
        return self.cfg.threshold_search != "none"

    def lam(self, epoch: int) -> float:
        """λ0 in epoch 0, then as REM's 1e-4 * 0.99**(e+1) after epoch e."""
        return self.cfg.lambda0 * self.cfg.lambda_decay ** epoch

    def before_optimizer_step(self, pruner, epoch: int) -> None:
        lobster_shrink_(pruner.shrinkable, self.lam(epoch))

    def end_of_epoch(self, pruner, model, epoch: int, total_epochs: int, val_loss_fn) -> dict[str, float]:
        if not self.searches_threshold:  # LOBSTER alone: nothing thresholded
            return {"prune/lambda": self.lam(epoch + 1)}
        if val_loss_fn is None:
            raise ValueError("Pruner.end_of_epoch: method='rem' needs val_loss_fn(model)")
        searched = pruner.masks.subset(self.cfg.threshold_tensors)
        result = threshold_search(model, searched, val_loss_fn, self.cfg)
        pruner.masks.update(searched)
        return {
            "prune/threshold": result.threshold, "prune/evaluations": result.evaluations, "prune/val_loss": result.loss,
            "prune/base_val_loss": result.base_loss, "prune/pruned": result.pruned,
            "prune/guard_limited": float(result.guard_limited), "prune/seconds": result.seconds,
            "prune/partial_evaluations": result.partial_evaluations, "prune/lambda": self.lam(epoch + 1),
        }
