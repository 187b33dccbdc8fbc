"""Robustness as a figure: test accuracy (and parse-tree entropy where models route) against each transformation
family's strength, a line per series (mean over seeds, band ± std)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rem.analysis.robustness.families import IDENTITY, RANGES
from rem.report.figures.style import ceiling_line, colours, images_per_class_bound, mean_band, message_panel, plt, save
from rem.report.preconditions import classes_of

ROWS = {"test/acc": ("Test acc. (%)", 100.0), "entropy/mean": ("Entropy (bits)", 1.0)}


def robustness_figure(frame: pd.DataFrame, path: Path, title: str, series: str = "series") -> Path:
    """`frame` in `robust_from_results`' long form with a `series` column naming the lines."""
    families = [f for f in RANGES if f in set(frame["family"])] if len(frame) else []
    rows = [m for m in ROWS if m in frame and frame[m].notna().any()] or ["test/acc"]
    fig, axes = plt.subplots(len(rows), max(len(families), 1), figsize=(3.4 * max(len(families), 1), 2.9 * len(rows)),
                             squeeze=False, constrained_layout=True)
    if not families:
        message_panel(axes[0][0], "no robustness evaluation recorded")
        fig.suptitle(title)
        return save(fig, path)
    names = sorted(set(frame[series].astype(str)))
    palette = colours(names)
    datasets = set(frame["data.dataset"].astype(str)) if "data.dataset" in frame else set()
    classes = classes_of(datasets.pop()) if len(datasets) == 1 else 0
    for row, metric in zip(axes, rows):
        for ax, family in zip(row, families):
            for name in names:
                group = frame[(frame["family"] == family) & (frame[series].astype(str) == name)]
                mean_band(ax, group, "strength", metric, palette[name], name, ROWS[metric][1])
            bound = images_per_class_bound(frame[frame["family"] == family], classes) if metric == "entropy/mean" \
                else None
            if bound is not None:  # the entropy's ceiling, at most log2 of the images per class
                at = bound.groupby(frame.loc[bound.index, "strength"]).mean()
                ceiling_line(ax, at.index.to_numpy(), at.to_numpy(), "ceiling (at most log2 images per class)")
            label, _ = ROWS[metric]
            ax.set_title(f"{label}\n{family}", fontsize=9)
            ax.set_xlabel(f"strength ({RANGES[family][3]})", fontsize=8)
            if family in IDENTITY:  # where the untransformed images sit
                ax.axvline(IDENTITY[family], color="grey", lw=0.8, ls=":")
            ax.ticklabel_format(axis="y", useOffset=False)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title)
    return save(fig, path)
