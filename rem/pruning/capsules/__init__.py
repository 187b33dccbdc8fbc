"""Structured pruning of whole primary-capsule types (after Renzulli et al., arXiv 2208.09203): the model is rebuilt
smaller, so unlike zeroed weights it costs less. Removing a type removes its conv channels, vote-matrix rows and
routing-prior rows. The rebuilt CapsNet / Efficient-CapsNet computes what the masked one does (`mask_capsules`);
gamma-CapsNet's routing averages over all inputs, zero ones included, so there it is an approximation.
"""

from rem.models.roles import CapsuleLayout, Entry
from rem.pruning.capsules.criteria import (
    capsule_report,
    coupling_mass_scores,
    flops_per_image,
    sensitivity_add_,
    weight_norm_scores,
)
from rem.pruning.capsules.layout import (
    build_args_from_weights,
    capsule_layout,
    mask_capsules,
    prune_capsules,
    retarget_optimizer,
    type_slices,
)
from rem.pruning.capsules.options import CRITERIA, RULES, CapsuleOptions
from rem.pruning.capsules.pruner import CapsulePruner, largest_harmless_removal, types_to_remove

__all__ = [
    "CRITERIA", "RULES", "CapsuleLayout", "CapsuleOptions", "CapsulePruner", "Entry", "build_args_from_weights",
    "capsule_layout",
    "capsule_report", "coupling_mass_scores", "flops_per_image", "largest_harmless_removal", "mask_capsules",
    "prune_capsules", "retarget_optimizer", "sensitivity_add_", "type_slices", "types_to_remove", "weight_norm_scores",
]
