"""The toy study's figure, drawn from the results table alone: each seed's final accuracy."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rem.report.figures.style import plt, save
from rem.results.frames import last_rows


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    last = last_rows(results).sort_values("train.seed")
    fig, ax = plt.subplots(figsize=(4, 3), constrained_layout=True)
    ax.bar(last["train.seed"].astype(str), 100 * last["final/test/acc"])
    ax.set_xlabel("seed")
    ax.set_ylabel("test accuracy (%)")
    return [save(fig, figures / "seed_accuracy.png")]
