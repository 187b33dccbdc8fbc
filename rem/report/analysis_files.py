"""The files of a one-model analysis (`rem sparsity-curve`, `rem robustness`): its table as Parquet and CSV, and its
figure."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from rem.io import atomic_write


def write_table(frame: pd.DataFrame, out: Path, name: str, figure: Callable[[Path], Path]) -> list[Path]:
    """`frame` as `<out>/<name>.parquet` and `.csv`, and the figure `figure(path)` draws at `<out>/<name>.png`."""
    out.mkdir(parents=True, exist_ok=True)
    written = [atomic_write(out / f"{name}.parquet", lambda tmp: frame.to_parquet(tmp, index=False)),
               atomic_write(out / f"{name}.csv", lambda tmp: frame.to_csv(tmp, index=False))]
    written.append(figure(out / f"{name}.png"))
    return written


def write_curve(frame: pd.DataFrame, out: Path, source: str) -> list[Path]:
    """A model's mechanism curve (`rem.analysis.sparsity_curve.curve_of`) as sparsity_curve.parquet, .csv and .png."""
    from rem.report.figures.curve import curve_figure

    labelled = frame.assign(variant=str(frame["model.name"].iloc[0]))
    return write_table(frame, out, "sparsity_curve",
                       lambda path: curve_figure(labelled, path, f"{source}: pruned without retraining"))


def write_robustness(frame: pd.DataFrame, out: Path, source: str) -> list[Path]:
    """A model's robustness (`robustness_of`) as robustness.parquet, .csv and .png."""
    from rem.report.figures.robustness import robustness_figure

    labelled = frame.assign(series=str(frame["model.name"].iloc[0]))
    return write_table(frame, out, "robustness",
                       lambda path: robustness_figure(labelled, path, f"{source}: transformed test images"))
