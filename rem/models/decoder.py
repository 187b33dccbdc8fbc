"""Reconstruction decoders fed with the class capsules masked to one class."""

from __future__ import annotations

import math

import torch
from torch import nn


def mask_capsules(capsules: torch.Tensor, lengths: torch.Tensor, target: torch.Tensor | None) -> torch.Tensor:
    """Keep one class capsule per sample (the target's, else the longest) -> `(B, J*D)`; a `(B, K)` target (K objects
    per image) gives `(B, K, J*D)`, one masked copy per label."""
    index = target if target is not None else lengths.argmax(dim=1)
    mask = torch.nn.functional.one_hot(index.long(), capsules.shape[1]).to(capsules.dtype)
    if mask.dim() == 3:
        return (capsules.unsqueeze(1) * mask.unsqueeze(-1)).flatten(2)
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
        return out.view(*out.shape[:-1], *self.out_shape)  # (B, C, H, W), or (B, K, C, H, W) for K labels


class ConvDecoder(nn.Module):
    """Efficient-CapsNet's smallNORB decoder: FC 64 -> 8x8 -> 3 x (upsample x2, 3x3 conv) -> C channels, sigmoid,
    resized to the input size."""

    def __init__(self, num_classes: int, capsule_dim: int, out_shape: tuple[int, int, int]):
        super().__init__()
        self.out_shape = out_shape
        self.fc = nn.Sequential(nn.Linear(num_classes * capsule_dim, 64), nn.LeakyReLU(0.3, inplace=True))
        layers: list[nn.Module] = []
        channels = 1
        for out in (64, 128, 128):
            layers += [
                nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                nn.Conv2d(channels, out, 3, padding=1), nn.LeakyReLU(0.3, inplace=True),
            ]
            channels = out
        layers += [nn.Conv2d(channels, out_shape[0], 3, padding=1)]
        self.net = nn.Sequential(*layers)

    def forward(self, capsules: torch.Tensor, lengths: torch.Tensor, target: torch.Tensor | None) -> torch.Tensor:
        masked = mask_capsules(capsules, lengths, target)
        x = self.net(self.fc(masked).view(-1, 1, 8, 8))
        if tuple(x.shape[-2:]) != tuple(self.out_shape[1:]):
            x = nn.functional.interpolate(x, size=self.out_shape[1:], mode="bilinear", align_corners=False)
        return torch.sigmoid(x).view(*masked.shape[:-1], *x.shape[1:])  # K labels: (B, K, C, H, W)


def build_decoder(kind, num_classes: int, capsule_dim: int, in_shape: tuple[int, int, int]) -> nn.Module | None:
    """`False`/None: no decoder; `True`/"fc": FCDecoder; "conv": ConvDecoder."""
    if not kind:
        return None
    if kind is True or kind == "fc":
        return FCDecoder(num_classes, capsule_dim, in_shape)
    if kind == "conv":
        return ConvDecoder(num_classes, capsule_dim, in_shape)
    raise ValueError(f"unknown decoder {kind!r}; use False, True, 'fc' or 'conv'")
