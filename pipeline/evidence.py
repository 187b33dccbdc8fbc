"""Publish the evidence run (profile `evidence`) under reports/evidence/: its per-epoch Parquet, tables, figures and
page, and how the run was made (command, commit, wall time, hardware).

    dvc exp run -S profile=evidence           # the run: fetch -> sweep -> report
    python -m pipeline.evidence               # publish it (reads results/sweep.parquet, reports/figures, MLflow)
    python -m pipeline.evidence --render-only # tables, curves and page again from the committed Parquet alone
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd

from pipeline.publication import Publication
from rem.io import atomic_write_text
from rem.report.evidence.curve import trial_curves
from rem.report.evidence.figures import epochs_figure
from rem.report.evidence.page import evidence_page, render_tables
from rem.report.figures.curve import curve_figure


def copy_coupling_figures(cfg, out: Path, results: pd.DataFrame) -> None:
    """The report stage's coupling histograms, drawn from checkpoints (not from the Parquet): copied, not redrawn."""
    for model in sorted(results["model.name"].astype(str).unique()):
        source = Path(cfg.report.out_dir) / "figures" / f"couplings_{results['data.dataset'].iloc[0]}_{model}.png"
        if source.is_file():
            (out / "figures").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, out / "figures" / f"couplings_{model}.png")


def render(out: Path, results: pd.DataFrame, run: dict) -> list[Path]:
    """Tables, per-epoch curves and the page, from the results table alone."""
    written = [atomic_write_text(out / "tables" / name, text) for name, text in render_tables(results).items()]
    curves = trial_curves(results)
    for model in sorted(results["model.name"].astype(str).unique()):
        written.append(epochs_figure(results, model, out / "figures" / f"epochs_{model}.png"))
        mine = curves[curves["model.name"].astype(str) == model] if not curves.empty else curves
        if not mine.empty:
            written.append(curve_figure(mine, out / "figures" / f"curve_{model}.png", f"{model}: final models pruned by "
                                        f"magnitude without retraining ({int(mine['n_images'].max())} test images)"))
    figures = sorted(p.name for p in (out / "figures").glob("*.png"))
    notes = (out / "notes.md").read_text() if (out / "notes.md").is_file() else ""
    written.append(atomic_write_text(out / "README.md", evidence_page(results, run, figures, notes)))
    return written


EVIDENCE = Publication("evidence", render, before_render=copy_coupling_figures)


def main(argv: list[str] | None = None) -> int:
    return EVIDENCE.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
