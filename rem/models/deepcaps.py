"""DeepCaps (Rajasegaran et al. 2019) as REM's official code builds it (`DeepCapsNet`).

conv 128@3x3 + BatchNorm -> 1-D capsules -> four cells of conv-capsule layers (cell 4 with a 3-D routed layer) ->
cells 3 and 4 flattened -> 10 x 32-D class capsules, dynamic routing plus a learned bias. Capsule maps are
`(B, types, dim, H, W)`. `caps_init_gain` (2) draws conv-capsule weights N(0, (gain / sqrt(fan_in))^2) so capsule
lengths survive the squashes (None: PyTorch's default, REM's port; benchmarks/README.md, "DeepCaps initialisation").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from rem.capsules import CapsuleVotes, squash
from rem.device import HOST  # built on the host by the seed, then moved
from rem.models.class_head import ClassCapsuleHead, LearnedBias
from rem.models.registry import CapsuleOutput, register_model
from rem.models.roles import CapsuleLayout, TensorRoles
from rem.routing import PARENTS

# REM names its class-capsule matrix `W`, so its threshold search (tensors named `weight`) never zeroes it; nor does
# rem.pruning unless prune.rem_tensors=false.
ROLES = TensorRoles(class_capsule_matrices=("votes.weight",), unthresholded=("votes.weight",))


class _ScalarSquash(torch.autograd.Function):
    """Squash of 1-D capsules, elementwise: v = x |x| / (1 + x^2), dv/dx = 2 |x| / (1 + x^2)^2. Written out because
    `squash` over a size-1 dim keeps six full-size intermediates; this roughly halves the stem's cost."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        denominator = torch.mul(x, x).add_(1.0)
        return torch.abs(x).mul_(x).div_(denominator)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        denominator = torch.mul(x, x).add_(1.0).square_()
        return torch.abs(x).mul_(2.0).div_(denominator).mul_(grad)


def squash_scalar_capsules(x: torch.Tensor) -> torch.Tensor:
    """Squash each element of `x` as a one-dimensional capsule (fp32, like `squash`)."""
    return _ScalarSquash.apply(x.float())


class ConvCaps2d(nn.Module):
    """Conv-capsule layer: one Conv2d over the (types * dim) channels, reshaped, squashed over dim."""

    def __init__(self, in_types: int, in_dim: int, out_types: int, out_dim: int, kernel_size: int = 3, stride: int = 1):
        super().__init__()
        self.out_types, self.out_dim = out_types, out_dim
        self.conv = nn.Conv2d(in_types * in_dim, out_types * out_dim, kernel_size, stride=stride,
                              padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d, h, w = x.shape
        out = self.conv(x.reshape(b, t * d, h, w))
        return squash(out.view(b, self.out_types, self.out_dim, *out.shape[-2:]), dim=2)


class ConvCaps3d(nn.Module):
    """DeepCaps' 3-D conv-capsule layer: a Conv3d (kernel (kernel_depth, 3, 3), depth stride in_dim) votes per input
    type and position, then dynamic routing over the input types. Each vote sees its capsule's first `kernel_depth`
    dims (REM: 3). The Conv3d runs as the equivalent, faster Conv2d; the parameter keeps the Conv3d's state_dict.
    `softmax_over`: "space_and_parents" (REM, the paper's 3-D softmax) or "parents" (the Keras code, per position).
    """

    def __init__(
        self,
        in_types: int,
        in_dim: int,
        out_types: int,
        out_dim: int,
        *,
        kernel_depth: int = 3,
        iterations: int = 3,
        softmax_over: str = "space_and_parents",
    ):
        super().__init__()
        if softmax_over not in ("space_and_parents", "parents"):
            raise ValueError(f"ConvCaps3d: softmax_over must be 'space_and_parents' or 'parents', got {softmax_over!r}")
        if kernel_depth > in_dim:
            raise ValueError("ConvCaps3d: kernel_depth must not exceed the input capsule dimension")
        self.out_types, self.out_dim, self.iterations, self.softmax_over = out_types, out_dim, iterations, softmax_over
        self.conv = nn.Conv3d(1, out_types * out_dim, (kernel_depth, 3, 3), stride=(in_dim, 1, 1), padding=(0, 1, 1))

    def votes(self, x: torch.Tensor) -> torch.Tensor:
        """Votes `(B, J, D', I, H*W)` of input capsules `(B, I, D, H, W)` (the Conv3d, run as a Conv2d)."""
        b, t, d, h, w = x.shape
        kd = self.conv.kernel_size[0]
        weight = self.conv.weight.view(self.conv.out_channels, kd, *self.conv.kernel_size[1:])
        out = nn.functional.conv2d(x[:, :, :kd].reshape(b * t, kd, h, w), weight, self.conv.bias, padding=1)
        return out.view(b, t, self.out_types, self.out_dim, h * w).permute(0, 2, 3, 1, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d, h, w = x.shape
        j, dj, p = self.out_types, self.out_dim, h * w
        votes = self.votes(x)
        with torch.autocast(x.device.type, enabled=False):
            u = votes.float()  # (B, J, D', I, P)
            detached = u.detach()
            logits = u.new_zeros(b, j, t, p)  # (B, J, I, P)
            for it in range(self.iterations):
                last = it == self.iterations - 1
                if self.softmax_over == "parents":
                    c = torch.softmax(logits, dim=1)
                else:  # jointly over (J, P) for each input type i
                    c = torch.softmax(logits.transpose(1, 2).reshape(b, t, j * p), dim=-1)
                    c = c.view(b, t, j, p).transpose(1, 2)
                s = torch.einsum("bjip,bjdip->bjdp", c, u if last else detached)
                v = squash(s, dim=2)  # (B, J, D', P)
                if not last:
                    logits = logits + torch.einsum("bjdp,bjdip->bjip", v, detached)
        return v.view(b, j, dj, h, w)


def init_conv_capsules(cells: nn.Module, gain: float) -> None:
    """Conv-capsule weights ~ N(0, (gain / sqrt(fan_in))^2), biases 0: capsule lengths survive the squashes."""
    for module in cells.modules():
        if isinstance(module, (nn.Conv2d, nn.Conv3d)):
            nn.init.normal_(module.weight, 0.0, gain / math.sqrt(module.weight[0].numel()))
            nn.init.zeros_(module.bias)


def flatten_capsules(x: torch.Tensor) -> torch.Tensor:
    """(B, types, dim, H, W) -> (B, H*W*types, dim), position-major as REM's `flatten_caps`."""
    b, t, d, h, w = x.shape
    return x.permute(0, 3, 4, 1, 2).reshape(b, h * w * t, d)


@dataclass(frozen=True)
class DeepCapsOptions:
    """DeepCaps' `model.options`."""

    stem_channels: int = 128
    caps_types: int = 32
    cell_dims: tuple[int, int, int, int] = (4, 8, 8, 8)
    class_dim: int = 32
    conv3d_kernel_depth: int = 3
    conv3d_softmax: str = "space_and_parents"
    caps_init_gain: float | None = 2.0


@register_model("deepcaps", routing="dynamic", roles=ROLES, options=DeepCapsOptions)
class DeepCaps(nn.Module, ClassCapsuleHead):
    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, options: DeepCapsOptions, *,
                 routing: str, routing_iterations: int = 3, decoder: bool | str = False):
        super().__init__()
        o = options
        c, h, w = in_shape
        self.conv1 = nn.Conv2d(c, o.stem_channels, 3, padding=1)
        # REM's momentum 0.99 (PyTorch convention: running statistics ~ the last batch's), eps 1e-8
        self.bn1 = nn.BatchNorm2d(o.stem_channels, eps=1e-8, momentum=0.99)
        cells = []
        in_types, in_dim = o.stem_channels, 1
        for k, dim in enumerate(o.cell_dims):
            cell = nn.ModuleDict({
                "down": ConvCaps2d(in_types, in_dim, o.caps_types, dim, stride=2),
                "skip": (
                    ConvCaps3d(o.caps_types, dim, o.caps_types, dim, kernel_depth=o.conv3d_kernel_depth,
                               iterations=routing_iterations, softmax_over=o.conv3d_softmax)
                    if k == len(o.cell_dims) - 1 else ConvCaps2d(o.caps_types, dim, o.caps_types, dim)
                ),
                "a": ConvCaps2d(o.caps_types, dim, o.caps_types, dim),
                "b": ConvCaps2d(o.caps_types, dim, o.caps_types, dim),
            })
            cells.append(cell)
            in_types, in_dim = o.caps_types, dim
        self.cells = nn.ModuleList(cells)
        if o.caps_init_gain is not None:
            init_conv_capsules(self.cells, o.caps_init_gain)
        sizes = [(h, w)]
        for _ in o.cell_dims:
            sizes.append(tuple(math.ceil(z / 2) for z in sizes[-1]))
        self.num_inputs = o.caps_types * (sizes[-2][0] * sizes[-2][1] + sizes[-1][0] * sizes[-1][1])
        votes = CapsuleVotes(self.num_inputs, o.cell_dims[-1], num_classes, o.class_dim, init_std=0.05)
        bias = LearnedBias("class_bias", PARENTS,
                           start=lambda: torch.randn(num_classes, o.class_dim, device=HOST) * 0.05)
        self.build_class_capsules(votes, in_shape=in_shape, routing=routing, iterations=routing_iterations,
                                  bias=bias, decoder=decoder)

    def capsule_layout(self) -> CapsuleLayout:
        raise ValueError("capsule pruning supports capsnet, gamma_capsnet and efficient_capsnet, not DeepCaps: its "
                         "class layer reads two cells' capsules and each cell's types are routed from the previous "
                         "cell's, so a type cannot be removed from one layer alone")

    def forward(self, x: torch.Tensor, target: torch.Tensor | None = None, *,
                quantize_levels: int | None = None) -> CapsuleOutput:
        x = squash_scalar_capsules(self.bn1(self.conv1(x))).unsqueeze(2)  # 1-D capsules (B, 128, 1, H, W)
        outputs = []
        for cell in self.cells:
            x = cell["down"](x)
            x = cell["b"](cell["a"](x)) + cell["skip"](x)
            outputs.append(x)
        u = torch.cat([flatten_capsules(outputs[-2]), flatten_capsules(outputs[-1])], dim=1)
        return self.class_capsules(u, target, quantize_levels)
