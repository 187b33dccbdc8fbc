"""γ-CapsNet (Peer, Stabinger, Rodríguez-Sánchez) as REM's official code builds it (`GammaCapsNet`).

conv 256@9x9 + ReLU -> primary capsules (9x9 stride 2, 32 types x 8-D) -> fully-connected capsule layer of
32 x 8-D capsules (one 8x8 matrix per (primary capsule, FC capsule)) -> 10 x 16-D class capsules (one 16x8
matrix per (FC capsule, class)). Both capsule layers route with scaled-distance-agreement (SDA), 3 iterations,
vote lengths clipped to the input capsule's activation, and a learned routing bias per layer (init 0.1).
The returned couplings are the class layer's (32 inputs x classes), as REM's parse trees use. `routing`: another
registered routing for the class layer only (`model.routing`, rem.routing; the FC capsule layer keeps SDA, p and
grad_through_routing reach the class layer only for a routing that takes them).

Two defaults differ from REM's port (each reference is one option away) because with REM's choices the network
barely learns in short runs (benchmarks/README.md, "γ-CapsNet defaults", has the ablation):
- `grad_through_routing=True` (the main cause): autograd runs through SDA's distances and couplings, as in
  Peer et al.'s γ-capsule code; REM detaches all but the last iteration (see `rem.routing.scaled_distance_routing`).
- `vote_init_std=None`: transformation matrices drawn with std 1/sqrt(input capsule dim), so a vote starts about
  as long as its input capsule and the γ clip |u_hat| <= a_i is active from the start. With REM's and Peer's
  std 0.1 an 8-D vote starts at ~0.28 a_i; SDA agreement is a distance, so parents long enough for the margin
  loss (0.9) need votes of similar length, i.e. matrices ~3.5x larger than at init.
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
        # REM's +Q quantizes both routings: the FC capsule layer with K = 11, the class layer with the K asked
        # for (REM: 6, rem.config's eval.levels_per_model)
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

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None, *, quantize_levels: int | None = None) -> CapsuleOutput:
        u = self.primary_capsules(x)
        fc_levels = self.fc_quantize_levels if quantize_levels else None
        h, _ = scaled_distance_routing(self.fc_votes(u), self.routing_iterations, self.fc_bias, capsule_lengths(u),
                                       quantize_levels=fc_levels, **self.sda_options())
        return self.class_capsules(h, target, quantize_levels)
