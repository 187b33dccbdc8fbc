"""Publish the horizon run (profile `horizon`) under reports/evidence/horizon/, beside the CapsNet evidence: its
per-epoch Parquet, tables, figures and page, and how the run was made (command, commit, wall time, hardware).

    dvc exp run -S profile=horizon           # the run: fetch -> sweep -> report
    python -m pipeline.horizon               # publish it (reads results/sweep.parquet and MLflow for the times)
    python -m pipeline.horizon --render-only # tables, figures and page again from the committed Parquet alone
"""

from __future__ import annotations

import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

import pandas as pd

from pipeline.evidence import copy_coupling_figures
from pipeline.publication import Publication
from rem.report.figures.epochs import horizon_figure
from rem.report.horizon import PAGE


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    """Each model's every seed to its stopping rule (results table only)."""
    return [horizon_figure(results, model, figures / f"epochs_{model}.png")
            for model in sorted(results["model.name"].astype(str).unique())]


def horizon_publication(name: str, folder: Path, **options) -> Publication:
    """A horizon run that `python -m pipeline.<name>` publishes under `folder`: the horizon page and its figures, beside
    the report stage's coupling histograms (`options`: the other `Publication` fields)."""
    page = replace(PAGE, publication=name)
    return Publication(name, partial(page.write, draw=draw), before_render=copy_coupling_figures, folder=folder,
                       **options)


HORIZON = horizon_publication("horizon", Path("reports/evidence/horizon"))


def main(argv: list[str] | None = None) -> int:
    return HORIZON.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
