"""prune.method capsules: whole primary-capsule types removed on a schedule and the model rebuilt smaller
(`CapsulePruner` takes the masking Pruner's place)."""

from __future__ import annotations

from rem.pruning.capsules.options import CapsuleOptions
from rem.pruning.capsules.pruner import CapsulePruner
from rem.pruning.methods.arm_settings import ArmSetting, percent_text
from rem.pruning.methods.presentation import Presentation
from rem.pruning.methods.registry import PruningMethod, register_method

# The fraction of primary-capsule types removed ("+CAPS 25%")
CAPSULE_FRACTION = ArmSetting("capsule_fraction", ("prune.options.fraction",), read=float, missing=0.0,
                              text=percent_text)


@register_method
class CapsuleTypes(PruningMethod):
    name = "capsules"
    routing_needed_because = "capsule pruning removes capsule types"
    rebuilds_model = True
    arm_settings = (CAPSULE_FRACTION,)
    presentation = Presentation(family=lambda arm: "+CAPS")
    options = CapsuleOptions

    def make_pruner(self, model, build, in_shape, precision: str):
        return CapsulePruner(model, self.cfg, build, in_shape, precision, self.options_of(self.cfg))
