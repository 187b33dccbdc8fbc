"""An architecture of one's own, registered from outside `rem/` (docs/extending.md): the smallest capsule network
the shared class-capsule head serves. One fully connected layer turns the whole image into `capsules` primary
capsules (its own options, `model.options`, declared as `FlatOptions`); the head (`rem.models.class_head`) votes,
routes them -- dynamic routing with a learned bias, or whatever `model.routing` names -- and decodes when
`model.decoder` asks. Trials find it through REM_PLUGINS=tests.extending.toy_architecture."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from rem.capsules import CapsuleVotes, squash
from rem.models import CapsuleOutput, register_model
from rem.models.class_head import ClassCapsuleHead, LearnedBias
from rem.models.roles import TensorRoles
from rem.routing import PARENTS

NAME = "flat_capsnet"
# Pruning prunes convolutions and capsule matrices, never fully connected layers: here, the class capsules' votes.
ROLES = TensorRoles(class_capsule_matrices=("votes.weight",))


@dataclass(frozen=True)
class FlatOptions:
    capsules: int = 16
    capsule_dim: int = 8
    class_dim: int = 16


@register_model(NAME, routing="dynamic", roles=ROLES, options=FlatOptions)
class FlatCapsNet(nn.Module, ClassCapsuleHead):
    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, options: FlatOptions, *, routing: str,
                 routing_iterations: int = 3, decoder: bool = False):
        super().__init__()
        self.options = options  # what it was built with (tests/extending/test_options_mechanism.py reads it)
        self.primary = nn.Linear(math.prod(in_shape), options.capsules * options.capsule_dim)
        votes = CapsuleVotes(options.capsules, options.capsule_dim, num_classes, options.class_dim)
        bias = LearnedBias("routing_bias", PARENTS, start=lambda: torch.full((num_classes, options.class_dim), 0.1))
        # `routing`: model.routing, or the one registered above when it is "" (create_model passes it)
        self.build_class_capsules(votes, in_shape=in_shape, routing=routing, iterations=routing_iterations, bias=bias,
                                  decoder=decoder)

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None, *,
                quantize_levels: int | None = None) -> CapsuleOutput:
        u = squash(self.primary(x.flatten(1)).view(x.shape[0], self.options.capsules, self.options.capsule_dim))
        return self.class_capsules(u, target, quantize_levels)
