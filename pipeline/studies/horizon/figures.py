"""The horizon page's figures, drawn from the results table alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rem.report.figures.epochs import horizon_figure


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    """Each model's every seed to its stopping rule."""
    return [horizon_figure(results, model, figures / f"epochs_{model}.png")
            for model in sorted(results["model.name"].astype(str).unique())]
