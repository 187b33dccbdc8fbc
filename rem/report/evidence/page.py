"""reports/evidence/README.md: the evidence tables and figures on one page, with how the run was made."""

from __future__ import annotations

import pandas as pd

from rem.report.evidence.curve import curve_tables
from rem.report.evidence.tables import (cost_table, epoch_table, final_spreads, final_table, first_epoch_table,
                                        verdict_tables)
from rem.report.render import to_markdown
from rem.results.frames import finished_trials

# Per architecture: its curves over epochs (from the Parquet), then the report stage's coupling histograms
# (first vs last epoch, +Q vs +REM; drawn from checkpoints, so copied, not regenerated).
FIGURES = ("epochs_{model}.png", "curve_{model}.png", "couplings_{model}.png")


def render_tables(results: pd.DataFrame) -> dict[str, str]:
    """Every evidence table as Markdown, by file name; the page embeds the same strings."""
    done = finished_trials(results)
    spreads = final_spreads(results)  # the final table and the verdicts read the same numbers
    curves = curve_tables(results)
    verdicts = verdict_tables(spreads) + [tables[0] for tables in curves.values()]  # with the curves' onsets
    out = {"claims.md": "\n".join(to_markdown(t) for t in verdicts),
           "final.md": to_markdown(final_table(results, spreads)),
           "first_epoch.md": to_markdown(first_epoch_table(results)),
           "cost.md": to_markdown(cost_table(results))}
    for model in sorted(done["model.name"].astype(str).unique()):
        out[f"epochs_{model}.md"] = to_markdown(epoch_table(results, model))
    for name, tables in curves.items():
        out[f"{name}.md"] = "\n".join(to_markdown(t) for t in tables[1:])
    return out


def run_lines(run: dict) -> list[str]:
    keys = [("command", "Command"), ("commit", "Commit"), ("started", "Started (UTC)"), ("finished", "Finished (UTC)"),
            ("wall", "Wall time"), ("load", "Load"), ("not published", "Stopped, not published"), ("hardware", "Hardware"), ("software", "Software")]
    return [f"- **{label}:** {run[key]}" for key, label in keys if run.get(key)]


def evidence_page(results: pd.DataFrame, run: dict, figures: list[str], notes: str = "") -> str:
    """The page as Markdown: `run` describes how the run was made, `figures` are file names under figures/, `notes`
    is the hand-written reading of the numbers (reports/evidence/notes.md), linked rather than generated."""
    tables = render_tables(results)
    done = finished_trials(results)
    trials = done["trial_key"].nunique()
    epochs = ", ".join(f"{m} {int(e)}" for m, e in done.groupby("model.name")["epoch"].max().items())
    parts = [
        "# Evidence: does REM do what its paper claims?",
        "",
        f"Fashion-MNIST, {trials} finished trials (epochs: {epochs}), REM's recipe; every number below is computed "
        "from `sweep.parquet` in this folder (`python -m pipeline.evidence --render-only` regenerates the tables "
        "and this page from it without retraining).",
        "",
        *run_lines(run),
        "",
        notes.strip(),
        "",
        tables["claims.md"],
        tables["final.md"],
        tables["first_epoch.md"],
    ]
    for model in sorted(done["model.name"].astype(str).unique()):
        parts += [tables[f"epochs_{model}.md"], tables.get(f"curve_{model}.md")]
        parts += [f"![{name}](figures/{name})\n" for name in (f.format(model=model) for f in FIGURES) if name in figures]
    parts += [tables["cost.md"]]
    return "\n".join(p for p in parts if p is not None).rstrip() + "\n"
