"""DVC stage `report`: the paper's tables and figures from the results table (and the trials' checkpoints).

    python -m pipeline.report [--params params.yaml] [-S key=value ...]

Writes under report.out_dir (`rem.report.stage`): tables/<dataset>.md|.tex (+ affnist, smallnorb, pruning-ablation
for the protocols the sweep ran, and any table REM_PLUGINS registers; the page names the protocols it lacks in one
line), figures/*.png, plots/*.csv (DVC plots), metrics/<dataset>/<model>/<variant>.json (DVC metrics) and index.html
(everything on one page, relative links). Here: the config, the results table, the trials' checkpoints in the
sweep's Ray storage, and the files logged to the sweep's MLflow parent run when it can be reached (a one-line
warning when not).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from pipeline.ray_trials import POINT, storage_uri
from rem.cli import CommandError, exit_with, run_with_params
from rem.config import Config, add_params_arguments
from rem.report.stage import build_reports
from rem.results.grid import trial_key
from rem.results.table import read_results, sweeps_in
from rem.tracking import runs as tracking
from rem.tracking.store import open_client
from rem.training.checkpoint import final_checkpoint

OPTIONS_TAG = "report.options"  # the sweep's parent run: the report tables' own options the last report used

log = logging.getLogger("pipeline.report")


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
    uri = tracking.tracking_uri(cfg.sweep.tracking_uri, repo_root)
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).exists():
        return f"MLflow: no tracking database at {uri}; figures not logged"
    try:
        tracking.check_reachable(uri)
        client = open_client(uri)
        experiment = client.get_experiment_by_name(cfg.sweep.name)
        if experiment is None:
            return f"MLflow: no experiment {cfg.sweep.name!r} at {uri}; figures not logged"
        logged = 0
        for sid in sweep_ids:
            run = tracking.find_run(client, experiment.experiment_id,
                                    {tracking.SWEEP_TAG: sid, tracking.ROLE_TAG: "sweep"})
            if run is None:
                continue
            for sub in ("figures", "tables"):
                if (out_dir / sub).is_dir():
                    client.log_artifacts(run.info.run_id, str(out_dir / sub), f"report/{sub}")
            client.log_artifact(run.info.run_id, str(out_dir / "index.html"), "report")
            if cfg.report.options:  # the tables' own options the page was made with (a tag: a later report may differ)
                client.set_tag(run.info.run_id, OPTIONS_TAG, json.dumps(cfg.report.options, sort_keys=True))
            logged += 1
        return None if logged else (f"MLflow: no parent run for sweep(s) {', '.join(sweep_ids)} at {uri}; "
                                    "figures not logged")
    except Exception as err:  # tracking must never fail the report
        return f"MLflow: figures not logged ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"


def report(cfg: Config, args: argparse.Namespace) -> int:
    source = Path(cfg.sweep.results)
    if not source.exists():
        raise CommandError(f"{source}: no results table; run the sweep stage first")
    results = read_results(source)
    out_dir = Path(cfg.report.out_dir)
    checkpoints, notes = {}, []
    if cfg.report.checkpoint_figures:
        checkpoints, notes = locate_checkpoints(cfg, Path.cwd(), sweeps_in(results))
    for path in build_reports(results, out_dir, cfg, Path.cwd(), checkpoints, notes):
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
    exit_with(main())
