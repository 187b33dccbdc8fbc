"""DVC stage `report`: the paper's tables and figures from the results table (and the trials' checkpoints).

    python -m pipeline.report [--params params.yaml] [-S key=value ...]

Writes under report.out_dir: tables/<dataset>.md|.tex (+ affnist, smallnorb, pruning-ablation for the protocols the
sweep ran; the page names the others in one line), figures/*.png, plots/*.csv (DVC plots),
metrics/<dataset>/<model>/<variant>.json (DVC metrics) and index.html (everything on one page, relative links).
Figures are also logged to the sweep's MLflow parent run when it can be reached (a one-line warning when not).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
from pathlib import Path

import pandas as pd

from pipeline.ray_trials import POINT, storage_uri
from rem.cli import CommandError, run_with_params
from rem.config import Config, add_params_arguments
from rem.io import atomic_write, atomic_write_text
from rem.report import protocol, tables
from rem.report.ablations import ablation_table
from rem.report.capsule_pruning import capsule_table
from rem.report.compute import precision_note
from rem.report.dvc_outputs import arm_curves, arm_label, write_metrics
from rem.report.page import render_page
from rem.report.reference import load_published
from rem.report.render import Table, to_latex, to_markdown
from rem.report.robustness import protocol_accuracy, robustness_points, robustness_table
from rem.results.frames import training_points, trial_points
from rem.results.grid import trial_key
from rem.results.table import sweeps_in
from rem.tracking import runs as tracking
from rem.training.checkpoint import final_checkpoint

log = logging.getLogger("pipeline.report")


def all_tables(results: pd.DataFrame) -> tuple[list[tables.Row], list[tuple[str, str, list[Table]]], list[str]]:
    """(rows, [(file stem, page section, tables)], protocols not run): per dataset its main and per-class tables,
    then the protocol tables of the protocols the sweep ran."""
    published = load_published()
    rows = tables.aggregate(results)
    shown = tables.with_expected(rows)
    groups = []
    points = robustness_points(results)
    for dataset in sorted({r.dataset for r in shown}):
        subset = [r for r in shown if r.dataset == dataset]
        found = [tables.dataset_table(dataset, subset, published), tables.parse_trees_table(dataset, subset)]
        optional = [capsule_table(dataset, subset), ablation_table(rows, dataset)]
        if not points.empty and (points["data.dataset"].astype(str) == dataset).any():
            optional.append(robustness_table(points, dataset, protocol_accuracy(rows)))
        groups.append((dataset, dataset, found + [t for t in optional if t is not None]))
    ran = protocol.protocols_run(rows)
    for name in ran:
        stem, section, table = protocol.PROTOCOLS[name]
        groups.append((stem, section, [table(rows, published)]))
    return rows, groups, [protocol.PROTOCOLS[n][1] for n in protocol.PROTOCOLS if n not in ran]


def write_tables(groups, tables_dir: Path) -> list[Path]:
    written = []
    for stem, _, group in groups:
        for suffix, render in ((".md", to_markdown), (".tex", to_latex)):
            path = tables_dir / f"{stem.replace(' ', '_')}{suffix}"
            atomic_write_text(path, "\n".join(render(t) for t in group))
            written.append(path)
    return written


def write_plot_data(results: pd.DataFrame, plots_dir: Path) -> list[Path]:
    """The data of dvc.yaml's plots as CSV (`dvc plots show` draws them; the PNGs are drawn from the same): each
    arm's mean and spread per epoch, every trial's final point, every trial's epochs."""
    epochs, trials = training_points(results), trial_points(results)
    frames = {"arms.csv": arm_curves(epochs), "trials.csv": trials.assign(arm=arm_label(trials)), "training.csv": epochs}
    return [atomic_write(plots_dir / name, lambda tmp, frame=frame: frame.to_csv(tmp, index=False))
            for name, frame in frames.items()]


def locate_checkpoints(cfg: Config, repo_root: Path, sweep_ids: list[str]) -> tuple[dict[str, Path], list[str]]:
    """trial_key -> the folder of its newest checkpoint, from the sweep's Ray storage (local storage only)."""
    storage = storage_uri(cfg, repo_root)
    if "://" in storage:
        return {}, [f"checkpoints live in {storage}; the report reads local storage only, routing figures skipped."]
    found: dict[str, tuple[float, Path]] = {}
    for sid in sweep_ids:
        for params_file in Path(storage, sid).glob("*/params.json"):
            newest = final_checkpoint(params_file.parent)
            if newest is None:
                continue
            key = trial_key(json.loads(params_file.read_text())[POINT])
            mtime = params_file.stat().st_mtime
            if key not in found or mtime > found[key][0]:  # a rerun sweep folder: its newest trial
                found[key] = (mtime, newest)
    return {k: v for k, (_, v) in found.items()}, []


def log_to_mlflow(cfg: Config, repo_root: Path, sweep_ids: list[str], out_dir: Path) -> str | None:
    """Best effort: the report's files as artifacts of each sweep's parent run; returns a warning or None."""
    from mlflow.tracking import MlflowClient

    uri = tracking.tracking_uri(cfg.sweep.tracking_uri, repo_root)
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).exists():
        return f"MLflow: no tracking database at {uri}; figures not logged"
    try:
        tracking.check_reachable(uri)
        client = MlflowClient(uri)
        experiment = client.get_experiment_by_name(cfg.sweep.name)
        if experiment is None:
            return f"MLflow: no experiment {cfg.sweep.name!r} at {uri}; figures not logged"
        logged = 0
        for sid in sweep_ids:
            run = tracking.find_run(client, experiment.experiment_id, {tracking.SWEEP_TAG: sid, tracking.ROLE_TAG: "sweep"})
            if run is None:
                continue
            for sub in ("figures", "tables"):
                if (out_dir / sub).is_dir():
                    client.log_artifacts(run.info.run_id, str(out_dir / sub), f"report/{sub}")
            client.log_artifact(run.info.run_id, str(out_dir / "index.html"), "report")
            logged += 1
        return None if logged else f"MLflow: no parent run for sweep(s) {', '.join(sweep_ids)} at {uri}; figures not logged"
    except Exception as err:  # tracking must never fail the report
        return f"MLflow: figures not logged ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"


def build_reports(results: pd.DataFrame, out_dir: Path, cfg: Config | None = None,
                  repo_root: Path | None = None) -> list[Path]:
    """Every report file under `out_dir`; figures need `cfg` (checkpoint figures also the trials' storage)."""
    from rem.report.figures.build import build_figures, sweep_figures  # imports matplotlib: deferred with it

    out_dir = Path(out_dir)
    rows, groups, not_run = all_tables(results)
    tables_dir = out_dir / "tables"
    shutil.rmtree(tables_dir, ignore_errors=True)  # no stale table of a protocol this sweep did not run
    written = write_tables(groups, tables_dir)
    written += write_metrics(rows, out_dir) + write_plot_data(results, out_dir / "plots")
    figures_dir = out_dir / "figures"
    shutil.rmtree(figures_dir, ignore_errors=True)  # no stale figure of a trial that is gone
    notes: list[str] = []
    if cfg is not None and cfg.report.checkpoint_figures:
        repo_root = Path(repo_root or Path.cwd())
        checkpoints, notes = locate_checkpoints(cfg, repo_root, sweeps_in(results))
        figures, more = build_figures(results, checkpoints, cfg, repo_root, figures_dir)
        notes += more
    else:
        figures = sweep_figures(results, figures_dir)
        notes.append("routing figures (histograms, overlap maps, saliency, graphs) off: report.checkpoint_figures is false.")
    page = out_dir / "index.html"
    sections = [(section, t) for _, section, ts in groups for t in ts]
    scope = " ".join(filter(None, [protocol.not_run_line(not_run), precision_note(results)]))
    atomic_write_text(page, render_page("REM capsule-network report", sections, figures, notes, out_dir,
                                        [p for p in written if p.parent.name == "tables"], scope))
    return written + [f.path for f in figures] + [page]


def report(cfg: Config, args: argparse.Namespace) -> int:
    source = Path(cfg.sweep.results)
    if not source.exists():
        raise CommandError(f"{source}: no results table; run the sweep stage first")
    results = pd.read_parquet(source)
    out_dir = Path(cfg.report.out_dir)
    for path in build_reports(results, out_dir, cfg, Path.cwd()):
        print(f"wrote {path}")
    if cfg.report.log_to_mlflow:
        warning = log_to_mlflow(cfg, Path.cwd(), sweeps_in(results), out_dir)
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_params_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    return run_with_params(report, args)

if __name__ == "__main__":
    sys.exit(main())
