"""Shared figure conventions: the Agg backend, one colour per architecture, an atomic PNG save, and the entropy's
ceiling drawn the same way on every figure."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

from rem.io import atomic_write

matplotlib.use("Agg")  # headless: CI, Ray workers and DVC stages have no display

import matplotlib.pyplot as plt  # noqa: E402

DPI = 110


def colours(names: list[str]) -> dict[str, tuple]:
    """A stable colour per name: tab10, or tab20 beyond ten names."""
    names = sorted(set(names))
    palette = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    return {name: palette(i % palette.N) for i, name in enumerate(names)}


# Markers of the arms whose method gives none, in the arms' order (+IMP 50% and +IMP 80% must not look alike)
TARGET_MARKERS = ["s", "^", "D", "v", "P", "X", "p", "h", "<", ">"]


def markers(arms: list) -> dict[str, str]:
    """A marker per arm label: its own `Arm.marker`, else the next spare one."""
    out, spare = {}, iter(TARGET_MARKERS * 3)
    for arm in arms:
        out[arm.label] = arm.marker or next(spare)
    return out


def save(fig, path: Path, crop: bool = True) -> Path:
    """Write the PNG atomically and close the figure; cropped to what is drawn, or (`crop=False`) at the figure's own
    size, for a grid of images whose panels must keep their places."""
    try:
        return atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=DPI, bbox_inches="tight" if crop else None))
    finally:
        plt.close(fig)


def mean_band(ax, group, by: str, metric: str, colour, label: str, scale: float = 1.0) -> None:
    """`metric`'s mean over seeds per value of `by` as a line, ± the sample std (the tables' spread) as a band."""
    if metric not in group or group[metric].isna().all():
        return
    grouped = group.groupby(by)[metric]
    mean = grouped.mean() * scale
    spread = grouped.std(ddof=1).fillna(0.0).to_numpy() * scale
    x, mean = mean.index.to_numpy(), mean.to_numpy()
    ax.plot(x, mean, marker="o", ms=3, color=colour, label=label)
    ax.fill_between(x, mean - spread, mean + spread, color=colour, alpha=0.2)


CEILING_LABEL = "ceiling: every image its own tree"


def ceiling_line(ax, x, bits, label: str = CEILING_LABEL) -> None:
    """REM's entropy's ceiling (log2 of the images per class) as a dashed line, so an entropy that sits on it reads as
    at the ceiling, not as structure in the last decimals."""
    ax.plot(x, bits, ls="--", lw=1.0, color="0.25", label=label)


def images_per_class_bound(group: pd.DataFrame, classes: int) -> pd.Series | None:
    """Per row, log2(images / classes): by Jensen's inequality at least the mean over classes of log2 of each
    class's images, so an upper bound on the ceiling where only the images are recorded; None without them."""
    if "n_images" not in group or group["n_images"].isna().all() or classes < 2:
        return None
    return np.log2(group["n_images"].astype(float) / classes)


def message_panel(ax, text: str) -> None:
    """An empty axes that says why there is nothing to draw (instead of a blank plot)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, transform=ax.transAxes, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
