"""Figures from the results table alone: where each trial lands (accuracy and entropy against sparsity, Pareto fronts)
and how each arm got there (per epoch, mean ± std over seeds)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from rem.report.dvc_outputs import arm_curves, arm_label
from rem.report.figures.style import colours, markers, message_panel, plt, save
from rem.report.preconditions import UNIFORM_MARK, in_uniform_arm, uniform_arms
from rem.results import pareto


def pareto_mask(x: np.ndarray, y: np.ndarray, maximize_y: bool) -> np.ndarray:
    """Points no other point beats: at least as sparse (x) and at least as good in y, strictly better in one."""
    return pareto.non_dominated(np.column_stack([x, y]), [True, maximize_y])


ACC_LABEL, ENTROPY_LABEL, SPARSITY_LABEL = ("Test accuracy (%)", "Routing entropy, mean over classes (bits)",
                                            "Pruned parameters (%)")


def _front_of(points: pd.DataFrame, column: str, maximize: bool) -> pd.DataFrame:
    """The points on the two-objective front (sparsity and `column`), by sparsity."""
    valid = points.dropna(subset=[column])
    if valid.empty:
        return valid
    front = valid[pareto_mask(valid["sparsity"].to_numpy(float), valid[column].to_numpy(float), maximize)]
    return front.sort_values("sparsity")


def _facet(ax, points: pd.DataFrame, column: str, maximize: bool, palette: dict, shapes: dict, best: pd.DataFrame,
           uniform: set = frozenset()):
    """One architecture's trials in one objective (hollow: routing uniform), fronts dashed and ringed (`rem pareto`)."""
    for row in points.itertuples():
        hollow = (row.dataset, row.model, row.arm_key) in uniform
        ax.scatter(row.sparsity, getattr(row, column), color=palette[row.variant], marker=shapes[row.variant], s=70,
                   edgecolor=palette[row.variant] if hollow else "black", facecolor="none" if hollow else None,
                   linewidth=1.2 if hollow else 0.5, zorder=3)
    front = _front_of(points, column, maximize)
    if not front.empty:
        ax.plot(front["sparsity"], front[column], color="black", linestyle="--", linewidth=1, zorder=2,
                drawstyle="default" if maximize else "steps-post")
        for n, row in enumerate(front.itertuples()):  # alternate above / below so neighbours do not collide
            ax.annotate(f"{row.variant} s{row.seed}", (row.sparsity, getattr(row, column)), textcoords="offset points",
                        xytext=(6, 8 if n % 2 == 0 else -14), fontsize=8)
    ax.scatter(best["sparsity"], best[column], marker="o", s=220, facecolors="none", edgecolors="darkgoldenrod",
               linewidth=1.6, zorder=4)
    top = max(5.0, 1.05 * float(points["sparsity"].max()) + 1)  # keep 0 (the unpruned trials) in view
    ax.set_xlim(-1, top)
    ax.grid(alpha=0.3)
    ax.tick_params(labelsize=9)


def _variant_legend(fig, palette: dict, shapes: dict, uniform: dict | None = None) -> None:
    """`uniform`: variant -> the models whose arm of it stayed uniform (drawn hollow, named in the legend)."""
    uniform = uniform or {}
    handles = [Line2D([], [], color=palette[v], marker=shapes[v], markeredgecolor=palette[v] if uniform.get(v)
                      else "black", markerfacecolor="none" if uniform.get(v) else palette[v], linestyle="",
                      markersize=8, label=f"{v} ({UNIFORM_MARK}: {', '.join(uniform[v])})" if uniform.get(v) else v)
               for v in palette]
    handles += [Line2D([], [], color="black", linestyle="--", label="front: sparsity vs that panel's objective"),
                Line2D([], [], marker="o", markerfacecolor="none", markeredgecolor="darkgoldenrod", markeredgewidth=1.6,
                       linestyle="", markersize=13, label="front of accuracy, entropy and sparsity (rem pareto)")]
    fig.legend(handles=handles, loc="lower center", ncol=min(4, len(handles)), fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, -0.02))


def _empty(dataset: str, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 3))
    message_panel(ax, f"no finished trial for {dataset}")
    return save(fig, path)


def pareto_figure(points: pd.DataFrame, dataset: str, path: Path) -> Path:
    """Final accuracy and entropy against sparsity, a point per trial, a row per architecture (their scales differ)."""
    points = points[points["dataset"] == dataset]
    if points.empty:
        return _empty(dataset, path)
    models = sorted(set(points["model"]))
    arms = sorted(set(points["arm"]))  # in their order
    variants = [arm.label for arm in arms]  # colours and the legend go by the text they show
    assigned = colours(variants)
    palette, shapes = {v: assigned[v] for v in variants}, markers(arms)
    fig, axes = plt.subplots(len(models), 2, figsize=(12, 3.8 * len(models) + 0.8), squeeze=False)
    best = pareto.front(points)
    uniform = uniform_arms(points)  # hollow: the entropy there is no routing, not a low-entropy result
    for (left, right), model in zip(axes, models):
        mine = points[points["model"] == model]
        ours = best[best["model"] == model]
        _facet(left, mine, "test_acc", True, palette, shapes, ours, uniform)
        _facet(right, mine, "entropy", False, palette, shapes, ours, uniform)
        left.set_ylabel(f"{model}\n{ACC_LABEL}", fontsize=10)
        right.set_ylabel(ENTROPY_LABEL, fontsize=10)
    axes[0][0].set_title("Accuracy vs sparsity (higher, further right is better)", fontsize=11)
    axes[0][1].set_title("Entropy vs sparsity (lower, further right is better)", fontsize=11)
    for ax in axes[-1]:
        ax.set_xlabel(SPARSITY_LABEL, fontsize=10)
    _variant_legend(fig, palette, shapes, {a.label: sorted(m for _, m, k in uniform if k == a.key) for a in arms})
    fig.suptitle(f"{dataset}: one point per trial (final evaluation), one row per architecture; hollow: routing "
                 "uniform", fontsize=12)
    fig.tight_layout(rect=(0, 0.06 + 0.02 / len(models), 1, 0.97))
    return save(fig, path)


def training_figure(points: pd.DataFrame, dataset: str, path: Path) -> Path:
    """Per arm: test accuracy, entropy and sparsity at each epoch, mean over seeds with a ± std band."""
    arms = arm_curves(points[points["dataset"] == dataset])
    if arms.empty:
        return _empty(dataset, path)
    palette = colours(list(arms["arm"]))
    mine = points[points["dataset"] == dataset]
    last = mine.sort_values("epoch").groupby("trial_key").tail(1)  # each trial's last epoch: where it ended
    uniform = set(arm_label(last[in_uniform_arm(last)]))  # the flagged arms' series names
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    for arm, group in arms.groupby("arm", sort=True):
        flag = f", {UNIFORM_MARK}" if arm in uniform else ""
        for ax, column in zip(axes, ("test_acc", "entropy", "sparsity")):
            mean, std = group[column].to_numpy(float), group[f"{column}_std"].to_numpy(float)
            ax.plot(group["epoch"], mean, marker="o", color=palette[arm],
                    label=f"{arm} ({int(group['seeds'].max())} seeds{flag})")
            ax.fill_between(group["epoch"], mean - std, mean + std, color=palette[arm], alpha=0.15, linewidth=0)
    for ax, label in zip(axes, (ACC_LABEL, ENTROPY_LABEL, SPARSITY_LABEL)):
        ax.set_ylabel(label, fontsize=10)
        ax.set_xlabel("Epoch", fontsize=10)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=9, frameon=False)
    fig.suptitle(f"{dataset}: per arm, the mean over seeds at each epoch (band: ± std)", fontsize=12)
    rows = -(-len(labels) // 4)
    fig.tight_layout(rect=(0, 0.05 + 0.045 * rows, 1, 0.95))
    return save(fig, path)
