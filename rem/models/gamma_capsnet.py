"""γ-CapsNet (Peer, Stabinger, Rodríguez-Sánchez) as REM's official code builds it (`GammaCapsNet`).

conv 256@9x9 -> 32 x 8-D primary capsules -> 32 x 8-D fully-connected capsules -> 10 x 16-D class capsules; both
capsule layers route by scaled-distance agreement with clipped votes and a learned bias. The couplings returned are
the class layer's; `model.routing` replaces that layer's routing only.

Two defaults differ from REM's port, which barely learns in short runs (benchmarks/README.md, "γ-CapsNet defaults"):
`grad_through_routing=True` (Peer et al.'s code) and `vote_init_std=None`, std 1/sqrt(input dim), so votes start
about as long as their input capsules and the γ clip is active from the start.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from rem.capsules import CapsuleVotes, SabourStem, capsule_lengths
from rem.device import HOST  # built on the host by the seed, then moved
from rem.models.class_head import ClassCapsuleHead, LearnedBias
from rem.models.registry import CapsuleOutput, register_model
from rem.models.roles import CapsuleLayout, TensorRoles, sabour_layout
from rem.routing import PARENTS, scaled_distance_routing

ROLES = TensorRoles(class_capsule_matrices=("fc_votes.weight", "class_votes.weight"),
                    primary_convs=("primary.conv.weight",),
                    capsule_types=("primary.conv.bias", "fc_votes.weight", "primary_types"))


@dataclass(frozen=True)
class GammaOptions:
    """γ-CapsNet's `model.options`."""

    conv_channels: int = 256
    kernel_size: int = 9
    primary_types: int = 32  # for every input: REM's CIFAR-10 γ-CapsNet also uses 32
    primary_dim: int = 8
    primary_stride: int = 2
    fc_caps: int = 32
    fc_dim: int = 8
    class_dim: int = 16
    routing_bias: bool = True
    p: float = 0.9
    grad_through_routing: bool = True
    vote_init_std: float | None = None
    fc_quantize_levels: int = 11


@register_model("gamma_capsnet", routing="scaled_distance", roles=ROLES, options=GammaOptions)
class GammaCapsNet(SabourStem, ClassCapsuleHead):
    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, options: GammaOptions, *,
                 routing: str, routing_iterations: int = 3, decoder: bool | str = False):
        o = options
        super().__init__(in_shape, conv_channels=o.conv_channels, kernel_size=o.kernel_size,
                         primary_types=o.primary_types, primary_dim=o.primary_dim, primary_stride=o.primary_stride)
        self.p, self.grad_through_routing = o.p, o.grad_through_routing
        # REM's +Q quantizes the FC capsule layer too, with its own K (REM: 11)
        self.fc_quantize_levels = o.fc_quantize_levels
        self.fc_votes = CapsuleVotes(self.num_primary, o.primary_dim, o.fc_caps, o.fc_dim,
                                     init_std=o.vote_init_std or o.primary_dim ** -0.5)
        self.fc_bias = nn.Parameter(torch.full((o.fc_caps, o.fc_dim), 0.1, device=HOST)) if o.routing_bias else None
        class_votes = CapsuleVotes(o.fc_caps, o.fc_dim, num_classes, o.class_dim,
                                   init_std=o.vote_init_std or o.fc_dim ** -0.5)
        bias = LearnedBias("class_bias", PARENTS, wanted=o.routing_bias,
                           start=lambda: torch.full((num_classes, o.class_dim), 0.1, device=HOST))
        self.build_class_capsules(class_votes, in_shape=in_shape, routing=routing, iterations=routing_iterations,
                                  bias=bias, options=self.sda_options(), decoder=decoder, votes_attribute="class_votes")

    def sda_options(self) -> dict:
        """The FC capsule layer's SDA keywords; the class layer's routing gets those it takes."""
        return {"p": self.p, "grad_through_routing": self.grad_through_routing}

    def capsule_layout(self) -> CapsuleLayout:
        return sabour_layout(self, "fc_votes")  # the primary capsules feed the FC capsule layer

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None, *,
                quantize_levels: int | None = None) -> CapsuleOutput:
        u = self.primary_capsules(x)
        fc_levels = self.fc_quantize_levels if quantize_levels else None
        h, _ = scaled_distance_routing(self.fc_votes(u), self.routing_iterations, self.fc_bias, capsule_lengths(u),
                                       quantize_levels=fc_levels, **self.sda_options())
        return self.class_capsules(h, target, quantize_levels)
