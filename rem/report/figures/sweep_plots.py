"""Figures from the results table alone: where each trial lands (accuracy and entropy vs sparsity, Pareto
fronts marked) and how it got there (accuracy and entropy per epoch against the % of pruned parameters,
REM's entropy-vs-pruning figure)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rem import pareto
from rem.report.figures.style import colours, markers, message_panel, plt, save
from rem.report.tables import label_trials

POINT_COLUMNS = ["trial_key", "dataset", "model", "variant", "seed", "epoch", "sparsity", "test_acc", "entropy"]


def _final_or_epoch(frame: pd.DataFrame, name: str) -> pd.Series:
    """The final evaluation's value where the row has one, else the epoch's own."""
    epoch = frame[name] if name in frame.columns else pd.Series(np.nan, index=frame.index)
    final = frame.get(f"final/{name}")
    return epoch if final is None else final.where(final.notna(), epoch)


def training_points(results: pd.DataFrame) -> pd.DataFrame:
    """One row per finished trial x epoch: sparsity (%), test accuracy (%), mean entropy (bits)."""
    done = label_trials(results)
    done = done[done["status"] == "FINISHED"].sort_values(["trial_key", "epoch"])
    if done.empty:
        return pd.DataFrame(columns=POINT_COLUMNS)
    return pd.DataFrame({
        "trial_key": done["trial_key"], "dataset": done["data.dataset"].astype(str),
        "model": done["model.name"].astype(str), "variant": done["variant"], "seed": done["train.seed"],
        "epoch": done["epoch"].astype(int),
        "sparsity": done["sparsity"] if "sparsity" in done.columns else 0.0,
        "test_acc": 100 * done["test/acc"], "entropy": done.get("entropy/mean", np.nan),
    }).reset_index(drop=True)


def trial_points(results: pd.DataFrame) -> pd.DataFrame:
    """One row per finished trial: its final evaluation (accuracy, entropy) at its last epoch's sparsity."""
    done = label_trials(results)
    done = done[done["status"] == "FINISHED"].sort_values("epoch").groupby("trial_key").tail(1)
    points = training_points(done)
    if not points.empty:
        ordered = done.set_index("trial_key").loc[points["trial_key"]]
        points["test_acc"] = 100 * _final_or_epoch(ordered, "test/acc").to_numpy()
        points["entropy"] = _final_or_epoch(ordered, "entropy/mean").to_numpy()
    return points.sort_values("trial_key").reset_index(drop=True)


def pareto_mask(x: np.ndarray, y: np.ndarray, maximize_y: bool) -> np.ndarray:
    """Points no other point beats: at least as sparse (x) and at least as good in y, strictly better in one."""
    return pareto.non_dominated(np.column_stack([x, y]), [True, maximize_y])


def _scatter_with_front(ax, points: pd.DataFrame, column: str, maximize: bool, palette: dict) -> None:
    shape = markers(points["variant"])
    for row in points.itertuples():
        ax.scatter(row.sparsity, getattr(row, column), color=palette[row.model], marker=shape[row.variant], s=60,
                   edgecolor="black", linewidth=0.5, zorder=3)
    valid = points.dropna(subset=[column])
    if not valid.empty:
        front = valid[pareto_mask(valid["sparsity"].to_numpy(float), valid[column].to_numpy(float), maximize)]
        front = front.sort_values("sparsity")
        ax.plot(front["sparsity"], front[column], color="black", linestyle="--", linewidth=1, zorder=2,
                drawstyle="steps-post" if not maximize else "default", label="Pareto front")
        ax.scatter(front["sparsity"], front[column], s=160, facecolors="none", edgecolors="black", zorder=4)


def _mark_front(left, right, best: pd.DataFrame) -> None:
    """The trials on the accuracy / entropy / sparsity front of their architecture (what `rem pareto` lists)."""
    for ax, column in ((left, "test_acc"), (right, "entropy")):
        ax.scatter(best["sparsity"], best[column], marker="*", s=40, color="gold", edgecolor="black", linewidth=0.4,
                   zorder=5)


def _legend(ax, points: pd.DataFrame, palette: dict) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=palette[m], marker="o", linestyle="", label=m) for m in sorted(palette)]
    handles += [Line2D([], [], color="grey", marker=m, linestyle="", label=v) for v, m in markers(points["variant"]).items()]
    handles += [Line2D([], [], color="black", linestyle="--", marker="o", markerfacecolor="none", label="Pareto front")]
    handles += [Line2D([], [], color="gold", marker="*", markeredgecolor="black", linestyle="",
                       label="front of acc, entropy, sparsity (rem pareto)")]
    ax.legend(handles=handles, fontsize=8, loc="best")


ACC_LABEL, ENTROPY_LABEL = "Test accuracy (%)", "Routing entropy, mean over classes (bits)"


def _two_panels(points: pd.DataFrame, dataset: str):
    """(figure, left, right, the dataset's points); both panels say so when it has no finished trial."""
    points = points[points["dataset"] == dataset]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    if points.empty:
        for ax in (left, right):
            message_panel(ax, f"no finished trial for {dataset}")
    else:
        left.set_ylabel(ACC_LABEL)
        right.set_ylabel(ENTROPY_LABEL)
        # Sparsity is a percentage: keep 0 in view (unpruned trials) instead of a ±0.04 % window around it.
        top = max(5.0, 1.05 * float(points["sparsity"].max()) + 1)
        for ax in (left, right):
            ax.set_xlim(-1, top)
            ax.set_xlabel("Pruned parameters (%)")
            ax.grid(alpha=0.3)
    return fig, left, right, points


def pareto_figure(points: pd.DataFrame, dataset: str, path: Path) -> Path:
    """Accuracy vs sparsity and entropy vs sparsity, one point per trial, colour = architecture."""
    fig, left, right, points = _two_panels(points, dataset)
    if not points.empty:
        palette = colours(list(points["model"]))
        _scatter_with_front(left, points, "test_acc", True, palette)
        _scatter_with_front(right, points, "entropy", False, palette)
        _mark_front(left, right, pareto.front(points))
        left.set_title("Accuracy vs sparsity (higher and further right is better)")
        right.set_title("Entropy vs sparsity (lower and further right is better)")
        _legend(left, points, palette)
    fig.suptitle(f"{dataset}: one point per trial (final evaluation)")
    return save(fig, path)


def training_figure(points: pd.DataFrame, dataset: str, path: Path) -> Path:
    """Per trial, each epoch's test accuracy and entropy against the % of pruned parameters so far."""
    fig, left, right, points = _two_panels(points, dataset)
    if not points.empty:
        series = {key: f"{g['model'].iloc[0]} {g['variant'].iloc[0]} seed {g['seed'].iloc[0]}"
                  for key, g in points.groupby("trial_key")}
        palette = colours(list(series.values()))
        for key, group in points.groupby("trial_key"):
            label = series[key]
            for ax, column in ((left, "test_acc"), (right, "entropy")):
                ax.plot(group["sparsity"], group[column], marker="o", color=palette[label], label=label)
                last = group.iloc[-1]
                ax.annotate(f"ep {last['epoch']}", (last["sparsity"], last[column]), textcoords="offset points",
                            xytext=(4, 4), fontsize=7)
        left.set_title("Accuracy during training")
        right.set_title("Entropy during training")
        left.legend(fontsize=8, loc="best")
    fig.suptitle(f"{dataset}: one marker per epoch, against the % of pruned parameters")
    return save(fig, path)
