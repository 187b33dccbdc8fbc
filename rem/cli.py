"""The library's commands: one trial without Ray, the Pareto front of a sweep, and the MLflow UI on the local store.

    rem train [-S key=value ...]      one trial of params.yaml (no Ray), resumable from --workdir
    rem pareto [--sweep ID|latest]    trials no other beats on accuracy, entropy and sparsity, from MLflow
    rem ui [--port 5000] [--open]     MLflow's UI for the local store on 127.0.0.1, opened on the sweeps' runs table
    rem sparsity-curve SOURCE         a trained model (checkpoint or MLflow run id) pruned to 0-98 %, re-evaluated
    rem robustness SOURCE             a trained model's test metrics with the test images rotated, scaled, sheared, ...
    rem models [--dataset NAME]       every model's parameters and FLOPs per image on a dataset's inputs (Markdown)
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import pandas as pd

import rem.checks  # noqa: F401  every package's checks of params.yaml, registered before any is read
from rem.analysis.at_trial_end import AT_TRIAL_END
from rem.analysis.robustness.evaluation import robust_metrics
from rem.analysis.robustness.families import RobustnessError, check_family_names
from rem.analysis.sparsity_curve import CurveError, curve_metrics
from rem.config import Config, ConfigError, add_params_arguments, load_from_args
from rem.data import DataSourceError
from rem.data.registry import get_dataset, is_known_dataset, list_datasets
from rem.device import DeviceUnavailableError
from rem.io import UnsafeFileError
from rem.models import list_models
from rem.models.counts import counts_table, model_counts
from rem.report.analysis_files import write_curve, write_robustness
from rem.tracking.analysis_runs import log_analysis
from rem.tracking.model_sources import SourceError, load_source
from rem.tracking.model_store import ModelNotFoundError, ModelShapeError
from rem.tracking.package_analyses import curve_for_package, robustness_for_package
from rem.tracking.pareto import front_from_mlflow
from rem.tracking.results import SweepNotFoundError
from rem.tracking.runs import TrackingUnavailableError, tracking_uri
from rem.tracking.ui import serve
from rem.training.host_memory import keep_freed_memory
from rem.training.loop import train


class CommandError(Exception):
    """A mistake the user can fix (a missing input file, say): reported as one line, like a bad param."""


def exit_with(code: int) -> NoReturn:
    """Ends a command's process with exit status `code`, its objects frozen first (`gc.freeze`) so that the garbage
    collections Python runs as it shuts down skip them. With torch, MLflow, Ray and pandas loaded, those collections
    walk millions of objects that the process's end frees anyway: measured (issue 65), 0.3 s after the imports
    alone, 1.3-1.5 s at a sweep driver's end. atexit handlers (Ray's shutdown, logging's flush) still run. Only for
    the end of a process: a caller that goes on (a test calling `main`) would keep every object alive now out of all
    its later collections."""
    gc.freeze()
    sys.exit(code)


def run_with_params(command: Callable[[Config, argparse.Namespace], int], args: argparse.Namespace,
                    errors: tuple[type[Exception], ...] = ()) -> int:
    """`command(cfg, args)` on the params `add_params_arguments` reads (--params, -S). A refusal is one `error: ...`
    line on stderr and exit status 2, not a traceback: a `ConfigError` (a bad param, found as the params are read or
    later by the data or a registry: `data.val_size` larger than the train set), a `CommandError` or one of `errors`.
    Any other exception is a bug and keeps its traceback."""
    try:
        return command(load_from_args(args), args)
    except (ConfigError, CommandError, *errors) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _train(cfg: Config, args: argparse.Namespace) -> int:
    metrics = train(cfg, workdir=Path(args.workdir), repo_root=Path.cwd(), measurements=AT_TRIAL_END)
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items() if "/class_" not in k})
    return 0


def train_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    keep_freed_memory()  # the trial runs in this (main) thread: the allocator's settings reach its steps
    return run_with_params(_train, args, (DataSourceError, DeviceUnavailableError))


def _pareto(cfg: Config, args: argparse.Namespace) -> int:
    uri = args.tracking_uri or tracking_uri(cfg.sweep.tracking_uri, Path.cwd())
    table = front_from_mlflow(uri, args.experiment or cfg.sweep.name, None if args.sweep == "all" else args.sweep)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.csv, index=False)
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 60):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"{len(table)} trials on the front -> {args.csv}")
    return 0


def pareto_command(args: argparse.Namespace) -> int:
    return run_with_params(_pareto, args, (SweepNotFoundError, TrackingUnavailableError))


def ui_command(args: argparse.Namespace) -> int:
    return serve(tracking_uri("", Path.cwd()), args.port, open_browser=args.open)


def _sparsity_curve(cfg: Config, args: argparse.Namespace) -> int:
    package, source, run_id = load_source(args.source, args.tracking_uri or None)
    frame = curve_for_package(package, source, Path.cwd(), test_images=args.images, sparsities=args.sparsities)
    written = write_curve(frame, Path(args.out), source)
    log_analysis(written, "sparsity_curve", curve_metrics(frame), int(frame["epoch"].iloc[0]), run_id,
                 args.tracking_uri or None)
    shown = frame[["scope", "target", "sparsity", "test/acc", "entropy/mean", "parse_trees/total",
                   *(c for c in ("routing/coupling_entropy", "routing/dead_capsules") if c in frame)]]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"sparsity-curve: {len(frame)} points -> {', '.join(str(p) for p in written)}")
    return 0


# What reading a trained model (`load_source`) and its test split may raise: one line each.
MODEL_SOURCE_ERRORS = (SourceError, CurveError, ModelNotFoundError, ModelShapeError, UnsafeFileError, DataSourceError)


def sparsity_curve_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING)
    return run_with_params(_sparsity_curve, args, MODEL_SOURCE_ERRORS)


def _robustness(cfg: Config, args: argparse.Namespace) -> int:
    check_family_names(args.families or [], "--families")  # a bad name fails before anything is loaded
    package, source, run_id = load_source(args.source, args.tracking_uri or None)
    frame = robustness_for_package(package, source, Path.cwd(), test_images=args.images, families=args.families)
    written = write_robustness(frame, Path(args.out), source)
    log_analysis(written, "robustness", robust_metrics(frame), int(frame["epoch"].iloc[0]), run_id,
                 args.tracking_uri or None)
    shown = frame[["family", "strength", "test/acc", "test/loss", *(c for c in ("entropy/mean",) if c in frame)]]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"robustness: {len(frame)} points -> {', '.join(str(p) for p in written)}")
    return 0


def robustness_command(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING)
    return run_with_params(_robustness, args, (RobustnessError, *MODEL_SOURCE_ERRORS))


def models_command(args: argparse.Namespace) -> int:
    spec = get_dataset(args.dataset) if is_known_dataset(args.dataset) else None
    if spec is None or min(spec.in_shape) < 1:  # an image folder's shape is known only once its images are read
        print(f"error: models: --dataset must be one of {', '.join(list_datasets())}; got {args.dataset!r}",
              file=sys.stderr)
        return 2
    print(f"{args.dataset}: {'x'.join(map(str, spec.in_shape))} inputs, {spec.num_classes} classes; FLOPs per image = "
          f"2 x the multiply-adds of convolutions and matrix products (rem.models.counts)\n")
    print(counts_table(model_counts(list_models(), spec.in_shape, spec.num_classes)))
    return 0


def add_source_arguments(parser, out: str) -> None:
    """The arguments of a command that re-evaluates one trained model: what it reads, how much, where it writes."""
    add_params_arguments(parser)
    parser.add_argument("source",
                        help="a trial's checkpoint (folder or state.pt), a model package (.pt) or an MLflow run id")
    parser.add_argument("--images", type=int, default=0,
                        help="the first N test images (default 0: the whole test split)")
    parser.add_argument("--out", default=out, help="folder for the Parquet, CSV and figure")
    parser.add_argument("--tracking-uri", default="", help="default: env MLFLOW_TRACKING_URI, else ./mlflow.db")


def add_commands(sub) -> None:
    """The library's commands on an argparse sub-parser set; each parser's `run` default runs its command."""
    p_train = sub.add_parser("train", help="one trial, no Ray")
    add_params_arguments(p_train)
    p_train.add_argument("--workdir", default="results/local-trial", help="checkpoint folder (resumes if present)")
    p_train.set_defaults(run=train_command)
    p_pareto = sub.add_parser("pareto", help="the accuracy / entropy / sparsity front, from MLflow")
    add_params_arguments(p_pareto)
    p_pareto.add_argument("--sweep", default="latest",
                          help="a sweep id, latest, or all (every sweep of the experiment)")
    p_pareto.add_argument("--experiment", default="", help="MLflow experiment (default: params' sweep.name)")
    p_pareto.add_argument("--tracking-uri", default="", help="default: env MLFLOW_TRACKING_URI, params, ./mlflow.db")
    p_pareto.add_argument("--csv", default="reports/pareto.csv")
    p_pareto.set_defaults(run=pareto_command)
    p_curve = sub.add_parser("sparsity-curve",
                             help="a trained model pruned to 0-98 %% and re-evaluated (no retraining)")
    add_source_arguments(p_curve, "reports/sparsity_curve")
    p_curve.add_argument("--sparsities", type=float, nargs="+", default=[0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 0.98])
    p_curve.set_defaults(run=sparsity_curve_command)
    p_robust = sub.add_parser("robustness", help="a trained model's test metrics under rotation, scale, shear, ...")
    add_source_arguments(p_robust, "reports/robustness")
    p_robust.add_argument("--families", nargs="+", default=None, metavar="FAMILY",
                          help="these families only, at the strengths and seed the model's own config "
                               "(eval.robust_*) records")
    p_robust.set_defaults(run=robustness_command)
    p_models = sub.add_parser("models", help="every model's parameters and FLOPs per image (Markdown table)")
    p_models.add_argument("--dataset", default="fashion-mnist",
                          help="whose input shape and classes (default fashion-mnist)")
    p_models.set_defaults(run=models_command)
    p_ui = sub.add_parser("ui", help="MLflow UI on 127.0.0.1 for the local store")
    p_ui.add_argument("--port", type=int, default=5000)
    p_ui.add_argument("--open", action="store_true", help="open the runs view in the default browser")
    p_ui.set_defaults(run=ui_command)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rem", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    exit_with(main())
