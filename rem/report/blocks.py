"""What every published run's page (reports/<run>/README.md) is made of, and the tables several pages share. A page
is a `PublishedPage` listing its registered tables (`rem.report.registry`) in order."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rem.analysis.forwards import PLAIN
from rem.io import atomic_write_text
from rem.report.arm_seeds import QUANTIZED, arms_of
from rem.report.assemble import Part, assemble_page, markdown_body, markdown_files
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.results.arms import PLUS_Q
from rem.results.frames import arm_rows, arms, finished_trials

RUN_KEYS = [("primary endpoint", "Primary endpoint"), ("command", "Command"), ("commit", "Commit"),
            ("started", "Started (UTC)"), ("finished", "Finished (UTC)"), ("wall", "Wall time"), ("load", "Load"),
            ("not published", "Stopped, not published"), ("hardware", "Hardware"), ("software", "Software")]
FULL_PROTOCOL = (201, 5)  # REM's: at least 201 epochs (patience 200), 5 seeds
SOURCE = ("every number below is computed from `sweep.parquet` in this folder "
          "(`rem publish {publication} --render-only` regenerates the tables and this page from it without "
          "retraining).")


def run_lines(run: dict) -> list[str]:
    """How the run was made, a line a fact, then each later sweep added to it (`--add`) with its trials."""
    lines = [f"- **{label}:** {run[key]}" for key, label in RUN_KEYS if run.get(key)]
    for added in run.get("added", []):
        trials = added["trials"].split("; ")
        lines.append(f"- **Added later ({len(trials)} trials: {added['trials']}):**")
        lines += [f"  - **{label}:** {added[key]}" for key, label in RUN_KEYS if added.get(key)]
    return lines


@report_table("evaluated", "The checkpoint every seed was evaluated at")
def evaluated_section(frame: pd.DataFrame, context: Context) -> Table:
    """Every seed's evaluated checkpoint (the epoch and rule each verdict reads) and its coupling entropy."""
    rows = []
    for (dataset, model, arm), seeds in context.once(arms_of).items():
        coupling = seeds.coupling[QUANTIZED] if any(not math.isnan(v) for v in seeds.coupling[QUANTIZED]) \
            else seeds.coupling[PLAIN]
        for i, seed in enumerate(seeds.seeds):
            rows.append([dataset, model, arm.label, str(seed), str(seeds.epochs[i]), seeds.rules[i],
                         f"{seeds.accuracy[i]:.2f}",
                         "n/a" if not seeds.routes else "–" if math.isnan(coupling[i]) else f"{coupling[i]:.4f}"])
    return Table("The checkpoint every seed was evaluated at", ["Dataset", "Model", "Variant", "Seed", "Epoch", "Rule",
                 "Test acc. (%)", "Coupling entropy (bits)"], rows, notes=[
        "Rule: 'best', the epoch of the lowest validation loss (an unpruned trial); 'last', the last epoch (a pruned "
        "trial, whose masks only grow). Coupling entropy of the final forward (+Q where it was +Q); uniform routing "
        "over the classes is log2(classes) bits (3.3219 for 10)."])


def threads_per_trial(done: pd.DataFrame) -> str:
    """The torch threads each trial ran on: Ray sets a trial worker's thread count to the CPUs it reserved for it."""
    cpus = sorted({int(c) for c in done["sweep.cpus_per_trial"]})
    if cpus == [1]:
        return "One CPU thread per trial."
    return f"{' or '.join(map(str, cpus))} CPU threads per trial (the sweep's CPUs per trial)."


@report_table("cost", "What it costs on this machine")
def cost_section(frame: pd.DataFrame, context: Context) -> Table:
    """What each arm's epoch cost here, the threshold search's share, and what REM's full protocol would take."""
    min_epochs, seeds = FULL_PROTOCOL
    done = finished_trials(context.results)
    rows = []
    q_epoch = {m: float(arm_rows(done, m, a)["time/epoch_s"].mean()) for m, a in arms(done) if a == PLUS_Q}
    for model, arm in arms(done):
        group = arm_rows(done, model, arm)
        step, epoch = float(group["time/step_s"].mean()), float(group["time/epoch_s"].mean())
        search = (float(group["prune/seconds"].mean())
                  if "prune/seconds" in group and group["prune/seconds"].notna().any() else 0.0)
        full_steps = math.ceil((60000 - float(group["data.val_size"].iloc[0]))
                               / float(group["train.batch_size"].iloc[0]))
        full_epoch = epoch + step * (full_steps - float(group["time/train_s"].mean()) / step)
        share = f"{100 * search / q_epoch[model]:.0f} %" if model in q_epoch and search else "–"
        rows.append([str(model), arm.label, f"{step:.2f}", f"{epoch:.0f}", f"{search:.0f}" if search else "–", share,
                     f"{full_epoch:.0f}", f"{full_epoch * min_epochs * seeds / 86400:.1f}"])
    return Table("What it costs on this machine, and what REM's full protocol would", ["Model", "Variant",
                 "Train s/step", "Epoch s (this run)", "Search s/epoch", "Search / +Q epoch (this run)",
                 "Full epoch s (est.)",
                 f"Trial-days ({min_epochs} epochs x {seeds} seeds)"], rows,
                 notes=[f"{threads_per_trial(done)} A full epoch is every training image once: this run's evaluation "
                        "and search seconds plus its seconds per step times the full epoch's steps. REM stops after "
                        "200 epochs without a better validation loss, so 201 epochs is a lower bound. On a GPU: "
                        "unmeasured (no GPU has run the prepared check, benchmarks/gpu_check.py)."])


@dataclass(frozen=True)
class PublishedPage:
    name: str  # the page's name, which a plugin's table names to join it (`report_table(..., pages=[name])`)
    listed: tuple[str, ...]  # its registered tables in order
    publication: str  # `pipeline.<publication>` publishes it (the library names no pipeline module itself)
    heading: Callable[[pd.DataFrame], tuple[str, str]]  # finished trials -> (title, what the run is)
    new_sentence: bool = False  # the source follows the opening as a sentence of its own, else after a semicolon

    def parts(self, results: pd.DataFrame) -> list[Part]:
        return assemble_page(results, self.name, self.listed).parts

    def tables(self, results: pd.DataFrame) -> dict[str, str]:
        """Every table file of the page as Markdown, by file name; the page embeds the same strings."""
        return markdown_files(self.parts(results))

    def files(self, out: Path, results: pd.DataFrame, run: dict) -> dict[Path, str]:
        """Every table file and the page (README.md) under `out`, with the figures there and its notes.md."""
        parts = self.parts(results)
        figures = sorted(p.name for p in (out / "figures").glob("*.png"))
        notes = (out / "notes.md").read_text() if (out / "notes.md").is_file() else ""
        title, opening = self.heading(finished_trials(results))
        source = SOURCE.format(publication=self.publication)
        intro = f"{opening}. {source[0].upper()}{source[1:]}" if self.new_sentence else f"{opening}; {source}"
        page = [f"# {title}", "", intro, "", *run_lines(run), "", notes.strip(), "", *markdown_body(parts, figures)]
        tables = {out / "tables" / name: text for name, text in markdown_files(parts).items()}
        return {**tables, out / "README.md": "\n".join(page).rstrip() + "\n"}

    def write(self, out: Path, results: pd.DataFrame, run: dict,
              draw: Callable[[pd.DataFrame, Path], list[Path]]) -> list[Path]:
        """The figures `draw` makes under out/figures, then the tables and the page."""
        drawn = draw(results, out / "figures")
        return [atomic_write_text(path, text) for path, text in self.files(out, results, run).items()] + drawn
