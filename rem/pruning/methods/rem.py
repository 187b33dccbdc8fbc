"""prune.method rem: LOBSTER's shrinkage every step, then REM's loss-bounded magnitude threshold every epoch."""

from __future__ import annotations

import json
import math

from rem.config.prune import PruneConfig
from rem.pruning.lobster import lobster_shrink_
from rem.pruning.methods.arm_settings import ArmSetting
from rem.pruning.methods.presentation import OTHER_RANK, REM_RANK, Presentation
from rem.pruning.methods.registry import PruningMethod, register_method
from rem.pruning.parameters import is_class_capsule_matrix
from rem.pruning.search import threshold_search

REM_LAMBDA0 = PruneConfig.lambda0  # REM's published max_lmbda: other values are named by their ratio to it


def tensor_label(name: str) -> str:
    """A prunable tensor's short name: W for capsule vote matrices (`*votes.weight`), else its module's name."""
    return "W" if is_class_capsule_matrix(name) else name.removesuffix(".weight")


def tensor_names(cell) -> tuple[str, ...]:
    return tuple(json.loads(cell)) if isinstance(cell, str) else ()  # the results table keeps lists as JSON


def lambda_text(ratio: float) -> str:
    return "" if math.isclose(ratio, 1.0, rel_tol=1e-6) else f" λ×{ratio:g}"


def tensors_text(tensors: tuple[str, ...]) -> str:
    return " " + "+".join(map(tensor_label, tensors)) + " only" if tensors else ""


LAMBDA_RATIO = ArmSetting("lambda_ratio", ("prune.lambda0",), read=lambda cell: float(cell) / REM_LAMBDA0,
                          missing=1.0, text=lambda_text)
TENSORS = ArmSetting("tensors", ("prune.threshold_tensors",), read=tensor_names, missing=(), text=tensors_text)
SHRINKAGE_ONLY = ArmSetting("shrinkage_only", ("prune.threshold_search",), read=lambda cell: str(cell) == "none",
                            missing=False, text=lambda on: " (no threshold)" if on else "")


@register_method
class Rem(PruningMethod):
    name = "rem"
    routing_needed_because = "REM's threshold search minimizes routing entropy"
    reports_magnitudes = True
    # "+REM", "+REM λ×100", "+REM W only"; with `threshold_search: none`, "LOBSTER λ×100 (no threshold)"
    arm_settings = (LAMBDA_RATIO, TENSORS, SHRINKAGE_ONLY)
    control_settings = (LAMBDA_RATIO, TENSORS)  # +IMP@REM W only: the REM arm it matches, not its own target
    # with `threshold_search: none` REM is LOBSTER's shrinkage alone, a control listed among the other methods
    presentation = Presentation(family=lambda arm: "LOBSTER" if arm.shrinkage_only else "+REM",
                                rank=lambda arm: OTHER_RANK if arm.shrinkage_only else REM_RANK, marker="*")

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
