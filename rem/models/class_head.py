"""The class capsules every capsule family ends with: the votes of its last capsules, the routing that turns them into
class capsules (the family's own or `model.routing`, with the learned bias of that routing's form, the options it
takes from the model and its own options, `model.routing_options`), their lengths, an optional reconstruction
decoder, and the `CapsuleOutput`.

A mixin, not a submodule: its tensors are attributes of the model under each family's own names
(`votes.weight` or `class_votes.weight`; `routing_bias`, `class_bias` or `prior`), which state_dicts, checkpoints,
parameter counts and pruning's roles use. It builds in the families' order -- votes (drawn by the caller), bias,
decoder -- so a seed draws the family's weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from rem.capsules import capsule_lengths
from rem.models.decoder import build_decoder
from rem.models.registry import CapsuleOutput
from rem.config.options import declared_options
from rem.routing import ROUTINGS


@dataclass(frozen=True)
class LearnedBias:
    """A family's learned routing bias: the attribute that holds it, its form (`rem.routing.PARENTS`, (J, D) added
    before the squash, or `PRIOR`, (I, J) added to the couplings), and how it starts. It exists only when `wanted`
    and the routing adds a bias of that form (else the attribute is None): `start` is called only then, so a bias
    that starts random draws nothing from the seed when it is dropped."""

    attribute: str
    form: str
    start: Callable[[], torch.Tensor]
    wanted: bool = True


@dataclass(frozen=True)
class HeadNames:
    """Where the head's votes and bias live on the model (attribute names; bias None when the family has none)."""

    votes: str
    bias: str | None


class ClassCapsuleHead:
    """Mixin for a capsule family (an `nn.Module`): `build_class_capsules` in its constructor, `class_capsules` at the
    end of its forward. Sets `routing` (the registered `rem.routing.Routing`; the per-iteration analysis stands in
    for it), `routing_iterations`, `routing_options` (the keywords the family passes its routing), `routing_settings`
    (the routing's own options as keywords: their defaults; `create_model` sets those `model.routing_options` gives)
    and `decoder` on the model."""

    def build_class_capsules(self, votes: nn.Module, *, in_shape: tuple[int, int, int], routing: str, iterations: int,
                             bias: LearnedBias | None = None, options: dict | None = None, decoder: bool | str = False,
                             votes_attribute: str = "votes") -> None:
        """`votes`: the class layer's vote matrices (`rem.capsules.CapsuleVotes` or `SharedCapsuleVotes`, weight
        (inputs, J, D, D_in)), stored as `votes_attribute`; `routing`: a registered routing's name (`create_model`
        passes `model.routing`, or for "" the routing the family registered with); `options`: the family's routing
        options, of which the routing gets those it takes; `decoder`: `rem.models.decoder.build_decoder`'s kind,
        reconstructing `in_shape` from the J x D capsules."""
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
        """Input capsules `u` (B, I, D_in) -> the model's output: class capsules, their lengths, the couplings, the
        reconstruction (decoder masked by `target` in training, by the prediction otherwise) and u's lengths."""
        votes = getattr(self, self.head_names.votes)(u)
        # after the votes: autograd sums u's gradient in the order the same-numbers tests pin
        activations = capsule_lengths(u)
        bias = getattr(self, self.head_names.bias) if self.head_names.bias else None
        v, c = self.routing(votes, self.routing_iterations, bias, activations=activations,
                            quantize_levels=quantize_levels, **self.routing_options, **self.routing_settings)
        lengths = capsule_lengths(v)
        recon = self.decoder(v, lengths, target) if self.decoder is not None else None
        return CapsuleOutput(lengths=lengths, capsules=v, couplings=c, reconstruction=recon, input_lengths=activations)
