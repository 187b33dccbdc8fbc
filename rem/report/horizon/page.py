"""reports/evidence/horizon/README.md: REM against +Q at the training horizon, on one page with how the run was made."""

from __future__ import annotations

import pandas as pd

import rem.report.horizon.tables  # noqa: F401  (registers the page's tables)
from rem.report.assemble import assemble_page, markdown_body, markdown_files
from rem.report.evidence.page import page_text
from rem.report.registry import HORIZON_PAGE
from rem.results.frames import finished_trials


def render_tables(results: pd.DataFrame) -> dict[str, str]:
    """Every horizon table as Markdown, by file name; the page embeds the same strings."""
    return markdown_files(assemble_page(results, HORIZON_PAGE).parts)


# How the pages name an architecture in a title
TITLES = {"efficient_capsnet": "Efficient-CapsNet", "gamma_capsnet": "γ-CapsNet", "capsnet": "CapsNet",
          "deepcaps": "DeepCaps"}


def horizon_page(results: pd.DataFrame, run: dict, figures: list[str], notes: str = "",
                 render_only: str = "python -m pipeline.horizon --render-only") -> str:
    """The page of a horizon run whose publication's `render_only` command regenerates it."""
    done = finished_trials(results)
    names = sorted(done["model.name"].astype(str).unique())
    models = ", ".join(names)
    datasets = ", ".join(sorted(done["data.dataset"].astype(str).unique()))
    patience, cap = int(done["train.patience"].max()), int(done["train.epochs"].max())
    intro = (f"{models} on {datasets}, {done['trial_key'].nunique()} finished trials, each trained until its "
             f"validation loss had not improved for {patience} epochs (REM's patience rule) or for {cap} epochs, "
             "whichever came first. The CapsNet evidence run is one folder up (`../README.md`); the runs come from "
             "different sweeps, so no comparison crosses them. Every number below is computed from `sweep.parquet` in "
             f"this folder (`{render_only}` regenerates the tables and this page from it "
             "without retraining).")
    title = " and ".join(TITLES.get(n, n) for n in names)
    return page_text(f"REM at a training horizon: {title} to its stopping rule", intro, run, notes,
                     markdown_body(assemble_page(results, HORIZON_PAGE).parts, figures))
