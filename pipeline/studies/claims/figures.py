"""The claims page's figures drawn from the results table alone (the reconstructions of overlapping digits are drawn
before, from models: model_figures.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rem.report.figures.build import robustness_figures, routing_iteration_figures


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    """Robustness and per-iteration routing curves, one figure per dataset, every arm."""
    drawn = [*robustness_figures(results, figures), *routing_iteration_figures(results, figures)]
    return [figure.path for figure in drawn]
