"""Structured pruning of whole primary-capsule types: the pruned model is rebuilt with smaller tensors.

After Renzulli et al., "Towards Efficient Capsule Networks" (arXiv 2208.09203): REM, IMP and SNIP zero single
weights and leave every tensor its shape, so a sparse CapsNet costs what the dense one costs. Removing a primary
capsule *type* removes its output channels of the conv that produces it, its rows of the vote matrix (one row per
capsule of that type at each grid position) and, where the family has them, its rows of a per-input routing prior
-- the network that remains is a smaller instance of the same family, built by `create_model(name, **build_args)`
with a smaller type count.

A removed capsule's votes are zero in the masked model (zero filters and bias -> squash(0) = 0 -> zero votes), and
both dynamic and self-attention routing normalise couplings over the *parents* of each input, so a zero input adds
nothing to any parent: the rebuilt CapsNet / Efficient-CapsNet computes what the masked one computes
(`mask_capsules`). gamma-CapsNet's SDA routing scales its logits by the mean vote-parent distance over *all*
inputs, zero ones included, so there the rebuilt model is a (fine-tuned) approximation of the masked one.

`layout`: which tensors each type owns per family, and the model rebuilt without some types; `criteria`: how
useful each type is, and what a model costs; `pruner`: `CapsulePruner`, the schedule and rule the trainer drives.
"""

from rem.pruning.capsules.criteria import (capsule_report, coupling_mass_scores, flops_per_image, sensitivity_add_,
                                           weight_norm_scores)
from rem.models.roles import CapsuleLayout, Entry
from rem.pruning.capsules.layout import (build_args_from_weights, capsule_layout, mask_capsules,
                                   prune_capsules, retarget_optimizer, type_slices)
from rem.pruning.capsules.pruner import CapsulePruner, largest_harmless_removal, types_to_remove
from rem.pruning.capsules.options import CRITERIA, RULES, CapsuleOptions

__all__ = [
    "CRITERIA", "RULES", "CapsuleLayout", "CapsuleOptions", "CapsulePruner", "Entry", "build_args_from_weights", "capsule_layout",
    "capsule_report", "coupling_mass_scores", "flops_per_image", "largest_harmless_removal", "mask_capsules",
    "prune_capsules", "retarget_optimizer", "sensitivity_add_", "type_slices", "types_to_remove", "weight_norm_scores",
]
