"""CNN baselines the capsule papers compare against, trained by the same loop (with cross-entropy).

    cnn_sabour   Sabour et al. 2017's baseline: three 5x5 convolutions of 256, 256 and 128 channels, stride 1,
                 padded so the maps keep the input size, ReLU; fully connected 328 and 192 (ReLU); then, as the
                 paper has it, "the last fully connected layer is connected with dropout to a 10 class softmax
                 layer". 35,445,522 parameters on 1x28x28 with 10 classes (35.4 M, the paper's figure).
    cnn_matched  CapsNet's own convolutions (rem.models.capsnet: 256@9x9 valid, then the primary-capsule conv,
                 9x9 stride 2 with 32 x 8 channels, 64 x 8 for colour inputs), ReLU, then one fully connected
                 layer with exactly as many weights as CapsNet's class-capsule vote matrices (flatten -> J x 16
                 units: 1152 x 8 -> 160 on MNIST), ReLU, dropout, the class layer. Routing is swapped for a plain
                 layer at CapsNet's parameters and FLOPs per image (both within 1 %, tests/models/test_cnn_baselines.py).

Both return `CapsuleOutput` with `logits` (which makes `rem.losses.classification_loss` use cross-entropy),
lengths = softmax(logits), so argmax and accuracy read them as a capsule model's, and capsules = those
probabilities as (B, J, 1): one 1-D "capsule" per class, keeping `lengths == capsules.norm(dim=-1)` as for every
capsule model. There are no couplings (registered with `routing=None`): no parse trees, no routing metrics.
With two labels per image (MultiMNIST, rem/data/multi.py) the loss is the cross-entropy against half the
probability on each label (`rem.losses.classification_loss` says why) and an image is right when its two largest
logits are its labels, as for a capsule model's two longest capsules.
Neither model has a decoder or routing iterations; asking for one is a ValueError naming the model and key
(`rem.models.create_model`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from rem.capsules import conv_output_size, valid_conv2d
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

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None, *, quantize_levels: int | None = None) -> CapsuleOutput:
        # `target` (the decoder's mask) and `quantize_levels` (+Q couplings) have nothing to act on here: accepted
        # so the trainer and evaluation call every model alike.
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
    """CapsNet's convolutions (its default for `primary_types`: 64 for colour inputs, 32 otherwise -- see
    rem.models.capsnet; tests/models/test_cnn_baselines.py compares the layer shapes) and a layer of its vote-matrix size."""
    types = options.primary_types if options.primary_types is not None else (64 if in_shape[0] == 3 else 32)
    primary_dim, class_dim = 8, 16  # CapsNet's capsule sizes: the FC layer gets its (I x 8) x (J x 16) vote weights
    return CNNBaseline(in_shape, num_classes, convs=((256, 9, 1, 0), (types * primary_dim, 9, 2, 0)),
                       hidden=(num_classes * class_dim,), dropout=options.dropout)
