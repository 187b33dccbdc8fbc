"""The report stage's files: tables, figures, DVC's metrics and plot data, and index.html (`build_reports`)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from rem.config import Config
from rem.io import atomic_write_text
from rem.report.assemble import Part, assemble_page, table_files
from rem.report.compute import precision_note
from rem.report.dvc_outputs import write_metrics, write_plot_data
from rem.report.headline import write_headline
from rem.report.page import render_page
from rem.report.registry import REPORT_PAGE
from rem.report.render import to_latex, to_markdown
from rem.report.tables import aggregate
from rem.report.verdicts import MIN_SEEDS

TITLE = "REM capsule-network report"
# The report page's tables in order; a plugin's table joins after them (`report_table(..., pages=[REPORT_PAGE])`)
REPORT_TABLES = ("dataset", "parse-trees", "capsule-pruning", "routing-ablation", "routing-iterations", "robustness",
                 "equivariance", "affnist", "smallnorb", "pruning-ablation")


def write_tables(parts: list[Part], tables_dir: Path) -> list[Path]:
    """Each file's tables as Markdown and LaTeX; a table made per dataset goes to its dataset's file."""
    written = []
    for stem, tables in table_files(parts, lambda part: part.group or part.file).items():
        for suffix, render in ((".md", to_markdown), (".tex", to_latex)):
            path = tables_dir / f"{stem.replace(' ', '_')}{suffix}"
            written.append(atomic_write_text(path, "\n".join(render(t) for t in tables)))
    return written


def not_run_line(sections: list[str]) -> str:
    """The page's one line on the protocols this sweep left out (empty when it ran them all)."""
    return f"Not run by this sweep (no section below): {', '.join(sections)}." if sections else ""


def budget_line(rows) -> str:
    """The page's one line on what this sweep's budget can show: enough seeds for a verdict, routing that routed."""
    done = [r for r in rows if r.seeds]
    if not done:
        return ""
    most = max(len(r.seeds) for r in done)
    seeds = (f"at most {most} seed{'s' if most > 1 else ''} per arm, so no comparison is decided here (a verdict needs "
             f"{MIN_SEEDS}, rem.report.verdicts)" if most < MIN_SEEDS else f"up to {most} seeds per arm")
    uniform = [f"{r.model} {r.variant}" for r in done if r.uniform]
    routing = (f"routing stayed uniform in {', '.join(uniform)}: their entropy and parse trees measure no routing"
               if uniform else "every routed arm's couplings left uniform")
    return f"What this budget can show: every axis, with {seeds}; {routing}."


def draw_figures(results: pd.DataFrame, figures_dir: Path, cfg: Config | None, repo_root: Path | None,
                 checkpoints: Mapping[str, Path] | None) -> tuple[list, list[str]]:
    """(figures, notes on those not drawn): the checkpoint figures too when `cfg` asks for them."""
    from rem.report.figures.build import build_figures, sweep_figures  # imports matplotlib: deferred with it

    shutil.rmtree(figures_dir, ignore_errors=True)  # no stale figure of a trial that is gone
    if cfg is not None and cfg.report.checkpoint_figures:
        return build_figures(results, dict(checkpoints or {}), cfg, Path(repo_root or Path.cwd()), figures_dir)
    return sweep_figures(results, figures_dir), [
        "routing figures (histograms, overlap maps, saliency, graphs) off: report.checkpoint_figures is false."]


def build_reports(results: pd.DataFrame, out_dir: Path, cfg: Config | None = None, repo_root: Path | None = None,
                  checkpoints: Mapping[str, Path] | None = None, notes: Sequence[str] = ()) -> list[Path]:
    """Every report file under `out_dir`; figures need `cfg`, the checkpoint figures also `checkpoints` (trial_key
    -> folder) and `notes` on those not found."""
    out_dir = Path(out_dir)
    assembly = assemble_page(results, REPORT_PAGE, REPORT_TABLES, cfg.report.options if cfg is not None else None)
    tables_dir = out_dir / "tables"
    shutil.rmtree(tables_dir, ignore_errors=True)  # no stale table of a protocol this sweep did not run
    written = write_tables(assembly.parts, tables_dir)
    rows = assembly.context.once(aggregate)
    written += (write_metrics(rows, out_dir) + write_headline(rows, out_dir)
                + write_plot_data(results, out_dir / "plots"))
    figures, more = draw_figures(results, out_dir / "figures", cfg, repo_root, checkpoints)
    sections = [(part.section, table) for part in assembly.parts for table in part.tables]
    scope = " ".join(filter(None, [budget_line(rows), not_run_line(assembly.absent),
                                   precision_note(results)]))
    page = atomic_write_text(out_dir / "index.html", render_page(TITLE, sections, figures, [*notes, *more], out_dir,
                                                                  [p for p in written if p.parent == tables_dir],
                                                                  scope))
    return written + [f.path for f in figures] + [page]
