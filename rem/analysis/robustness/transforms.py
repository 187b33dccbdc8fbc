"""The robustness families applied to uint8 image batches: affine maps about the centre built in pixel units (so a
rotation stays one on a non-square image), sampled bilinearly and rounded back to uint8; affnist draws on the host,
so a seed gives the same images on every device."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from rem.analysis.robustness.families import IDENTITY, RobustnessError, check_families
from rem.device import HOST

CHUNK = 1024  # images warped at once: bounds the float copy and the sampling grid, not the result

# affNIST's ranges at strength 1 (Tieleman's generation): degrees, horizontal shear, per-axis zoom, pixels
AFFNIST_ROTATION, AFFNIST_SHEAR, AFFNIST_SCALE, AFFNIST_SHIFT = 20.0, 0.2, 0.2, 6.0


def transform_images(images: torch.Tensor, family: str, strength: float, *, seed: int = 0) -> torch.Tensor:
    """uint8 `(N, C, H, W)` images transformed by `family` at `strength`, as uint8 of the same shape on the same
    device. The identity strength returns `images` itself; `seed` only matters to affnist."""
    strength = check_families({family: [strength]}, where="robustness")[family][0]
    if images.dtype != torch.uint8 or images.dim() != 4:
        raise RobustnessError(f"robustness: expected uint8 (N, C, H, W) images, "
                              f"got {images.dtype} {tuple(images.shape)}")
    if IDENTITY.get(family) == strength or len(images) == 0:
        return images
    n, device = len(images), images.device
    uniforms = None
    if family == "affnist":
        linear, uniforms = affnist_linear(n, strength, seed, device)
    else:
        linear = fixed_linear(family, strength, device).expand(n, 2, 2)
    fixed_shift = torch.full((1, 2), strength if family == "translation" else 0.0, device=device)
    out = torch.empty_like(images)
    for start in range(0, n, CHUNK):
        index = slice(start, start + CHUNK)
        chunk, chunk_linear = images[index].float(), linear[index]
        shift = fixed_shift.expand(len(chunk), 2)
        if uniforms is not None:  # the shift depends on where the linear map put the content: warp without it first
            shift = affnist_shift(warp(chunk, chunk_linear, torch.zeros_like(shift)), uniforms[index], strength)
        out[index] = warp(chunk, chunk_linear, shift).round_().clamp_(0, 255).to(torch.uint8)
    return out


def fixed_linear(family: str, strength: float, device: torch.device) -> torch.Tensor:
    """The `(2, 2)` pixel-unit linear part (forward: content point u -> M u) of a deterministic family."""
    if family == "rotation":  # counter-clockwise on screen, y pointing down
        return rotation_matrix(torch.tensor([math.radians(strength)], device=device))[0]
    if family == "scale":
        return torch.eye(2, device=device) * strength
    if family == "shear":
        return shear_matrix(torch.tensor([strength], device=device))[0]
    return torch.eye(2, device=device)  # translation: only a shift


def rotation_matrix(radians: torch.Tensor) -> torch.Tensor:
    """`(N, 2, 2)` counter-clockwise rotations in image coordinates (x right, y down)."""
    cos, sin = torch.cos(radians), torch.sin(radians)
    return torch.stack([torch.stack([cos, sin], -1), torch.stack([-sin, cos], -1)], -2)


def shear_matrix(factor: torch.Tensor) -> torch.Tensor:
    """`(N, 2, 2)` horizontal shears, x += factor * y."""
    one, zero = torch.ones_like(factor), torch.zeros_like(factor)
    return torch.stack([torch.stack([one, factor], -1), torch.stack([zero, one], -1)], -2)


def affnist_linear(n: int, strength: float, seed: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """(`(n, 2, 2)` linear maps: per-axis zoom, then shear, then rotation, each drawn uniformly within affNIST's
    range times `strength`; `(n, 2)` uniforms in [0, 1) that pick each image's shift later), one draw per image."""
    gen = torch.Generator(device=HOST).manual_seed(seed)  # on the host: the same draws whatever the device
    draws = torch.rand((n, 6), generator=gen, device=HOST).to(device)
    symmetric = 2.0 * draws[:, :4] - 1.0  # U(-1, 1): rotation, shear, x zoom, y zoom
    radians = symmetric[:, 0] * math.radians(AFFNIST_ROTATION * strength)
    shear = symmetric[:, 1] * AFFNIST_SHEAR * strength
    zoom = 1.0 + symmetric[:, 2:4] * AFFNIST_SCALE * strength
    return rotation_matrix(radians) @ shear_matrix(shear) @ torch.diag_embed(zoom), draws[:, 4:]


def affnist_shift(warped: torch.Tensor, uniforms: torch.Tensor, strength: float) -> torch.Tensor:
    """`(n, 2)` whole-pixel (x, y) shifts, each uniform among those that keep the warped image's nonzero pixels on
    the canvas, and within +-6 * strength px (affNIST's placement of its 28x28 digit in the 40x40 canvas)."""
    cap = math.floor(AFFNIST_SHIFT * strength)
    content = warped.round().amax(dim=1) > 0  # (n, H, W): what rounds to a nonzero pixel, any channel
    low_high = [room(content.any(dim=axis), cap) for axis in (1, 2)]  # columns (x), then rows (y)
    low = torch.stack([low_high[0][0], low_high[1][0]], -1)
    high = torch.stack([low_high[0][1], low_high[1][1]], -1)
    return (low + torch.floor(uniforms * (high - low + 1)).clamp_max_(high - low)).float()


def room(occupied: torch.Tensor, cap: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(lowest, highest) whole-pixel shift along one axis that keeps every occupied index `(n, L)` inside 0..L-1,
    both within +-cap; an empty image may move the full +-cap."""
    length = occupied.shape[1]
    first = occupied.int().argmax(dim=1)
    last = length - 1 - occupied.flip(1).int().argmax(dim=1)
    empty = ~occupied.any(dim=1)
    low = torch.where(empty, -cap, (-first).clamp_min(-cap))
    high = torch.where(empty, cap, (length - 1 - last).clamp_max(cap))
    return low, high


def warp(images: torch.Tensor, linear: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """Float images `(n, C, H, W)` resampled so content at u (pixels from the centre) lands at `linear` u + `shift`."""
    n, _, h, w = images.shape
    a, b, c, d = linear[:, 0, 0], linear[:, 0, 1], linear[:, 1, 0], linear[:, 1, 1]
    det = a * d - b * c
    inverse = torch.stack([torch.stack([d, -b], -1), torch.stack([-c, a], -1)], -2) / det[:, None, None]
    # affine_grid maps output to input in units of half the width (x) and height (y): D^-1 M^-1 D, D = diag(w/2, h/2)
    half = torch.tensor([w / 2.0, h / 2.0], device=images.device)
    theta_linear = inverse * half[None, None, :] / half[None, :, None]
    theta_shift = -(inverse @ shift[:, :, None])[:, :, 0] / half
    theta = torch.cat([theta_linear, theta_shift[:, :, None]], dim=2)
    grid = F.affine_grid(theta, [n, images.shape[1], h, w], align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
