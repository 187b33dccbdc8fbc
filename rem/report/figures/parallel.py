"""Parallel coordinates of the whole sweep: every finished trial as a line through the config values that differ
between trials and its outcomes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from rem.config import Config
from rem.report.figures.style import colours, message_panel, plt, save
from rem.results.frames import last_rows, trial_points

OUTCOMES = {"test_acc": "test acc (%)", "entropy": "entropy (bits)", "sparsity": "sparsity (%)"}


def sweep_axes(results: pd.DataFrame) -> list[str]:
    """Config columns whose value differs between the trials (the grid's axes, whatever the grid was)."""
    finals = last_rows(results)
    config = [c for c in Config().flat() if c in finals.columns and not c.startswith(("sweep.", "report."))]
    return [c for c in config if finals[c].astype(str).nunique() > 1]


def parallel_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per finished trial: its axes' values, model, and outcomes."""
    axes = sweep_axes(results)
    points = trial_points(results)
    finals = last_rows(results).set_index("trial_key")
    table = points[["trial_key", "model", *OUTCOMES]].copy()
    for axis in axes:
        table[axis] = finals.loc[table["trial_key"], axis].to_numpy()
    return table[["trial_key", "model", *axes, *OUTCOMES]]


def _scaled(column: pd.Series) -> tuple[np.ndarray, list[tuple[float, str]]]:
    """Values in [0, 1] and the tick labels: numbers keep their order, anything else is spread evenly."""
    numeric = pd.to_numeric(column, errors="coerce")
    plain_numbers = (numeric.notna() | column.isna()).all() and not column.map(lambda v: isinstance(v, bool)).any()
    if plain_numbers and numeric.notna().any():  # a missing value (no entropy without couplings) leaves a gap
        low, high = float(numeric.min()), float(numeric.max())
        span = high - low or 1.0
        return ((numeric - low) / span).to_numpy(float), [(0.0, f"{low:.4g}"),
                                                          (1.0 if high > low else 0.0, f"{high:.4g}")]
    levels = sorted(column.astype(str).unique())
    where = {v: (i / (len(levels) - 1) if len(levels) > 1 else 0.5) for i, v in enumerate(levels)}
    return column.astype(str).map(where).to_numpy(float), [(where[v], v) for v in levels]


def parallel_figure(results: pd.DataFrame, path: Path) -> Path:
    table = parallel_table(results)
    columns = [c for c in table.columns if c not in ("trial_key", "model")]
    fig, ax = plt.subplots(figsize=(max(7.0, 1.6 * len(columns)), 4.5))
    if table.empty:
        message_panel(ax, "no finished trial")
        return save(fig, path)
    scaled = {}
    for i, column in enumerate(columns):
        scaled[column], ticks = _scaled(table[column])
        ax.axvline(i, color="grey", linewidth=0.8, zorder=1)
        for y, label in ticks:
            ax.text(i + 0.03, y, label, fontsize=7, va="center")
    palette = colours(list(table["model"]))
    for row in range(len(table)):
        ys = [scaled[c][row] for c in columns]
        ax.plot(range(len(columns)), ys, color=palette[table["model"].iloc[row]], alpha=0.6, linewidth=1.2, zorder=2)
    ax.set_xticks(range(len(columns)), [OUTCOMES.get(c, c) for c in columns], rotation=20, ha="right", fontsize=8)
    ax.set_yticks([])
    ax.set_xlim(-0.2, len(columns) - 0.6)
    ax.legend(handles=[Line2D([], [], color=palette[m], label=m) for m in sorted(palette)], fontsize=8,
              loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_title(f"{len(table)} trials: the sweep's axes against accuracy, entropy and sparsity (final evaluation)")
    return save(fig, path)
