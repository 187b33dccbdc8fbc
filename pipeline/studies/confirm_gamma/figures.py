"""The confirmatory page's figures, drawn from the results table alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from pipeline.studies.confirm_gamma.pairs import Pairs, label, pairs_of
from rem.report.figures.epochs import horizon_figure
from rem.report.figures.style import ceiling_line, colours, plt, save


def paired_figure(pairs: Pairs, path: Path) -> Path:
    """Each pair's two entropies joined by a line, with each arm's ceiling dashed."""
    ref, new, metric = pairs.design.reference, pairs.design.treatment, pairs.design.metric
    fig, ax = plt.subplots(figsize=(5.5, 4.2), constrained_layout=True)
    palette = colours(["counted", "replaced"])
    for seed, row in pairs.table.iterrows():
        ax.plot([0, 1], [row[f"{ref}/{metric}"], row[f"{new}/{metric}"]], marker="o",
                color=palette["counted" if row["counts"] else "replaced"], alpha=0.8)
        ax.annotate(f"s{int(seed)}", (1.02, row[f"{new}/{metric}"]), fontsize=7)
    ceiling_line(ax, [0, 1], [pairs.table[f"{ref}/ceiling"].mean(), pairs.table[f"{new}/ceiling"].mean()])
    ax.set_xticks([0, 1], [label(ref), label(new)])
    ax.set_xlim(-0.2, 1.25)
    ax.set_ylabel("REM's entropy, K = 6 (bits)")
    ax.legend(fontsize=7, loc="lower left")
    ax.grid(alpha=0.3)
    ax.set_title(f"γ-CapsNet: each pair at the last epoch ({len(pairs.counted)} of {pairs.design.pairs} committed)",
                 fontsize=9)
    return save(fig, path)


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    """The pairs side by side, and every trial epoch by epoch (results table only)."""
    return [paired_figure(pairs_of(results), figures / "pairs_gamma_capsnet.png"),
            horizon_figure(results, "gamma_capsnet", figures / "epochs_gamma_capsnet.png")]

