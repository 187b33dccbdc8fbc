"""The representation an equivariance test compares: the class capsules' poses, or a CNN's `model.hidden` layer,
captured by a forward hook so the pass that evaluates a model also gives it."""

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
    """(N, D): the representation of normalised `images` in one forward (`quantize_levels` None: routing as trained)."""
    with Representations(model) as seen:
        model(images, quantize_levels=quantize_levels)
    return seen.tensor()
