"""The routing-regime study's figure: each setting's routing measures and accuracy against the training images seen."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.studies.routing.tables import MEASURES, arm_groups, curves, routing_threshold
from rem.report.figures.style import colours, plt, save
from rem.report.preconditions import classes_of
from rem.report.spread import spread

PANELS = ("coupling_entropy", "agreement", "parse_tree_entropy", "accuracy")


def routing_figure(results: pd.DataFrame, path: Path) -> Path:
    table = curves(results)
    groups = arm_groups(table)
    names = {key: f"{key[0]} {key[1].label}" for key, _ in groups}
    palette = colours(list(names.values()))
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), constrained_layout=True)
    for ax, measure in zip(axes.flat, PANELS):
        for key, mine in groups:
            by_epoch = [(int(g["images"].max()), spread(g[measure])) for _, g in mine.groupby("epoch")]
            images = np.array([i for i, _ in by_epoch])
            mean, band = np.array([s.mean for _, s in by_epoch]), np.array([s.std for _, s in by_epoch])
            if np.isnan(mean).all():
                continue
            ax.plot(images, mean, marker="o", markersize=3, color=palette[names[key]], label=names[key])
            ax.fill_between(images, mean - band, mean + band, color=palette[names[key]], alpha=0.15)
        if measure == "coupling_entropy":
            dataset = str(table["data.dataset"].iloc[0])
            ax.axhline(math.log2(classes_of(dataset)), color="black", linestyle="--", linewidth=0.8, label="uniform")
            ax.axhline(routing_threshold(dataset), color="grey", linestyle=":", linewidth=0.8,
                       label="routing threshold")
        ax.set_title(MEASURES[measure][2])
        ax.set_xlabel("training images seen")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("When does routing leave uniform? (mean over seeds, band ± std)")
    return save(fig, path)
