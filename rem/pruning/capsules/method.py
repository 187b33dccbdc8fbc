"""prune.method capsules: whole primary-capsule types removed on a schedule and the model rebuilt smaller
(`CapsulePruner` takes the masking Pruner's place)."""

from __future__ import annotations

from rem.pruning.capsules.pruner import CapsulePruner
from rem.pruning.methods.registry import PruningMethod, register_method


@register_method
class CapsuleTypes(PruningMethod):
    name = "capsules"
    routing_needed_because = "capsule pruning removes capsule types"
    rebuilds_model = True
    arm_fields = ("capsule_fraction",)

    @classmethod
    def arm_name(cls, arm) -> str:
        return f"+CAPS {100 * arm.capsule_fraction:g}%"  # structured: the fraction of primary-capsule types removed

    @classmethod
    def check(cls, cfg) -> None:
        super().check(cfg)
        if cfg.capsule_fraction <= 0:
            raise ValueError(f"PruneConfig.capsule_fraction={cfg.capsule_fraction!r} must be in (0, 1) for "
                             f"method='capsules'")

    def make_pruner(self, model, build, in_shape, precision: str):
        return CapsulePruner(model, self.cfg, build, in_shape, precision)
