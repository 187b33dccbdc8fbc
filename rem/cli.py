"""The `rem` command: one trial without Ray, the pipeline stages, and the MLflow UI on the local store.

    rem train [-S key=value ...]      one trial of params.yaml (no Ray), resumable from --workdir
    rem fetch <dataset>               verified files in data/raw/<dataset>
    rem sweep [-S key=value ...]      the Ray Tune sweep (what `dvc repro` runs)
    rem report                        tables from results/sweep.parquet
    rem collect [--sweep ID|latest]   results/sweep.parquet rebuilt from MLflow (a sweep run on a cluster)
    rem pareto [--sweep ID|latest]    trials no other beats on accuracy, entropy and sparsity, from MLflow
    rem ui [--port 5000]              MLflow's UI for the local sqlite store, on 127.0.0.1
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from pathlib import Path


def _train(args: argparse.Namespace) -> int:
    from rem.config import ConfigError, load_from_args
    from rem.data import DataSourceError
    from rem.device import DeviceUnavailableError
    from rem.train import train

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        cfg = load_from_args(args)
        metrics = train(cfg, workdir=Path(args.workdir), repo_root=Path.cwd())
    except (ConfigError, DataSourceError, DeviceUnavailableError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items() if "/class_" not in k})
    return 0


def _ui(args: argparse.Namespace) -> int:
    from rem.tracking import tracking_uri

    uri = tracking_uri("", Path.cwd())
    print(f"MLflow UI for {uri} at http://127.0.0.1:{args.port}  (Ctrl-C to stop)")
    cmd = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", "127.0.0.1",
           "--port", str(args.port), "--workers", "1"]
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 0


def _pareto(args: argparse.Namespace) -> int:
    import pandas as pd

    from rem.config import ConfigError, load
    from rem.mlflow_results import SweepNotFoundError
    from rem.pareto import front_from_mlflow
    from rem.tracking import TrackingUnavailableError, tracking_uri

    try:
        cfg = load(args.params, {})
        uri = args.tracking_uri or tracking_uri(cfg.sweep.tracking_uri, Path.cwd())
        table = front_from_mlflow(uri, args.experiment or cfg.sweep.name, None if args.sweep == "all" else args.sweep)
    except (ConfigError, SweepNotFoundError, TrackingUnavailableError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 60):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"{len(table)} trials on the front -> {args.csv}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from rem.config import add_params_arguments

    parser = argparse.ArgumentParser(prog="rem", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_train = sub.add_parser("train", help="one trial, no Ray")
    add_params_arguments(p_train)
    p_train.add_argument("--workdir", default="results/local-trial", help="checkpoint folder (resumes if present)")
    for name in ("fetch", "sweep", "report", "collect"):
        sub.add_parser(name, help=f"the {name} stage", add_help=False)
    p_ui = sub.add_parser("ui", help="MLflow UI on 127.0.0.1 for the local store")
    p_ui.add_argument("--port", type=int, default=5000)
    p_pareto = sub.add_parser("pareto", help="the accuracy / entropy / sparsity front, from MLflow")
    p_pareto.add_argument("--params", default="params.yaml", help="experiment name and tracking URI")
    p_pareto.add_argument("--sweep", default="latest", help="a sweep id, latest, or all (every sweep of the experiment)")
    p_pareto.add_argument("--experiment", default="", help="MLflow experiment (default: params' sweep.name)")
    p_pareto.add_argument("--tracking-uri", default="", help="default: env MLFLOW_TRACKING_URI, params, ./mlflow.db")
    p_pareto.add_argument("--csv", default="reports/pareto.csv")
    args, rest = parser.parse_known_args(argv)
    if args.command == "train":
        return _train(args)
    if args.command == "ui":
        return _ui(args)
    if args.command == "pareto":
        return _pareto(args)
    module = {"fetch": "pipeline.fetch", "sweep": "pipeline.sweep", "report": "pipeline.report",
              "collect": "pipeline.collect"}[args.command]
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    return __import__(module, fromlist=["main"]).main(rest)


if __name__ == "__main__":
    sys.exit(main())
