"""A `before_render` two studies share (evidence, horizon): the report stage's coupling histograms, drawn from
checkpoints (not from the Parquet), copied beside the page rather than redrawn."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd


def copy_coupling_figures(cfg, out: Path, results: pd.DataFrame) -> None:
    for model in sorted(results["model.name"].astype(str).unique()):
        source = Path(cfg.report.out_dir) / "figures" / f"couplings_{results['data.dataset'].iloc[0]}_{model}.png"
        if source.is_file():
            (out / "figures").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, out / "figures" / f"couplings_{model}.png")
