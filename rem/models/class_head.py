"""The class-capsule layer every capsule family ends with: votes, routing (the family's or `model.routing`), learned
bias, lengths, optional decoder. A mixin, not a submodule, so its tensors keep each family's state_dict names; it
builds votes, bias, decoder in that order so a seed draws the family's weights."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from rem.capsules import capsule_lengths
from rem.config.options import declared_options
from rem.models.decoder import build_decoder
from rem.models.registry import CapsuleOutput
from rem.routing import ROUTINGS


@dataclass(frozen=True)
class LearnedBias:
    """A family's learned routing bias of `form` `PARENTS` (J, D) or `PRIOR` (I, J). Built only when `wanted` and the
    routing adds that form (else the attribute is None), so a dropped bias draws nothing from the seed."""

    attribute: str
    form: str
    start: Callable[[], torch.Tensor]
    wanted: bool = True


@dataclass(frozen=True)
class HeadNames:
    """Attribute names of the head's votes and bias (None: no bias)."""

    votes: str
    bias: str | None


class ClassCapsuleHead:
    """Mixin for an `nn.Module` family: call `build_class_capsules` in its constructor and `class_capsules` at the end
    of its forward. `routing_settings` are the routing's options as `model.routing_options` sets them (defaults
    filled in), `routing_options` those the family sets from its own `model.options`, which the config cannot set."""

    def build_class_capsules(self, votes: nn.Module, *, in_shape: tuple[int, int, int], routing: str, iterations: int,
                             bias: LearnedBias | None = None, options: dict | None = None, decoder: bool | str = False,
                             votes_attribute: str = "votes") -> None:
        """`votes`: vote module with weight (I, J, D, D_in), stored as `votes_attribute`; `routing`: a registered
        name; `options`: what the family sets of its routing's options (those the routing declares reach it);
        `decoder`: a `build_decoder` kind."""
        setattr(self, votes_attribute, votes)
        self.routing, self.routing_iterations = ROUTINGS.get(routing), iterations
        self.routing_options = self.routing.own_options(options or {})
        self.routing_settings = declared_options(self.routing.options)
        if bias is not None:
            kept = bias.wanted and self.routing.bias == bias.form
            setattr(self, bias.attribute, nn.Parameter(bias.start()) if kept else None)
        self.head_names = HeadNames(votes_attribute, bias.attribute if bias is not None else None)
        _, classes, dim, _ = votes.weight.shape
        self.decoder = build_decoder(decoder, classes, dim, in_shape)

    def class_capsules(self, u: torch.Tensor, target: torch.Tensor | None,
                       quantize_levels: int | None) -> CapsuleOutput:
        """Input capsules `u` (B, I, D_in) -> `CapsuleOutput`; the decoder masks by `target`, else by the prediction."""
        votes = getattr(self, self.head_names.votes)(u)
        # after the votes: autograd sums u's gradient in the order the same-numbers tests pin
        activations = capsule_lengths(u)
        bias = getattr(self, self.head_names.bias) if self.head_names.bias else None
        v, c = self.routing(votes, self.routing_iterations, bias, activations=activations,
                            quantize_levels=quantize_levels, **{**self.routing_settings, **self.routing_options})
        lengths = capsule_lengths(v)
        recon = self.decoder(v, lengths, target) if self.decoder is not None else None
        return CapsuleOutput(lengths=lengths, capsules=v, couplings=c, reconstruction=recon, input_lengths=activations)
