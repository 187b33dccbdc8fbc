"""The evidence page's figure: each metric over epochs per variant, the seed spread as a band (results table only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from rem.report.evidence.tables import METRICS, arm_rows, arms, spread
from rem.report.figures.style import colours, plt, save
from rem.results.frames import finished_trials

PANELS = ("test/acc", "entropy/mean", "parse_trees/total", "sparsity", "routing/coupling_entropy", "routing/dead_capsules")


def epochs_figure(results: pd.DataFrame, model: str, path: Path) -> Path:
    done = finished_trials(results)
    mine = [a for m, a in arms(done) if m == model]
    palette = colours([a.label for a in mine])
    fig, axes = plt.subplots(2, 3, figsize=(13, 7), constrained_layout=True)
    for ax, column in zip(axes.flat, PANELS):
        label, scale, _ = METRICS[column]
        for arm in mine:
            variant = arm.label
            # the tables' `spread` per epoch, so the band is the same sample std the tables print
            by_epoch = {int(e): spread(g[column], scale) for e, g in arm_rows(done, model, arm).groupby("epoch")}
            epochs, mean = list(by_epoch), np.array([s.mean for s in by_epoch.values()])
            band = np.array([s.std for s in by_epoch.values()])
            ax.plot(epochs, mean, marker="o", color=palette[variant], label=variant)
            ax.fill_between(epochs, mean - band, mean + band, color=palette[variant], alpha=0.2)
        ax.set_title(label)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"{model}: mean over seeds per epoch (band: ± std)")
    return save(fig, path)
