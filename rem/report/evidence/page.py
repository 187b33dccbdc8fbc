"""reports/evidence/README.md: the evidence tables and figures on one page, with how the run was made."""

from __future__ import annotations

import pandas as pd

from rem.report.assemble import assemble_page, markdown_body, markdown_files
from rem.report.evidence.curve import curve_tables
from rem.report.evidence.tables import (cost_table, epoch_table, evaluated_table, final_spreads, final_table,
                                        first_epoch_table, verdict_tables)
from rem.report.registry import CLAIMS_PAGE, EVIDENCE_PAGE, HORIZON_PAGE, Context, report_table
from rem.report.render import Table
from rem.results.frames import finished_trials


@report_table("abstract-claims", "The abstract's claims against this run", pages={EVIDENCE_PAGE: 10},
              file="claims")
def abstract_claims(frame: pd.DataFrame, context: Context) -> list[Table]:
    """The abstract's verdicts (from the same numbers as the final table), then each model's curve onsets."""
    onsets = [tables[0] for tables in context.once(curve_tables).values()]
    return verdict_tables(context.once(final_spreads), context.results) + onsets


@report_table("final", "Final evaluation, per architecture and variant", pages={EVIDENCE_PAGE: 20})
def final_section(frame: pd.DataFrame, context: Context) -> Table:
    return final_table(context.results, context.once(final_spreads))


@report_table("evaluated", "The checkpoint every seed was evaluated at",
              pages={EVIDENCE_PAGE: 25, CLAIMS_PAGE: 15, HORIZON_PAGE: 25})
def evaluated_section(frame: pd.DataFrame, context: Context) -> Table:
    return evaluated_table(context.results)


@report_table("first-epoch", "First epoch of REM's recipe", pages={EVIDENCE_PAGE: 30}, file="first_epoch")
def first_epoch_section(frame: pd.DataFrame, context: Context) -> Table:
    return first_epoch_table(context.results)


@report_table("epochs", "Every epoch", pages={EVIDENCE_PAGE: 40}, per="model.name", file="epochs_{group}",
              figures=("epochs_{group}.png",))
def epochs_section(frame: pd.DataFrame, context: Context, model: str) -> Table:
    return epoch_table(context.results, model)


# The curve's figure, then the report stage's coupling histograms (first vs last epoch, +Q vs +REM; drawn from
# checkpoints, so copied, not regenerated) close each architecture's part of the page.
@report_table("curve", "Pruned by magnitude without retraining", pages={EVIDENCE_PAGE: 50}, per="model.name",
              file="curve_{group}", figures=("curve_{group}.png", "couplings_{group}.png"))
def curve_section(frame: pd.DataFrame, context: Context, model: str) -> list[Table] | None:
    tables = context.once(curve_tables).get(f"curve_{model}")
    return None if tables is None else tables[1:]  # the onsets open the page, with the claims


@report_table("cost", "What it costs on this machine", pages={EVIDENCE_PAGE: 60, HORIZON_PAGE: 60})
def cost_section(frame: pd.DataFrame, context: Context) -> Table:
    return cost_table(context.results)


def render_tables(results: pd.DataFrame) -> dict[str, str]:
    """Every evidence table as Markdown, by file name; the page embeds the same strings."""
    return markdown_files(assemble_page(results, EVIDENCE_PAGE).parts)


RUN_KEYS = [("primary endpoint", "Primary endpoint"), ("command", "Command"), ("commit", "Commit"), ("started", "Started (UTC)"), ("finished", "Finished (UTC)"),
            ("wall", "Wall time"), ("load", "Load"), ("not published", "Stopped, not published"),
            ("hardware", "Hardware"), ("software", "Software")]


def run_lines(run: dict) -> list[str]:
    """How the run was made, a line a fact; a later sweep added to it (`python -m pipeline.<name> --add`) follows
    with its own facts and the trials it brought."""
    lines = [f"- **{label}:** {run[key]}" for key, label in RUN_KEYS if run.get(key)]
    for added in run.get("added", []):
        trials = added["trials"].split("; ")
        lines.append(f"- **Added later ({len(trials)} trials: {added['trials']}):**")
        lines += [f"  - **{label}:** {added[key]}" for key, label in RUN_KEYS if added.get(key)]
    return lines


def page_text(title: str, intro: str, run: dict, notes: str, body: list[str]) -> str:
    """A published run's page: its title, what it is, how it was made (`run`), the hand-written reading of its
    numbers (`notes`, a notes.md beside it) and the generated tables and figures (`body`)."""
    return "\n".join([f"# {title}", "", intro, "", *run_lines(run), "", notes.strip(), "", *body]).rstrip() + "\n"


def evidence_page(results: pd.DataFrame, run: dict, figures: list[str], notes: str = "") -> str:
    """The page as Markdown: `run` describes how the run was made, `figures` are file names under figures/, `notes`
    is the hand-written reading of the numbers (reports/evidence/notes.md), linked rather than generated."""
    done = finished_trials(results)
    trials = done["trial_key"].nunique()
    epochs = ", ".join(f"{m} {int(e)}" for m, e in done.groupby("model.name")["epoch"].max().items())
    intro = (f"Fashion-MNIST, {trials} finished trials (epochs: {epochs}), REM's recipe; every number below is computed "
             "from `sweep.parquet` in this folder (`python -m pipeline.evidence --render-only` regenerates the tables "
             "and this page from it without retraining).")
    return page_text("Evidence: does REM do what its paper claims?", intro, run, notes,
                     markdown_body(assemble_page(results, EVIDENCE_PAGE).parts, figures))
