"""Publish the claims run (profile `claims`) under reports/claims/: its per-epoch Parquet, the robustness and
ablation tables, the robustness curves and the page stating what holds, and how the run was made.

    dvc exp run -S profile=claims           # the run: fetch -> sweep -> report
    python -m pipeline.claims               # publish it (reads results/sweep.parquet and MLflow for the times)
    python -m pipeline.claims --render-only # tables, figures and page again from the committed Parquet alone
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from pipeline.claims_figures import claims_figures
from pipeline.publication import Publication
from rem.io import atomic_write_text
from rem.report.claims import claims_page, render_tables
from rem.report.figures.build import robustness_figures, routing_iteration_figures


def render(out: Path, results: pd.DataFrame, run: dict) -> list[Path]:
    """Tables, robustness and per-iteration routing curves (one figure per dataset, every arm) and the page, from the
    results table alone (the reconstructions of overlapping digits are drawn before, from models: `claims_figures`)."""
    written = [atomic_write_text(out / "tables" / name, text) for name, text in render_tables(results).items()]
    written += [figure.path for figure in robustness_figures(results, out / "figures")]
    written += [figure.path for figure in routing_iteration_figures(results, out / "figures")]
    figures = sorted(p.name for p in (out / "figures").glob("*.png"))
    notes = (out / "notes.md").read_text() if (out / "notes.md").is_file() else ""
    written.append(atomic_write_text(out / "README.md", claims_page(results, run, figures, notes)))
    return written


CLAIMS = Publication("claims", render, before_render=claims_figures)


def main(argv: list[str] | None = None) -> int:
    return CLAIMS.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
