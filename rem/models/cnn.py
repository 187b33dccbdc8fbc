"""CNN baselines the capsule papers compare against, trained by the same loop with cross-entropy.

`cnn_sabour` is Sabour et al. 2017's 35.4 M-parameter baseline; `cnn_matched` keeps CapsNet's convolutions and
replaces routing by one layer of its vote matrices' size (parameters and FLOPs within 1 %). Both return `logits`, with
lengths = softmax(logits) and capsules (B, J, 1), so accuracy reads them as any capsule model; no couplings, decoder
or routing iterations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from rem.capsules import conv_output_size, sabour_primary_types, valid_conv2d
from rem.models.registry import CapsuleOutput, register_model

# (out_channels, kernel, stride, padding) per convolution
ConvSpec = tuple[int, int, int, int]


class CNNBaseline(nn.Module):
    """Convolutions (each + ReLU) -> flatten -> fully connected `hidden` layers (each + ReLU) -> dropout -> classes."""

    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, *, convs: Sequence[ConvSpec],
                 hidden: Sequence[int], dropout: float):
        super().__init__()
        channels, size = in_shape[0], list(in_shape[1:])
        self.convs = nn.ModuleList()
        for out, kernel, stride, padding in convs:
            self.convs.append(nn.Conv2d(channels, out, kernel, stride=stride, padding=padding))
            channels, size = out, [conv_output_size(z, kernel, stride, padding) for z in size]
        if min(size) < 1:
            raise ValueError(f"{type(self).__name__}: input {in_shape} is too small for its convolutions")
        layers: list[nn.Module] = []
        width = channels * size[0] * size[1]
        for units in hidden:
            layers += [nn.Linear(width, units), nn.ReLU(inplace=True)]
            width = units
        self.hidden = nn.Sequential(*layers)
        self.dropout = nn.Dropout(dropout)
        self.classes = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None, *,
                quantize_levels: int | None = None) -> CapsuleOutput:
        # `target` and `quantize_levels` are ignored: accepted so every model is called alike
        for conv in self.convs:
            x = torch.relu(valid_conv2d(conv, x))  # the unpadded ones take the capsule models' fast bf16 path
        logits = self.classes(self.dropout(self.hidden(x.flatten(1))))
        probabilities = torch.softmax(logits.float(), dim=1)  # fp32, like capsule lengths, whatever the autocast
        return CapsuleOutput(lengths=probabilities, capsules=probabilities.unsqueeze(-1), couplings=None,
                             logits=logits)


@dataclass(frozen=True)
class CNNOptions:
    """The `model.options` of a CNN baseline (its layers are the builder's own)."""

    dropout: float = 0.5  # before the class layer


@dataclass(frozen=True)
class MatchedCNNOptions(CNNOptions):
    primary_types: int | None = None  # CapsNet's primary capsule types it matches (None: CapsNet's default)


@register_model("cnn_sabour", routing=None, options=CNNOptions)
def cnn_sabour(in_shape: tuple[int, int, int], num_classes: int, options: CNNOptions) -> CNNBaseline:
    return CNNBaseline(in_shape, num_classes, convs=((256, 5, 1, 2), (256, 5, 1, 2), (128, 5, 1, 2)),
                       hidden=(328, 192), dropout=options.dropout)


@register_model("cnn_matched", routing=None, options=MatchedCNNOptions)
def cnn_matched(in_shape: tuple[int, int, int], num_classes: int, options: MatchedCNNOptions) -> CNNBaseline:
    """CapsNet's convolutions (same `primary_types` default) and a fully connected layer of its vote matrices' size."""
    types = sabour_primary_types(in_shape, options.primary_types)
    primary_dim, class_dim = 8, 16  # CapsNet's capsule sizes: the FC layer gets its (I x 8) x (J x 16) vote weights
    return CNNBaseline(in_shape, num_classes, convs=((256, 9, 1, 0), (types * primary_dim, 9, 2, 0)),
                       hidden=(num_classes * class_dim,), dropout=options.dropout)
