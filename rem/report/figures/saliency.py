"""Saliency from spatial primary capsules: E(m, n) = sum_o ||u(m, n, o)|| * c~(m, n, o, j) for the predicted class j
(c~: the quantized coupling), upsampled over the input image."""

from __future__ import annotations

from pathlib import Path

import torch

from rem.parse_trees import quantize
from rem.report.figures.internals import RoutingSnapshot
from rem.report.figures.style import plt, save


def saliency(snap: RoutingSnapshot) -> torch.Tensor:
    """(N, H', W') primary-grid saliency for each image's predicted class."""
    if snap.primary is None or snap.grid is None:
        raise ValueError("this model's class layer does not route from spatial primary capsules")
    h, w, types = snap.grid
    n = len(snap.predicted)
    to_predicted = snap.couplings.gather(2, snap.predicted.view(n, 1, 1).expand(n, snap.couplings.shape[1], 1))[..., 0]
    quantized = quantize(to_predicted, snap.levels).float() / (snap.levels - 1)
    return (snap.primary.norm(dim=-1) * quantized).view(n, h, w, types).sum(-1)


def saliency_maps(snap: RoutingSnapshot, path: Path, title: str, count: int = 6) -> Path:
    maps = saliency(snap)[:count]
    count = len(maps)
    # Each map stretched to its own range (printed above it): where an image's evidence sits, not its scale.
    low, high = maps.flatten(1).amin(1), maps.flatten(1).amax(1)
    maps = (maps - low.view(-1, 1, 1)) / (high - low).clamp_min(1e-12).view(-1, 1, 1)
    unit = snap.images.unit[:count]
    upsampled = torch.nn.functional.interpolate(maps[:, None], size=unit.shape[-2:], mode="bilinear",
                                                align_corners=False)[:, 0]
    names = snap.images.class_names
    fig, axes = plt.subplots(2, count, figsize=(2.3 * count + 1.2, 5.4), squeeze=False, layout="constrained")
    heat = None
    for k in range(count):
        picture = unit[k].permute(1, 2, 0).numpy()
        picture = picture[..., 0] if picture.shape[-1] != 3 else picture
        axes[0, k].imshow(picture, cmap="gray")
        axes[0, k].set_title(f"pred {names[int(snap.predicted[k])]}\ntrue {snap.images.true_names(k)}", fontsize=8)
        axes[1, k].imshow(picture, cmap="gray")
        heat = axes[1, k].imshow(upsampled[k].numpy(), cmap="inferno", alpha=0.6, vmin=0, vmax=1)
        axes[1, k].set_title(f"E in [{low[k]:.3g}, {high[k]:.3g}]", fontsize=8)
        for ax in axes[:, k]:
            ax.set_xticks([])
            ax.set_yticks([])
    axes[0, 0].set_ylabel("input")
    axes[1, 0].set_ylabel("saliency E(m, n)")
    fig.colorbar(heat, ax=axes[1, :], shrink=0.8, label="(E - min E) / (max E - min E)")
    fig.suptitle(f"{title}\nE(m, n) = Σ_o ‖u(m, n, o)‖ · c̃(m, n, o, j) for the predicted class j on the "
                 f"{snap.grid[0]}x{snap.grid[1]} primary-capsule grid, upsampled over the input", fontsize=10)
    return save(fig, path)
