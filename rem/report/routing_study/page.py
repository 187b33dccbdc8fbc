"""reports/routing/README.md: the routing-regime study on one page, with how the run was made."""

from __future__ import annotations

import pandas as pd

import rem.report.routing_study.tables  # noqa: F401  (registers the page's tables)
from rem.report.assemble import assemble_page, markdown_body, markdown_files
from rem.report.evidence.page import page_text
from rem.report.registry import ROUTING_PAGE
from rem.results.frames import finished_trials


def render_tables(results: pd.DataFrame) -> dict[str, str]:
    """Every table of the study as Markdown, by file name; the page embeds the same strings."""
    return markdown_files(assemble_page(results, ROUTING_PAGE).parts)


def routing_page(results: pd.DataFrame, run: dict, figures: list[str], notes: str = "") -> str:
    done = finished_trials(results)
    datasets = ", ".join(sorted(done["data.dataset"].astype(str).unique()))
    intro = (f"{datasets}, {done['trial_key'].nunique()} finished trials: how many training images it takes until "
             "each architecture's and each CapsNet setting's routing leaves uniform, and what moves that point. "
             "Every number below is computed from `sweep.parquet` in this folder (`python -m pipeline.routing "
             "--render-only` regenerates the tables and this page from it without retraining).")
    return page_text("When does routing route? The routing-regime study", intro, run, notes,
                     markdown_body(assemble_page(results, ROUTING_PAGE).parts, figures))
