"""Vector-capsule building blocks: squash, capsule lengths, primary and fully-connected capsule layers."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from rem.device import HOST

# Inside the square root: sqrt(x + eps) has a finite gradient at x = 0, sqrt(x) + eps does not.
EPS = 1e-8


def squash(s: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Hinton's squash v = |s|^2 / (1 + |s|^2) * s / |s| along `dim`, in fp32 (bf16 loses the small lengths
    that decide the prediction); finite in value and gradient at s = 0."""
    s32 = s.float()
    sq = (s32 * s32).sum(dim=dim, keepdim=True)
    scale = sq / (1.0 + sq) / torch.sqrt(sq + EPS)
    return s32 * scale


def efficient_squash(s: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Efficient-CapsNet's squash v = (1 - 1/exp(|s|)) * s / |s| along `dim`, in fp32; the epsilon sits inside the
    root as in `squash` (finite at s = 0), and `-expm1(-n)` gives 1 - e^-n without cancellation."""
    s32 = s.float()
    norm = torch.sqrt((s32 * s32).sum(dim=dim, keepdim=True) + EPS)
    return s32 * (-torch.expm1(-norm) / norm)


def capsule_lengths(v: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Capsule activations: the L2 length of each capsule, with the epsilon inside the root."""
    v32 = v.float()
    return torch.sqrt((v32 * v32).sum(dim=dim) + EPS)


class _ValidConv2d(torch.autograd.Function):
    """Unpadded conv2d whose weight gradient is a *forward* convolution of x (batch and channels swapped) with dY
    dilated by the stride: oneDNN's own bf16 weight-gradient kernel is several times slower for Sabour's 9x9 front
    end. Autocast is applied by hand so backward runs in the forward's precision."""

    @staticmethod
    def forward(ctx, x, weight, bias, stride: int):
        device = x.device.type
        dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else x.dtype
        ctx.dtypes = (x.dtype, weight.dtype, None if bias is None else bias.dtype)
        ctx.stride = stride
        with torch.autocast(device, enabled=False):
            x, weight = x.to(dtype), weight.to(dtype)
            bias = None if bias is None else bias.to(dtype)
            ctx.save_for_backward(x, weight)
            return F.conv2d(x, weight, bias, stride=stride)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        s = ctx.stride
        x_dtype, w_dtype, b_dtype = ctx.dtypes
        grad_out = grad_out.to(x.dtype)
        (kh, kw), (oh, ow) = weight.shape[-2:], grad_out.shape[-2:]
        used_h, used_w = (oh - 1) * s + kh, (ow - 1) * s + kw  # rows/cols a valid strided conv reads
        grad_x = grad_w = grad_b = None
        with torch.autocast(x.device.type, enabled=False):
            if ctx.needs_input_grad[0]:
                pad = (x.shape[-2] - used_h, x.shape[-1] - used_w)  # the unread tail, < stride
                grad_x = F.conv_transpose2d(grad_out, weight, stride=s, output_padding=pad).to(x_dtype)
                # oneDNN returns grad_out's layout (channels-last when the capsules above read the output position-
                # major); the layer below wants x's, or its backward (a ReLU's) runs ~15x slower on mixed strides
                grad_x = grad_x.contiguous(memory_format=layout_of(x))
            if ctx.needs_input_grad[1]:
                used = x[..., :used_h, :used_w].transpose(0, 1)  # (C, B, H, W): the batch is the reduced axis
                grad_w = F.conv2d(used, grad_out.transpose(0, 1), dilation=s).transpose(0, 1).to(w_dtype)
            if b_dtype is not None and ctx.needs_input_grad[2]:
                grad_b = grad_out.sum(dim=(0, 2, 3), dtype=torch.float32).to(b_dtype)
        return grad_x, grad_w, grad_b, None


def layout_of(x: torch.Tensor) -> torch.memory_format:
    """channels_last where `x` is laid out so (and not plain contiguous), else the default layout."""
    if not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last):
        return torch.channels_last
    return torch.contiguous_format


def _eager_valid_conv2d(conv: nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
    return _ValidConv2d.apply(x, conv.weight, conv.bias, conv.stride[0])


def compile_model(model: nn.Module, mode: str | None = None, options: tuple[tuple[str, object], ...] = ()) -> nn.Module:
    """`torch.compile(model)` for models with these layers: use it instead of torch.compile. The CPU low-precision
    path of `valid_conv2d` stays eager (inductor fails tracing it with a dynamic batch); it is marked here, not by
    a decorator, because `torch.compiler.disable` imports torch._dynamo, ~2 s of every process's start. `options`:
    Inductor settings as (name, value) pairs (torch.compile takes them or a `mode`, not both)."""
    if mode is not None and options:
        raise ValueError(f"compile_model: torch.compile takes a mode ({mode!r}) or options ({options!r}), not both")
    global _eager_valid_conv2d
    if not getattr(_eager_valid_conv2d, "_rem_kept_eager", False):
        _eager_valid_conv2d = torch.compiler.disable(_eager_valid_conv2d)
        _eager_valid_conv2d._rem_kept_eager = True
    return torch.compile(model, mode=mode, options=dict(options) or None)


def valid_conv2d(conv: nn.Conv2d, x: torch.Tensor) -> torch.Tensor:
    """`conv(x)`, with `_ValidConv2d`'s fast weight gradient on the CPU under bf16/fp16 autocast for an unpadded,
    undilated, ungrouped square-stride conv; fp32 and GPUs keep the stock path."""
    device = x.device.type
    low_precision = torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device) != torch.float32
    if (device != "cpu" or not low_precision or conv.padding != (0, 0) or conv.dilation != (1, 1) or conv.groups != 1
            or conv.stride[0] != conv.stride[1]):
        return conv(x)
    return _eager_valid_conv2d(conv, x)


class PrimaryCapsules(nn.Module):
    """Convolutional primary capsules: one conv reshaped into `types` capsule types of `dim` each; output
    `(B, H*W*types, dim)`, squashed, position-major (all types of pixel (0,0) first)."""

    def __init__(self, in_channels: int, types: int, dim: int, kernel_size: int, stride: int):
        super().__init__()
        self.types, self.dim = types, dim
        self.conv = nn.Conv2d(in_channels, types * dim, kernel_size, stride=stride)

    def output_grid(self, in_hw: tuple[int, int]) -> tuple[int, int]:
        k, s = self.conv.kernel_size[0], self.conv.stride[0]
        return ((in_hw[0] - k) // s + 1, (in_hw[1] - k) // s + 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = valid_conv2d(self.conv, x)
        b, _, h, w = out.shape
        # (B, types, dim, H, W) -> (B, H, W, types, dim) -> (B, H*W*types, dim)
        out = out.view(b, self.types, self.dim, h, w).permute(0, 3, 4, 1, 2)
        return squash(out.reshape(b, h * w * self.types, self.dim))


class CapsuleVotes(nn.Module):
    """One transformation matrix per (input capsule, parent): votes u_hat[b,i,j] = W[i,j] @ u[b,i], as one einsum
    (`matmul(W[None], u[..., None])` would materialise W per sample)."""

    def __init__(self, in_caps: int, in_dim: int, out_caps: int, out_dim: int, init_std: float = 0.1):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_caps, out_caps, out_dim, in_dim, device=HOST) * init_std)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        # (B, I, J, D) in the memory order the einsum picks: by parent for CapsNet's sizes, by input capsule for
        # γ-CapsNet's FC layer; routing copies it parent-major where it is not (`parent_major`)
        return torch.einsum("ijdk,bik->bjid", self.weight, u).transpose(1, 2)


class SharedCapsuleVotes(nn.Module):
    """`CapsuleVotes` with one matrix per (input capsule *type*, parent), shared over the primary grid:
    u_hat[b,i,j] = W[type(i), j] @ u[b,i], for inputs ordered as `PrimaryCapsules` returns them."""

    shared_over_grid = True  # a capsule type's matrices are not per input capsule (rem.pruning.capsules refuses it)

    def __init__(self, in_caps: int, in_dim: int, out_caps: int, out_dim: int, *, types: int, init_std: float = 0.1):
        super().__init__()
        if in_caps % types:
            raise ValueError(f"SharedCapsuleVotes: {in_caps} input capsules are not a whole grid of {types} types")
        self.types = types
        self.weight = nn.Parameter(torch.randn(types, out_caps, out_dim, in_dim, device=HOST) * init_std)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        b, i, k = u.shape
        grid = u.reshape(b, i // self.types, self.types, k)  # (B, positions, types, K)
        votes = torch.einsum("tjdk,bptk->bjptd", self.weight, grid)  # parent-major, as CapsuleVotes computes them
        return votes.reshape(b, self.weight.shape[1], i, self.weight.shape[2]).transpose(1, 2)


def conv_output_size(size: int, kernel: int, stride: int = 1, padding: int = 0) -> int:
    """Spatial size after a convolution, for building layers from an input shape."""
    return math.floor((size + 2 * padding - kernel) / stride) + 1


def sabour_primary_types(in_shape: tuple[int, int, int], chosen: int | None) -> int:
    """CapsNet's primary capsule types: `chosen`, else 64 for colour inputs and 32 otherwise (REM's CIFAR-10 model)."""
    return chosen if chosen is not None else 64 if in_shape[0] == 3 else 32


class SabourStem(nn.Module):
    """Sabour et al.'s front end (CapsNet, gamma-CapsNet): conv + ReLU, then primary capsules;
    `primary_capsules(x)` -> `(B, num_primary, primary_dim)`."""

    def __init__(self, in_shape: tuple[int, int, int], *, conv_channels: int, kernel_size: int, primary_types: int,
                 primary_dim: int, primary_stride: int):
        super().__init__()
        c, h, w = in_shape
        self.conv1 = nn.Conv2d(c, conv_channels, kernel_size)
        self.primary = PrimaryCapsules(conv_channels, primary_types, primary_dim, kernel_size, primary_stride)
        grid = [conv_output_size(conv_output_size(s, kernel_size), kernel_size, primary_stride) for s in (h, w)]
        if min(grid) < 1:
            raise ValueError(f"{type(self).__name__}: input {in_shape} is too small for two "
                             f"{kernel_size}x{kernel_size} convolutions")
        self.num_primary = grid[0] * grid[1] * primary_types

    def primary_capsules(self, x: torch.Tensor) -> torch.Tensor:
        return self.primary(torch.relu(valid_conv2d(self.conv1, x)))
