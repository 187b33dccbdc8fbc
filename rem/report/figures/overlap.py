"""Parse-tree overlap maps, REM's way: one class's test images grouped by parse tree, each group binarised at 125/255
and averaged, most frequent trees first."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rem.parse_trees import keys_for_predictions
from rem.report.figures.internals import RoutingSnapshot
from rem.report.figures.style import message_panel, plt, save

BINARISE_AT = 125 / 255  # REM's threshold on the de-normalised image


def richest_class(snap: RoutingSnapshot) -> int:
    """The class with the most distinct parse trees (then the most images): the one whose trees differ most."""
    classes = range(snap.couplings.shape[2])
    return max(classes, key=lambda j: (len(parse_tree_groups(snap, j)), int((snap.predicted == j).sum()), -j))


def parse_tree_groups(snap: RoutingSnapshot, j: int) -> list[np.ndarray]:
    """Indices of the images predicted as j, one array per distinct parse tree, most frequent first."""
    chosen = np.flatnonzero(snap.predicted.numpy() == j)
    if chosen.size == 0:
        return []
    keys = keys_for_predictions(snap.couplings[chosen], snap.predicted[chosen], snap.levels).numpy()
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    return [chosen[inverse.ravel() == k] for k in order]


def overlap_maps(snap: RoutingSnapshot, path: Path, title: str, top: int = 8, j: int | None = None) -> Path:
    j = richest_class(snap) if j is None else j
    groups = parse_tree_groups(snap, j)[:top]
    cols = min(4, max(1, len(groups)))
    rows = max(1, math.ceil(len(groups) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(max(7.0, 2.6 * cols + 1.5), 2.8 * rows + 0.8), squeeze=False,
                             layout="constrained")
    name = snap.images.class_names[j]
    if not groups:
        message_panel(axes.flat[0], f"no test image predicted as {name}")
    image = None
    for k, ax in enumerate(axes.flat):
        if k >= len(groups):
            ax.set_visible(k == 0 and not groups)
            continue
        binary = (snap.images.unit[groups[k]].mean(1) > BINARISE_AT).float().mean(0).numpy()
        image = ax.imshow(binary, cmap="seismic", vmin=0, vmax=1)
        ax.set_title(f"tree {k + 1}: {len(groups[k])} image(s)", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label="Pixel-on fraction")
    total = int((snap.predicted == j).sum())
    fig.suptitle(f"{title}\nclass {j} ({name}, {total} images predicted as it): binarised average input of its "
                 f"{len(groups)} most frequent parse trees", fontsize=10)
    return save(fig, path)
