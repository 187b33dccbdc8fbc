"""Publish the claims run (profile `claims`) under reports/claims/: its per-epoch Parquet, the robustness and
ablation tables, the robustness curves and the page stating what holds, and how the run was made.

    dvc exp run -S profile=claims           # the run: fetch -> sweep -> report
    python -m pipeline.claims               # publish it (reads results/sweep.parquet and MLflow for the times)
    python -m pipeline.claims --render-only # tables, figures and page again from the committed Parquet alone
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import pandas as pd

from pipeline.claims_figures import claims_figures
from pipeline.publication import Publication
from rem.report.claims import PAGE
from rem.report.figures.build import robustness_figures, routing_iteration_figures


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    """Robustness and per-iteration routing curves, one figure per dataset, every arm (results table only; the
    reconstructions of overlapping digits are drawn before, from models: `claims_figures`)."""
    drawn = [*robustness_figures(results, figures), *routing_iteration_figures(results, figures)]
    return [figure.path for figure in drawn]


CLAIMS = Publication("claims", partial(PAGE.write, draw=draw), before_render=claims_figures)


def main(argv: list[str] | None = None) -> int:
    return CLAIMS.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
