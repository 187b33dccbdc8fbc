"""Reconstruction decoders fed with the class capsules masked to one class."""

from __future__ import annotations

import math

import torch
from torch import nn


def mask_capsules(capsules: torch.Tensor, lengths: torch.Tensor, target: torch.Tensor | None) -> torch.Tensor:
    """Keep only one class capsule per sample: the true class in training, the longest one otherwise."""
    index = target if target is not None else lengths.argmax(dim=1)
    mask = torch.nn.functional.one_hot(index.long(), capsules.shape[1]).to(capsules.dtype)
    return (capsules * mask.unsqueeze(-1)).flatten(1)


class FCDecoder(nn.Module):
    """Sabour's decoder: FC 512 -> 1024 -> C*H*W with ReLU, ReLU, sigmoid; output in [0, 1]."""

    def __init__(self, num_classes: int, capsule_dim: int, out_shape: tuple[int, int, int]):
        super().__init__()
        self.out_shape = out_shape
        self.net = nn.Sequential(
            nn.Linear(num_classes * capsule_dim, 512), nn.ReLU(inplace=True),
            nn.Linear(512, 1024), nn.ReLU(inplace=True),
            nn.Linear(1024, math.prod(out_shape)), nn.Sigmoid(),
        )

    def forward(self, capsules: torch.Tensor, lengths: torch.Tensor, target: torch.Tensor | None) -> torch.Tensor:
        out = self.net(mask_capsules(capsules, lengths, target))
        return out.view(-1, *self.out_shape)
