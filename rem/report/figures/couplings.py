"""Coupling-coefficient histograms per class j: every c_ij of the images predicted as j in the K quantization bins,
several snapshots overlaid. Individual couplings, not REM's per-capsule means, which sit at 1/J early and hide the
spread."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rem.report.figures.internals import RoutingSnapshot
from rem.report.figures.style import colours, message_panel, plt, save

FLOOR = 1e-6  # empty bins are drawn at this fraction (log scale)


def class_couplings(snap: RoutingSnapshot, j: int) -> np.ndarray | None:
    """Every coupling to class j in the images predicted as j (flattened); None when no image is."""
    chosen = snap.predicted == j
    if not bool(chosen.any()):
        return None
    return snap.couplings[chosen, :, j].reshape(-1).numpy()


def bin_edges(levels: int) -> np.ndarray:
    """Edges around the K equally spaced centres 0 .. 1 (K = 11: -0.05, 0.05, ..., 1.05)."""
    half = 0.5 / (levels - 1)
    return np.linspace(-half, 1 + half, levels + 1)


def coupling_histograms(series: dict[str, RoutingSnapshot], path: Path, title: str) -> Path:
    """One panel per class, one step histogram per labelled snapshot."""
    first = next(iter(series.values()))
    names = first.images.class_names
    cols = min(5, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    palette = colours(list(series))
    styles = dict(zip(series, ["-", "--", ":", "-."] * len(series)))  # overlapping series stay distinguishable
    for j, ax in enumerate(axes.flat):
        if j >= len(names):
            ax.set_visible(False)
            continue
        drawn = 0
        for label, snap in series.items():
            values = class_couplings(snap, j)
            if values is None:
                continue
            drawn += 1
            counts, edges = np.histogram(values, bins=bin_edges(snap.levels))
            ax.stairs(np.maximum(counts / counts.sum(), FLOOR), edges, color=palette[label], linewidth=1.8,
                      linestyle=styles[label], label=label, baseline=FLOOR)
        ax.set_title(f"class {j}: {names[j]}", fontsize=9)
        if not drawn:
            message_panel(ax, "no test image\npredicted as it")
            continue
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        if j % cols == 0:
            ax.set_ylabel("Fraction of couplings (log)")
        if j >= (rows - 1) * cols:
            ax.set_xlabel("Coupling coefficient c_ij")
    handles, labels = max((ax.get_legend_handles_labels() for ax in axes.flat), key=lambda hl: len(hl[0]))
    fig.legend(handles, labels, loc="lower center", ncol=max(1, len(series)), fontsize=9, bbox_to_anchor=(0.5, -0.04))
    fig.suptitle(f"{title}\nper class j: the couplings c_ij of all input capsules i in the test images predicted "
                 f"as j ({len(first.predicted)} images, {first.levels} bins)")
    fig.tight_layout()
    return save(fig, path)
