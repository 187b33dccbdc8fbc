"""The mechanism curve as a figure: accuracy and routing against the sparsity magnitude pruning imposes, a row of
panels per scope, a line per variant (mean over seeds, band ± std)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rem.report.figures.style import ceiling_line, colours, images_per_class_bound, mean_band, plt, save
from rem.report.preconditions import classes_of

PANELS = {"test/acc": ("Test acc. (%)", 100.0), "entropy/mean": ("Entropy (bits)", 1.0),
          "parse_trees/total": ("Parse trees", 1.0), "routing/coupling_entropy": ("Coupling entropy (bits)", 1.0),
          "routing/dead_capsules": ("Dead capsules (%)", 100.0)}
SCOPE_TITLES = {"global": "every REM tensor", "class_capsules": "class-capsule matrices W only",
                "primary_conv": "primary-capsule conv only"}


def curve_figure(curves: pd.DataFrame, path: Path, title: str, series: str = "variant", classes: int = 0) -> Path:
    """`curves` in `rem.analysis.sparsity_curve.curves_from_results`' long form (a `series` column names the lines);
    `classes` > 1 draws the entropy's ceiling, at most log2 of the curve's images per class."""
    scopes = [s for s in SCOPE_TITLES if s in set(curves["scope"])]
    if not classes and "data.dataset" in curves and curves["data.dataset"].nunique() == 1:
        classes = classes_of(str(curves["data.dataset"].iloc[0]))
    names = sorted(set(curves[series].astype(str)))
    palette = colours(names)
    fig, axes = plt.subplots(len(scopes), len(PANELS), figsize=(3.4 * len(PANELS), 2.9 * len(scopes)),
                             squeeze=False, constrained_layout=True)
    for row, scope in zip(axes, scopes):
        for ax, (column, (label, scale)) in zip(row, PANELS.items()):
            for name in names:
                group = curves[(curves["scope"] == scope) & (curves[series].astype(str) == name)]
                mean_band(ax, group, "target", column, palette[name], name, scale)
            bound = images_per_class_bound(curves[curves["scope"] == scope], classes) if column == "entropy/mean" \
                else None
            if bound is not None:
                at = bound.groupby(curves.loc[bound.index, "target"]).mean()
                ceiling_line(ax, at.index.to_numpy(), at.to_numpy(), "ceiling (at most log2 images per class)")
            ax.set_title(f"{label}\n{SCOPE_TITLES[scope]}", fontsize=9)
            ax.set_xlabel("sparsity of the pruned tensors (%)", fontsize=8)
            ax.set_xticks(np.array([0, 20, 40, 60, 80, 100]))
            ax.ticklabel_format(axis="y", useOffset=False)  # coupling entropies differ in the 4th decimal
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title)
    return save(fig, path)
