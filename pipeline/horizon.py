"""Publish the horizon run (profile `horizon`) under reports/evidence/horizon/, beside the CapsNet evidence: its
per-epoch Parquet, tables, figures and page, and how the run was made (command, commit, wall time, hardware).

    dvc exp run -S profile=horizon           # the run: fetch -> sweep -> report
    python -m pipeline.horizon               # publish it (reads results/sweep.parquet and MLflow for the times)
    python -m pipeline.horizon --render-only # tables, figures and page again from the committed Parquet alone
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from pipeline.evidence import copy_coupling_figures
from pipeline.publication import Publication
from rem.io import atomic_write_text
from rem.report.horizon.figures import horizon_figure
from rem.report.horizon.page import horizon_page, render_tables


def render(out: Path, results: pd.DataFrame, run: dict, module: str = "pipeline.horizon") -> list[Path]:
    """Tables, each model's per-seed figure and the page (published by `module`), from the results table alone."""
    written = [atomic_write_text(out / "tables" / name, text) for name, text in render_tables(results).items()]
    for model in sorted(results["model.name"].astype(str).unique()):
        written.append(horizon_figure(results, model, out / "figures" / f"epochs_{model}.png"))
    figures = sorted(p.name for p in (out / "figures").glob("*.png"))
    notes = (out / "notes.md").read_text() if (out / "notes.md").is_file() else ""
    written.append(atomic_write_text(out / "README.md", horizon_page(results, run, figures, notes, f"python -m {module} --render-only")))
    return written


HORIZON = Publication("horizon", render, before_render=copy_coupling_figures, folder=Path("reports/evidence/horizon"))


def main(argv: list[str] | None = None) -> int:
    return HORIZON.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
