"""Efficient-CapsNet (Mazzia, Salvetti, Chiaberge 2021), after the official TensorFlow graphs.

4-conv stem -> depthwise conv over the whole map -> 16 primary capsules x 8-D -> 16-D class capsules by
self-attention routing with a learned prior B (I x J) added after the softmax. Stem "auto" picks smallnorb's for
2-channel or >= 48 px inputs, mnist's otherwise; `decoder=True` picks the conv decoder for 2-channel inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from rem.capsules import CapsuleVotes, conv_output_size, efficient_squash
from rem.device import HOST  # built on the host by the seed, then moved
from rem.models.class_head import ClassCapsuleHead, LearnedBias
from rem.models.registry import CapsuleOutput, register_model
from rem.models.roles import CapsuleLayout, TensorRoles
from rem.routing import PRIOR

ROLES = TensorRoles(class_capsule_matrices=("votes.weight",), primary_convs=("primary.weight",),
                    capsule_types=("primary.bias", "votes.weight", "primary_caps"))

STEMS = {
    # (out_channels, kernel, stride) per conv
    "mnist": ((32, 5, 1), (64, 3, 1), (64, 3, 1), (128, 3, 2)),
    "smallnorb": ((32, 7, 2), (64, 3, 1), (64, 3, 1), (128, 3, 2)),
}


@dataclass(frozen=True)
class EfficientOptions:
    """Efficient-CapsNet's `model.options`."""

    stem: str = "auto"  # a STEMS key; auto: smallnorb's for 2-channel or >= 48 px inputs, else mnist's
    primary_caps: int = 16
    primary_dim: int = 8
    class_dim: int = 16
    routing_prior: bool = True
    votes_init_std: float = 0.5


@register_model("efficient_capsnet", routing="self_attention", roles=ROLES, options=EfficientOptions)
class EfficientCapsNet(nn.Module, ClassCapsuleHead):
    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, options: EfficientOptions, *,
                 routing: str, routing_iterations: int = 3, decoder: bool | str = False):
        super().__init__()
        o, stem = options, options.stem
        c, h, w = in_shape
        if stem == "auto":
            stem = "smallnorb" if (c == 2 or min(h, w) >= 48) else "mnist"
        if stem not in STEMS:
            raise ValueError(f"EfficientCapsNet: unknown stem {stem!r}; known: {sorted(STEMS)}")
        layers: list[nn.Module] = []
        channels, size = c, [h, w]
        convs = list(STEMS[stem])
        # one channel per primary-capsule component: fewer after capsule pruning removes types
        convs[-1] = (o.primary_caps * o.primary_dim, *convs[-1][1:])
        for out, k, s in convs:
            conv = nn.Conv2d(channels, out, k, stride=s)
            nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")
            nn.init.zeros_(conv.bias)
            if stem == "mnist":
                layers += [conv, nn.ReLU(inplace=True), nn.BatchNorm2d(out)]
            else:
                norm = nn.InstanceNorm2d(out, affine=True)
                nn.init.uniform_(norm.weight)
                nn.init.uniform_(norm.bias)
                layers += [conv, nn.LeakyReLU(0.3, inplace=True), norm]
            channels, size = out, [conv_output_size(z, k, s) for z in size]
        if min(size) < 1:
            raise ValueError(f"EfficientCapsNet: input {in_shape} is too small for the {stem} stem")
        if o.primary_caps < 1 or o.primary_dim < 1:
            raise ValueError(f"EfficientCapsNet: primary_caps and primary_dim must be >= 1; got {o.primary_caps}, "
                             f"{o.primary_dim}")
        self.stem = nn.Sequential(*layers)
        # depthwise conv covering the whole map -> (B, channels, 1, 1)
        self.primary = nn.Conv2d(channels, channels, tuple(size), groups=channels)
        self.primary_caps, self.primary_dim = o.primary_caps, o.primary_dim
        votes = CapsuleVotes(o.primary_caps, o.primary_dim, num_classes, o.class_dim, init_std=o.votes_init_std)
        prior = LearnedBias("prior", PRIOR, wanted=o.routing_prior,
                            start=lambda: torch.zeros(o.primary_caps, num_classes, device=HOST))
        if decoder is True:
            decoder = "conv" if c == 2 else "fc"
        self.build_class_capsules(votes, in_shape=in_shape, routing=routing, iterations=routing_iterations,
                                  bias=prior, decoder=decoder)

    def capsule_layout(self) -> CapsuleLayout:
        """A type owns its stem channels too (the depthwise conv never mixes channels), its vote rows and prior rows."""
        last = [i for i, m in enumerate(self.stem) if isinstance(m, nn.Conv2d)][-1]
        norm = last + 2  # conv, activation, norm (the stem's order)
        entries = [(f"stem.{last}.weight", "channel", "other"), (f"stem.{last}.bias", "channel", "other")]
        entries += [(f"stem.{norm}.{n}", "channel", "other") for n, _ in self.stem[norm].named_parameters()]
        entries += [(f"stem.{norm}.{n}", "channel", "other") for n, b in self.stem[norm].named_buffers() if b.dim() > 0]
        entries += [("primary.weight", "channel", "filter"), ("primary.bias", "channel", "other"),
                    ("votes.weight", "row", "vote")]
        if self.prior is not None:
            entries.append(("prior", "row", "other"))
        return CapsuleLayout("efficient", "primary_caps", self.primary_caps, self.primary_dim, entries, "votes")

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None, *,
                quantize_levels: int | None = None) -> CapsuleOutput:
        feat = self.primary(self.stem(x))
        u = efficient_squash(feat.reshape(x.shape[0], self.primary_caps, self.primary_dim))
        return self.class_capsules(u, target, quantize_levels)
