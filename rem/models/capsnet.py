"""CapsNet (Sabour et al. 2017) as REM's official code builds it (`VectorCapsNet`): conv 256@9x9 -> primary capsules
(32 types x 8-D, 64 types for colour inputs) -> 10 x 16-D class capsules, dynamic routing plus a learned routing bias.

`shared_votes` shares each type's vote matrices across the grid. The scale options the routing-regime study varies
default to the published values; `vote_init_fan_in` scales the vote std by sqrt(1152 / inputs) so larger canvases
do not start with saturated class capsules.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rem.capsules import CapsuleVotes, SabourStem, SharedCapsuleVotes, sabour_primary_types
from rem.config import ConfigError
from rem.device import HOST  # built on the host by the seed, then moved
from rem.models.class_head import ClassCapsuleHead, LearnedBias
from rem.models.registry import CapsuleOutput, register_model
from rem.models.roles import CapsuleLayout, TensorRoles, sabour_layout
from rem.routing import PARENTS

PUBLISHED_VOTE_STD = 0.1  # REM's and Sabour et al.'s vote matrices: N(0, 0.1²)
PUBLISHED_INPUTS = 1152  # primary capsules on a 28x28 input, where that std was chosen
ROLES = TensorRoles(class_capsule_matrices=("votes.weight",), primary_convs=("primary.conv.weight",),
                    capsule_types=("primary.conv.bias", "votes.weight", "primary_types"))


@dataclass(frozen=True)
class CapsNetOptions:
    """CapsNet's `model.options`."""

    conv_channels: int = 256
    kernel_size: int = 9
    primary_types: int | None = None  # None: 64 for colour inputs (REM's CIFAR-10 setting), 32 otherwise
    primary_dim: int = 8
    primary_stride: int = 2
    class_dim: int = 16
    routing_bias: bool = True
    shared_votes: bool = False
    vote_init_std: float = PUBLISHED_VOTE_STD
    vote_init_fan_in: bool = False
    routing_bias_init: float = 0.1
    agreement_scale: float = 1.0


@register_model("capsnet", routing="dynamic", roles=ROLES, options=CapsNetOptions)
class CapsNet(SabourStem, ClassCapsuleHead):
    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, options: CapsNetOptions, *,
                 routing: str, routing_iterations: int = 3, decoder: bool = False):
        o = options
        types = sabour_primary_types(in_shape, o.primary_types)
        super().__init__(in_shape, conv_channels=o.conv_channels, kernel_size=o.kernel_size, primary_types=types,
                         primary_dim=o.primary_dim, primary_stride=o.primary_stride)
        std = o.vote_init_std * ((PUBLISHED_INPUTS / self.num_primary) ** 0.5 if o.vote_init_fan_in else 1.0)
        votes = (SharedCapsuleVotes(self.num_primary, o.primary_dim, num_classes, o.class_dim, types=types,
                                    init_std=std)
                 if o.shared_votes else CapsuleVotes(self.num_primary, o.primary_dim, num_classes, o.class_dim,
                                                     init_std=std))
        bias_init = float(o.routing_bias_init)
        bias = LearnedBias("routing_bias", PARENTS, wanted=o.routing_bias,
                           start=lambda: torch.full((num_classes, o.class_dim), bias_init, device=HOST))
        self.build_class_capsules(votes, in_shape=in_shape, routing=routing, iterations=routing_iterations,
                                  bias=bias, options={"agreement_scale": o.agreement_scale}, decoder=decoder)
        if o.agreement_scale != 1.0 and not self.routing_options:  # a refusal of two keys, found as it is built
            raise ConfigError(f"capsnet: agreement_scale {o.agreement_scale:g} needs an agreement routing (dynamic); "
                              f"model.routing {routing!r} takes none")

    def capsule_layout(self) -> CapsuleLayout:
        if getattr(self.votes, "shared_over_grid", False):
            raise ConfigError("capsule pruning needs one vote matrix per primary capsule, and this model shares "
                              "each type's matrices across the grid (model.options.shared_votes): set it to false")
        return sabour_layout(self, "votes")

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None, *,
                quantize_levels: int | None = None) -> CapsuleOutput:
        return self.class_capsules(self.primary_capsules(x), target, quantize_levels)
