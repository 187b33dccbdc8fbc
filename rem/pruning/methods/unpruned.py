"""prune.method none: nothing is pruned (+Q in the paper's tables when the final forward is quantized)."""

from __future__ import annotations

from rem.pruning.methods.arm_settings import ArmSetting
from rem.pruning.methods.presentation import QUANTIZED_RANK, UNPRUNED_RANK, Presentation
from rem.pruning.methods.registry import PruningMethod, register_method

# Whether the final forward rounded the couplings (+Q; meaningless for a CNN); it names the arm whole, adding no text
QUANTIZED = ArmSetting("quantized", ("final/quantized", "eval.quantized_forward"), read=bool, missing=False,
                       text=lambda quantized: "", routing_only=True)


@register_method
class Unpruned(PruningMethod):
    name = "none"
    final_checkpoint = "best"  # as REM evaluates +Q: the best-validation-loss epoch
    arm_settings = (QUANTIZED,)
    # plain and +Q alike circles: the reference every pruned arm is read against
    presentation = Presentation(family=lambda arm: "+Q" if arm.quantized else "plain",
                                rank=lambda arm: QUANTIZED_RANK if arm.quantized else UNPRUNED_RANK, marker="o")
