"""The representation an equivariance test compares, captured from whatever forward passes a model runs: the class
capsules' poses of a capsule model (10 x 16 numbers per image on 10 classes), and for a model without them (a CNN
baseline) its last hidden layer, `model.hidden` (160 units for the CNN matched to CapsNet).

Captured by a forward hook, so the same pass that evaluates a model (its loss, accuracy and parse trees) also gives
its representation: robustness and equivariance on the same transformed images need each forward run once.
"""

from __future__ import annotations

import torch
from torch import nn


class Representations:
    """`with Representations(model) as seen:` every forward of `model` inside appends its representation, one row
    per image (float32, flattened); `seen.tensor()` is all of them in the order run."""

    def __init__(self, model: nn.Module):
        self.model = model
        self.parts: list[torch.Tensor] = []
        self._handle = None

    def __enter__(self) -> Representations:
        hidden = getattr(self.model, "hidden", None)
        if isinstance(hidden, nn.Module):
            self._handle = hidden.register_forward_hook(lambda _m, _i, out: self.parts.append(out.flatten(1).float()))
        else:
            self._handle = self.model.register_forward_hook(
                lambda _m, _i, out: self.parts.append(out.capsules.flatten(1).float()))
        return self

    def __exit__(self, *_exc) -> None:
        self._handle.remove()

    def tensor(self) -> torch.Tensor:
        if not self.parts:
            raise RuntimeError("representations: the model ran no forward pass while they were captured")
        return torch.cat(self.parts)


def representation(model: nn.Module, images: torch.Tensor, quantize_levels: int | None = None) -> torch.Tensor:
    """(N, D): the representation of normalised `images` in one forward. `quantize_levels`: the +Q forward's coupling
    levels (None: the routing as trained)."""
    with Representations(model) as seen:
        model(images, quantize_levels=quantize_levels)
    return seen.tensor()
