"""Routing at each iteration as a figure: coupling entropy and vote-output agreement against the iteration, a line per
series at its final epoch (mean over seeds, band ± std), earlier epochs faint."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rem.report.figures.style import colours, mean_band, message_panel, plt, save

PANELS = {"coupling_entropy": "Coupling entropy (bits)", "agreement": "Agreement Σ_j c_ij cos(û_j|i, v_j)"}


def routing_iterations_figure(points: pd.DataFrame, path: Path, title: str, series: str = "series") -> Path:
    """`points` in `iteration_points`' long form with a `series` column naming the lines (never pooled)."""
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.2 * len(PANELS), 3.3), squeeze=False, constrained_layout=True)
    if points.empty:
        message_panel(axes[0][0], "no routing iterations recorded")
        fig.suptitle(title)
        return save(fig, path)
    names = sorted(set(points[series].astype(str)))
    palette = colours(names)
    for ax, (metric, label) in zip(axes[0], PANELS.items()):
        for name in names:
            mine = points[points[series].astype(str) == name]
            for _, earlier in mine[~mine["last"]].groupby("epoch", sort=True):
                mean = earlier.groupby("iteration")[metric].mean()
                ax.plot(mean.index.to_numpy(), mean.to_numpy(), color=palette[name], alpha=0.2, lw=0.8)
            mean_band(ax, mine[mine["last"]], "iteration", metric, palette[name], name)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("routing iteration", fontsize=8)
        ax.set_xticks(sorted(set(points["iteration"].astype(int))))
        ax.ticklabel_format(axis="y", useOffset=False)  # entropies differ in the 3rd decimal between iterations
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title)
    return save(fig, path)
