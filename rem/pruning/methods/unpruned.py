"""prune.method none: nothing is pruned (+Q in the paper's tables when the final forward is quantized)."""

from __future__ import annotations

from rem.pruning.methods.registry import QUANTIZED_RANK, UNPRUNED_RANK, PruningMethod, register_method


@register_method
class Unpruned(PruningMethod):
    name = "none"
    final_checkpoint = "best"  # as REM evaluates +Q: the best-validation-loss epoch
    arm_fields = ("quantized",)

    @classmethod
    def arm_name(cls, arm) -> str:
        return "+Q" if arm.quantized else "plain"

    @classmethod
    def arm_rank(cls, arm) -> int:
        return QUANTIZED_RANK if arm.quantized else UNPRUNED_RANK
