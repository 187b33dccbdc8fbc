"""DVC stage `report`: the paper's tables and figures from the results table (and the trials' checkpoints).

    python -m pipeline.report [--params params.yaml] [-S key=value ...]

Writes under report.out_dir: tables/<dataset>.md|.tex (+ affnist, smallnorb, pruning-ablation), figures/*.png,
plots/*.csv (DVC plots), metrics.json and index.html (everything on one page, relative links). Figures are
also logged to the sweep's MLflow parent run when it can be reached (a one-line warning when not).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
from pathlib import Path

import pandas as pd

from rem import protocol_tables, report
from rem.capsule_table import capsule_table
from rem.config import Config, ConfigError, add_params_arguments, load_from_args
from rem.reference import load_published
from rem.report_html import render_page
from rem.table_render import Table, to_latex, to_markdown

log = logging.getLogger("pipeline.report")


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def all_tables(results: pd.DataFrame) -> tuple[list[report.Row], list[tuple[str, str, list[Table]]]]:
    """(rows, [(file stem, page section, tables)]): per dataset its main and per-class tables, then the protocols."""
    published = load_published()
    rows = report.aggregate(results)
    shown = report.with_expected(rows)
    groups = []
    for dataset in sorted({r.dataset for r in shown}):
        subset = [r for r in shown if r.dataset == dataset]
        tables = [report.dataset_table(dataset, subset, published), report.parse_trees_table(dataset, subset)]
        groups.append((dataset, dataset, tables + [t for t in [capsule_table(dataset, subset)] if t is not None]))
    groups.append(("affnist", "affNIST", [protocol_tables.affnist_table(rows, published)]))
    groups.append(("smallnorb", "smallNORB novel viewpoints", [protocol_tables.smallnorb_table(rows)]))
    groups.append(("pruning-ablation", "Pruning ablation", [protocol_tables.ablation_table(rows)]))
    return rows, groups


def write_tables(groups, tables_dir: Path) -> list[Path]:
    tables_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, _, tables in groups:
        for suffix, render in ((".md", to_markdown), (".tex", to_latex)):
            path = tables_dir / f"{stem.replace(' ', '_')}{suffix}"
            write_text(path, "\n".join(render(t) for t in tables))
            written.append(path)
    return written


def write_plot_data(results: pd.DataFrame, plots_dir: Path) -> list[Path]:
    """Per-trial and per-epoch points as CSV: `dvc plots show` draws them, the PNGs are drawn from the same."""
    from rem.figures.sweep_plots import trial_points, training_points

    plots_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in (("trials.csv", trial_points(results)), ("training.csv", training_points(results))):
        path = plots_dir / name
        frame.to_csv(path.with_name(f".{name}.tmp"), index=False)
        os.replace(path.with_name(f".{name}.tmp"), path)
        written.append(path)
    return written


def locate_checkpoints(cfg: Config, repo_root: Path, sweep_ids: list[str]) -> tuple[dict[str, Path], list[str]]:
    """trial_key -> the folder of its newest checkpoint, from the sweep's Ray storage (local storage only)."""
    from pipeline.sweep import POINT, storage_uri
    from rem.grid import trial_key
    from rem.checkpoint import CHECKPOINT_FILE

    storage = storage_uri(cfg, repo_root)
    if "://" in storage:
        return {}, [f"checkpoints live in {storage}; the report reads local storage only, routing figures skipped."]
    found: dict[str, tuple[float, Path]] = {}
    for sid in sweep_ids:
        for params_file in Path(storage, sid).glob("*/params.json"):
            trial_dir = params_file.parent
            candidates = sorted(trial_dir.glob("checkpoint_*"), key=lambda p: p.name) + [trial_dir / "checkpoint"]
            persisted = [c for c in candidates if (c / CHECKPOINT_FILE).exists()]
            if not persisted:
                continue
            key = trial_key(json.loads(params_file.read_text())[POINT])
            mtime = params_file.stat().st_mtime
            if key not in found or mtime > found[key][0]:  # a rerun sweep folder: its newest trial
                found[key] = (mtime, _newest(persisted))
    return {k: v for k, (_, v) in found.items()}, []


def _newest(folders: list[Path]) -> Path:
    """Ray's highest-numbered persisted checkpoint, else the trial's working checkpoint folder."""
    numbered = [f for f in folders if f.name.startswith("checkpoint_")]
    return numbered[-1] if numbered else folders[0]


def log_to_mlflow(cfg: Config, repo_root: Path, sweep_ids: list[str], out_dir: Path) -> str | None:
    """Best effort: the report's files as artifacts of each sweep's parent run; returns a warning or None."""
    from mlflow.tracking import MlflowClient

    from rem import tracking

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
    from rem.figures.build import build_figures, sweep_figures

    out_dir = Path(out_dir)
    rows, groups = all_tables(results)
    written = write_tables(groups, out_dir / "tables")
    metrics = out_dir / "metrics.json"
    write_text(metrics, json.dumps(report.metrics_json(rows), indent=2, sort_keys=True) + "\n")
    written += [metrics] + write_plot_data(results, out_dir / "plots")
    figures_dir = out_dir / "figures"
    shutil.rmtree(figures_dir, ignore_errors=True)  # no stale figure of a trial that is gone
    notes: list[str] = []
    if cfg is not None and cfg.report.checkpoint_figures:
        repo_root = Path(repo_root or Path.cwd())
        sweep_ids = sorted(set(results["sweep_id"].astype(str))) if "sweep_id" in results.columns else []
        checkpoints, notes = locate_checkpoints(cfg, repo_root, sweep_ids)
        figures, more = build_figures(results, checkpoints, cfg, repo_root, figures_dir)
        notes += more
    else:
        figures = sweep_figures(results, figures_dir)
        notes.append("routing figures (histograms, overlap maps, saliency, graphs) off: report.checkpoint_figures is false.")
    page = out_dir / "index.html"
    tables = [(section, t) for _, section, ts in groups for t in ts]
    write_text(page, render_page("REM capsule-network report", tables, figures, notes, out_dir,
                                 [p for p in written if p.parent.name == "tables"]))
    return written + [f.path for f in figures] + [page]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_params_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    try:
        cfg = load_from_args(args)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    source = Path(cfg.sweep.results)
    if not source.exists():
        print(f"error: {source}: no results table; run the sweep stage first", file=sys.stderr)
        return 2
    results = pd.read_parquet(source)
    out_dir = Path(cfg.report.out_dir)
    for path in build_reports(results, out_dir, cfg, Path.cwd()):
        print(f"wrote {path}")
    if cfg.report.log_to_mlflow:
        sweep_ids = sorted(set(results["sweep_id"].astype(str))) if "sweep_id" in results.columns else []
        warning = log_to_mlflow(cfg, Path.cwd(), sweep_ids, out_dir)
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
