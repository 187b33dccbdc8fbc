"""The evidence page's figures, drawn from the results table alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rem.report.figures.curve import curve_figure
from rem.report.figures.epochs import epochs_figure
from rem.report.mechanism_curve import trial_curves


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    """Each model's per-epoch curves, and its mechanism curve where its trials recorded one."""
    written, curves = [], trial_curves(results)
    for model in sorted(results["model.name"].astype(str).unique()):
        written.append(epochs_figure(results, model, figures / f"epochs_{model}.png"))
        mine = curves[curves["model.name"].astype(str) == model] if not curves.empty else curves
        if not mine.empty:
            written.append(curve_figure(mine, figures / f"curve_{model}.png", f"{model}: final models pruned by "
                                        f"magnitude without retraining ({int(mine['n_images'].max())} test images)"))
    return written
