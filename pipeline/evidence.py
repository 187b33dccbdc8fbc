"""Publish the evidence run (profile `evidence`) under reports/evidence/: its per-epoch Parquet, tables, figures and
page, and how the run was made (command, commit, wall time, hardware).

    dvc exp run -S profile=evidence           # the run: fetch -> sweep -> report
    python -m pipeline.evidence               # publish it (reads results/sweep.parquet, reports/figures, MLflow)
    python -m pipeline.evidence --render-only # tables, curves and page again from the committed Parquet alone
"""

from __future__ import annotations

import shutil
import sys
from functools import partial
from pathlib import Path

import pandas as pd

from pipeline.publication import Publication
from rem.report.evidence import PAGE
from rem.report.figures.curve import curve_figure
from rem.report.figures.epochs import epochs_figure
from rem.report.mechanism_curve import trial_curves


def copy_coupling_figures(cfg, out: Path, results: pd.DataFrame) -> None:
    """The report stage's coupling histograms, drawn from checkpoints (not from the Parquet): copied, not redrawn."""
    for model in sorted(results["model.name"].astype(str).unique()):
        source = Path(cfg.report.out_dir) / "figures" / f"couplings_{results['data.dataset'].iloc[0]}_{model}.png"
        if source.is_file():
            (out / "figures").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, out / "figures" / f"couplings_{model}.png")


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    """Each model's per-epoch curves, and its mechanism curve where its trials recorded one (results table only)."""
    written, curves = [], trial_curves(results)
    for model in sorted(results["model.name"].astype(str).unique()):
        written.append(epochs_figure(results, model, figures / f"epochs_{model}.png"))
        mine = curves[curves["model.name"].astype(str) == model] if not curves.empty else curves
        if not mine.empty:
            written.append(curve_figure(mine, figures / f"curve_{model}.png", f"{model}: final models pruned by "
                                        f"magnitude without retraining ({int(mine['n_images'].max())} test images)"))
    return written


EVIDENCE = Publication("evidence", partial(PAGE.write, draw=draw), before_render=copy_coupling_figures)


def main(argv: list[str] | None = None) -> int:
    return EVIDENCE.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
