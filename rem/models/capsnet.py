"""CapsNet (Sabour et al. 2017) as REM's official code builds it (`VectorCapsNet`).

conv 256@9x9 + ReLU -> primary capsules (9x9 stride 2, 32 types x 8-D; 64 types for 3-channel inputs as
REM does on CIFAR-10) -> 10 x 16-D class capsules, one 16x8 matrix per (primary capsule, class), dynamic
routing with 3 iterations and a learned 10x16 routing bias (initialised 0.1, REM's addition). `shared_votes`: one
matrix per (primary capsule type, class) shared across the grid instead (32 x 10 matrices instead of 11,520).
`routing`: another registered routing for the class layer (`model.routing`, rem.routing); the routing bias is kept
for a routing that adds a per-parent bias, and dropped for one of another form (self_attention's prior).
"""

from __future__ import annotations

import torch
from torch import nn

from rem.capsules import CapsuleVotes, SabourStem, SharedCapsuleVotes, capsule_lengths
from rem.device import HOST  # built on the host by the seed, then moved
from rem.models.decoder import FCDecoder
from rem.models.registry import CapsuleOutput, register_model
from rem.models.roles import CapsuleLayout, TensorRoles, sabour_layout
from rem.routing import PARENTS, own_routing, routing_named

ROUTING = own_routing("capsnet", "dynamic")  # what model.routing "" routes CapsNet's class capsules with
ROLES = TensorRoles(class_capsule_matrices=("votes.weight",), primary_convs=("primary.conv.weight",),
                    capsule_types=("primary.conv.bias", "votes.weight", "primary_types"))


class CapsNet(SabourStem):
    roles = ROLES

    def __init__(
        self,
        in_shape: tuple[int, int, int],
        num_classes: int,
        *,
        conv_channels: int = 256,
        kernel_size: int = 9,
        primary_types: int = 32,
        primary_dim: int = 8,
        primary_stride: int = 2,
        class_dim: int = 16,
        routing_iterations: int = 3,
        routing_bias: bool = True,
        decoder: bool = False,
        shared_votes: bool = False,
        routing: str = "",
    ):
        super().__init__(in_shape, conv_channels=conv_channels, kernel_size=kernel_size, primary_types=primary_types,
                         primary_dim=primary_dim, primary_stride=primary_stride)
        self.routing_iterations = routing_iterations
        self.routing = routing_named(routing, ROUTING)
        # shared_votes: one matrix per capsule type and parent across the grid, not one per primary capsule
        self.votes = (SharedCapsuleVotes(self.num_primary, primary_dim, num_classes, class_dim, types=primary_types)
                      if shared_votes else CapsuleVotes(self.num_primary, primary_dim, num_classes, class_dim))
        routing_bias = routing_bias and self.routing.bias == PARENTS
        self.routing_bias = nn.Parameter(torch.full((num_classes, class_dim), 0.1, device=HOST)) if routing_bias else None
        self.decoder = FCDecoder(num_classes, class_dim, in_shape) if decoder else None

    def capsule_layout(self) -> CapsuleLayout:
        if getattr(self.votes, "shared_over_grid", False):
            raise ValueError("capsule pruning needs one vote matrix per primary capsule, and this model shares each "
                             "type's matrices across the grid (model.options.shared_votes): set it to false")
        return sabour_layout(self, "votes")

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None, *, quantize_levels: int | None = None) -> CapsuleOutput:
        u = self.primary_capsules(x)
        votes = self.votes(u)
        activations = capsule_lengths(u)
        v, c = self.routing(votes, self.routing_iterations, self.routing_bias, activations=activations,
                            quantize_levels=quantize_levels)
        lengths = capsule_lengths(v)
        recon = self.decoder(v, lengths, target) if self.decoder is not None else None
        return CapsuleOutput(lengths=lengths, capsules=v, couplings=c, reconstruction=recon, input_lengths=activations)


@register_model("capsnet", roles=ROLES)
def capsnet(*, in_shape: tuple[int, int, int], num_classes: int, **overrides) -> CapsNet:
    """REM's CapsNet; 64 primary types for colour inputs (REM's CIFAR-10 setting), 32 otherwise."""
    overrides.setdefault("primary_types", 64 if in_shape[0] == 3 else 32)
    return CapsNet(in_shape, num_classes, **overrides)
