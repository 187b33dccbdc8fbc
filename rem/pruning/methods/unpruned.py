"""prune.method none: nothing is pruned (+Q in the paper's tables when the final forward is quantized)."""

from __future__ import annotations

from rem.pruning.methods.registry import PruningMethod, register_method


@register_method
class Unpruned(PruningMethod):
    name = "none"
    final_checkpoint = "best"  # as REM evaluates +Q: the best-validation-loss epoch
