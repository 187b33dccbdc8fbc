"""Parse-tree graph of one image through a fully-connected capsule layer: the input capsules that contribute most to
the predicted class, node colour = capsule length, edge width = quantized coupling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.colors import Normalize

from rem.parse_trees import quantize
from rem.report.figures.internals import RoutingSnapshot
from rem.report.figures.style import plt, save


def strongest_inputs(snap: RoutingSnapshot, index: int, count: int) -> np.ndarray:
    """Input capsules ranked by quantized coupling to the predicted class times their length (when known)."""
    j = int(snap.predicted[index])
    weight = quantize(snap.couplings[index, :, j], snap.levels).float().numpy() / (snap.levels - 1)
    if snap.primary is not None:
        weight = weight * snap.primary[index].norm(dim=-1).numpy()
    return np.argsort(-weight, kind="stable")[:count]


def input_name(snap: RoutingSnapshot, i: int) -> str:
    if snap.grid is None:
        return f"capsule {i}"
    _, w, types = snap.grid
    position, kind = divmod(int(i), types)
    return f"({position // w},{position % w}) type {kind}"


def parse_tree_graph(snap: RoutingSnapshot, path: Path, title: str, index: int = 0, count: int = 16) -> Path:
    chosen = strongest_inputs(snap, index, count)
    quantized = quantize(snap.couplings[index][chosen], snap.levels).float().numpy() / (snap.levels - 1)  # (k, J)
    lengths = snap.lengths[index].numpy()
    activation = snap.primary[index][chosen].norm(dim=-1).numpy() if snap.primary is not None else None
    names = snap.images.class_names
    j_pred = int(snap.predicted[index])
    fig, ax = plt.subplots(figsize=(9, max(5.0, 0.32 * len(chosen))))
    y_in = np.linspace(1, 0, len(chosen))
    y_out = np.linspace(1, 0, len(names))
    cmap, norm = plt.get_cmap("viridis"), Normalize(0, 1)  # squashed capsule lengths lie in [0, 1)
    for a, i in enumerate(chosen):
        for j in range(len(names)):
            strength = quantized[a, j]
            if strength > 0:
                ax.plot([0, 1], [y_in[a], y_out[j]], color="crimson" if j == j_pred else "grey",
                        linewidth=0.3 + 4 * strength, alpha=0.3 + 0.6 * strength, zorder=1)
    in_colour = cmap(norm(activation)) if activation is not None else "lightgrey"
    ax.scatter(np.zeros(len(chosen)), y_in, s=140, c=in_colour, edgecolors="black", zorder=2)
    ax.scatter(np.ones(len(names)), y_out, s=260, c=cmap(norm(lengths)), edgecolors="black", zorder=2)
    for a, i in enumerate(chosen):
        ax.annotate(input_name(snap, i), (0, y_in[a]), xytext=(-10, 0), textcoords="offset points", ha="right",
                    va="center", fontsize=7)
    for j, name in enumerate(names):
        ax.annotate(f"{name} ({lengths[j]:.2f})" + (" <- predicted" if j == j_pred else ""), (1, y_out[j]),
                    xytext=(12, 0), textcoords="offset points", va="center", fontsize=8,
                    fontweight="bold" if j == j_pred else "normal")
    ax.set_xlim(-0.6, 1.6)
    ax.axis("off")
    fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, shrink=0.6, label="Capsule activation (length)")
    note = "" if activation is not None else "\n(input activations not exposed by this model: grey)"
    fig.suptitle(f"{title}\nimage {index} (true {snap.images.true_names(index)}): the {len(chosen)} input capsules "
                 "most coupled to the prediction; edge width = quantized coupling c̃ "
                 f"(red: to the predicted class){note}",
                 fontsize=10)
    return save(fig, path)
