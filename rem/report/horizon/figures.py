"""The horizon page's figure: every seed's run to its stopping rule, epoch by epoch (results table only).

One line per seed, not a mean band: the seeds stop at different epochs, and a mean over whichever seeds are still
training would jump where one stops. The marker on each line is the epoch the seed was evaluated at."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.ticker import MaxNLocator

from rem.report.evidence.tables import METRICS, arm_rows, arms
from rem.report.figures.style import colours, plt, save
from rem.results.frames import final_value, finished_trials

# (column, title, scale): the validation loss the stopping rule reads first
PANELS = (("val/loss", "Validation loss (plain forward)", 1.0),
          *((c, METRICS[c][0], METRICS[c][1]) for c in ("test/acc", "entropy/mean", "parse_trees/total", "sparsity",
                                                        "routing/coupling_entropy")))


def horizon_figure(results: pd.DataFrame, model: str, path: Path) -> Path:
    done = finished_trials(results)
    mine = [a for m, a in arms(done) if m == model]
    palette = colours([a.label for a in mine])
    fig, axes = plt.subplots(2, 3, figsize=(13, 7), constrained_layout=True)
    for ax, (column, title, scale) in zip(axes.flat, PANELS):
        for arm in mine:
            for n, (seed, trial) in enumerate(arm_rows(done, model, arm).groupby("train.seed")):
                trial = trial.sort_values("epoch")
                evaluated = int(final_value(trial.tail(1), "checkpoint_epoch").fillna(trial["epoch"].iloc[-1]).iloc[0])
                at = trial[trial["epoch"] == evaluated]
                ax.plot(trial["epoch"], scale * trial[column], color=palette[arm.label], alpha=0.8, linewidth=1.2,
                        label=arm.label if n == 0 else None)
                ax.plot(at["epoch"], scale * at[column], "o", color=palette[arm.label], markersize=5)
        ax.set_title(title)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"{model}: every seed until its stopping rule (dot: the epoch it was evaluated at)")
    return save(fig, path)
