"""Shared figure conventions: the Agg backend, one colour per architecture, and an atomic PNG save."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: CI, Ray workers and DVC stages have no display

import matplotlib.pyplot as plt  # noqa: E402

DPI = 110
VARIANT_MARKERS = {"plain": "o", "+Q": "o", "+REM": "*"}  # +IMP / +SNIP variants fall back to the markers below


def colours(names: list[str]) -> dict[str, tuple]:
    """A stable colour per name (architecture or series), from matplotlib's qualitative tab10 palette."""
    palette = plt.get_cmap("tab10")
    return {name: palette(i % 10) for i, name in enumerate(sorted(set(names)))}


def marker(variant: str) -> str:
    if variant in VARIANT_MARKERS:
        return VARIANT_MARKERS[variant]
    return "s" if variant.startswith("+IMP") else "^"


def save(fig, path: Path) -> Path:
    """Write the PNG via a temporary name, so a crashed report never leaves half a file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp.png")
    fig.savefig(tmp, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)
    return path


def message_panel(ax, text: str) -> None:
    """An empty axes that says why there is nothing to draw (instead of a blank plot)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, transform=ax.transAxes, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
