"""A model's run epoch by epoch, one colour per arm: a mean band over seeds (evidence page), or a line per seed to its
stopping rule (horizon pages: the seeds stop at different epochs), marked at the evaluated epoch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from rem.report.figures.style import ceiling_line, colours, plt, save
from rem.report.spread import METRICS, model_arms, spread
from rem.results.frames import arm_rows, final_value, finished_trials, fixed_budget

# (column, title, scale) of each panel
EVIDENCE_PANELS = tuple((c, METRICS[c][0], METRICS[c][1]) for c in (
    "test/acc", "entropy/mean", "parse_trees/total", "sparsity", "routing/coupling_entropy", "routing/dead_capsules"))
# the validation loss the stopping rule reads first
HORIZON_PANELS = (("val/loss", "Validation loss (plain forward)", 1.0), *EVIDENCE_PANELS[:5])


def arm_panels(results: pd.DataFrame, model: str, panels, draw: Callable, title: str, path: Path) -> Path:
    """`draw(ax, rows, column, scale, colour, label)` for each arm of `model` in each panel."""
    done = finished_trials(results)
    mine = model_arms(done, model)
    palette = colours([a.label for a in mine])
    fig, axes = plt.subplots(2, 3, figsize=(13, 7), constrained_layout=True)
    for ax, (column, label, scale) in zip(axes.flat, panels):
        for arm in mine:
            draw(ax, arm_rows(done, model, arm), column, scale, palette[arm.label], arm.label)
        if column == "entropy/mean":
            draw_ceiling(ax, done[done["model.name"].astype(str) == model])
        ax.set_title(label)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(title)
    return save(fig, path)


def row_ceilings(rows: pd.DataFrame) -> pd.Series:
    """Per row (a trial's epoch), the entropy's ceiling: the mean over classes of log2 of the images keyed as each."""
    counts = rows[[c for c in rows.columns if c.startswith("images/class_")]].to_numpy(dtype=np.float64)
    seen = counts > 0
    bits = np.where(seen, np.log2(np.where(seen, counts, 1.0)), 0.0).sum(axis=1) / np.maximum(seen.sum(axis=1), 1)
    return pd.Series(np.where(seen.any(axis=1), bits, np.nan), index=rows.index)


def draw_ceiling(ax, rows: pd.DataFrame) -> None:
    """The mean ceiling over the model's trials per epoch, where the rows recorded their images per class."""
    if not any(c.startswith("images/class_") for c in rows.columns):
        return
    per_epoch = row_ceilings(rows).groupby(rows["epoch"]).mean().dropna()
    if len(per_epoch):
        ceiling_line(ax, per_epoch.index.to_numpy(), per_epoch.to_numpy())


def mean_band(ax, rows: pd.DataFrame, column: str, scale: float, colour, label: str) -> None:
    # the tables' `spread` per epoch, so the band is the same sample std the tables print
    by_epoch = {int(e): spread(g[column], scale) for e, g in rows.groupby("epoch")}
    epochs, mean = list(by_epoch), np.array([s.mean for s in by_epoch.values()])
    band = np.array([s.std for s in by_epoch.values()])
    ax.plot(epochs, mean, marker="o", color=colour, label=label)
    ax.fill_between(epochs, mean - band, mean + band, color=colour, alpha=0.2)


def every_seed(ax, rows: pd.DataFrame, column: str, scale: float, colour, label: str) -> None:
    for n, (_, trial) in enumerate(rows.groupby("train.seed")):
        trial = trial.sort_values("epoch")
        evaluated = int(final_value(trial.tail(1), "checkpoint_epoch").fillna(trial["epoch"].iloc[-1]).iloc[0])
        at = trial[trial["epoch"] == evaluated]
        ax.plot(trial["epoch"], scale * trial[column], color=colour, alpha=0.8, linewidth=1.2,
                label=label if n == 0 else None)
        ax.plot(at["epoch"], scale * at[column], "o", color=colour, markersize=5)


def epochs_figure(results: pd.DataFrame, model: str, path: Path) -> Path:
    return arm_panels(results, model, EVIDENCE_PANELS, mean_band,
                      f"{model}: mean over seeds per epoch (band: ± std)", path)


def horizon_figure(results: pd.DataFrame, model: str, path: Path) -> Path:
    rule = f"for its fixed budget of {int(results['train.epochs'].max())} epochs" if fixed_budget(results) \
        else "until its stopping rule"
    return arm_panels(results, model, HORIZON_PANELS, every_seed,
                      f"{model}: every seed {rule} (dot: the epoch it was evaluated at)", path)
