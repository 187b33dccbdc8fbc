"""Register the trial a sweep's trade-off picks, and alias it, in MLflow's model registry.

    rem register --name NAME --rule RULE [--alias champion] [--sweep ID|latest] [--experiment NAME]
                 [--dataset NAME] [--model NAME] [--params params.yaml] [-S key=value ...]

RULE is `<objective> [--max-acc-drop POINTS]`, objective min-entropy, max-acc or max-sparsity: e.g.
`min-entropy --max-acc-drop 1` picks the lowest mean entropy among the trials that lose at most 1 point of test
accuracy against the best unpruned (+Q) trial, on the sweep's Pareto front (`rem.tracking.trade_off`). The tracking
store is the params' (env MLFLOW_TRACKING_URI, else sweep.tracking_uri, else ./mlflow.db), the experiment their
sweep.name. Then: `mlflow models serve -m models:/NAME@champion --env-manager local`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from rem.cli import MODEL_SOURCE_ERRORS, exit_with, run_with_params
from rem.config import Config, add_params_arguments
from rem.report.preconditions import classes_of, routing_uniform
from rem.tracking import runs as tracking
from rem.tracking.model_registry import register_trial
from rem.tracking.pareto import points_from_mlflow
from rem.tracking.results import SweepNotFoundError, experiment_id, open_store, resolve_sweep
from rem.tracking.trade_off import RuleError, choose, one_group, parse_rule


def choice_tags(rule: str, sweep: str, trial: pd.Series) -> dict[str, str]:
    """What the registered version records about why it was chosen."""
    return {"rem.rule": rule, tracking.SWEEP_TAG: sweep, tracking.TRIAL_TAG: str(trial["trial_key"]),
            "rem.variant": str(trial["variant"]), "rem.test_acc": f"{trial['test_acc']:.2f}",
            "rem.entropy": f"{trial['entropy']:.4f}", "rem.sparsity": f"{trial['sparsity']:.2f}"}


def describe(trial: pd.Series) -> str:
    return (f"{trial['model']} on {trial['dataset']}, {trial['variant']} seed {trial['seed']}: test accuracy "
            f"{trial['test_acc']:.2f} %, entropy {trial['entropy']:.4f} bits, sparsity {trial['sparsity']:.1f} %")


def routing_warning(client: MlflowClient, trial: pd.Series) -> str:
    """A line saying the chosen trial's routing never left uniform (`rem.report.preconditions`): its low entropy is
    then no routing, not the trade-off a user asked for; '' when it routed, or did not measure its couplings."""
    coupling = client.get_run(str(trial["run_id"])).data.metrics.get("final/routing/coupling_entropy")
    if coupling is None:
        return ""
    reason = routing_uniform(f"{trial['model']} {trial['variant']} seed {trial['seed']}", [coupling],
                             classes_of(str(trial["dataset"])), "final")
    return (f"warning: {reason}: its entropy of {trial['entropy']:.4f} bits is no routing, not a trade-off"
            if reason else "")


def register(cfg: Config, args: argparse.Namespace) -> int:
    rule = parse_rule(args.rule)  # a bad rule fails before the store is read
    # registering a run logged before MLflow Models downloads its package: one line of output, not progress bars
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    uri = tracking.tracking_uri(cfg.sweep.tracking_uri, Path.cwd())
    tracking.check_reachable(uri)
    experiment = args.experiment or cfg.sweep.name
    client = open_store(uri, experiment)
    sweep = resolve_sweep(client, experiment_id(client, experiment), args.sweep)  # its id: the version records it
    trial = choose(one_group(points_from_mlflow(uri, experiment, sweep), args.dataset, args.model), rule)
    version = register_trial(client, trial["run_id"], args.name, args.alias, choice_tags(args.rule, sweep, trial),
                             f"{describe(trial)}; chosen by `{args.rule}` from sweep {sweep}")
    print(f"{args.name} version {version.version} (@{args.alias}) <- run {trial['run_id']}: {describe(trial)}")
    if warning := routing_warning(client, trial):
        print(warning, file=sys.stderr)
    print(f"serve it: mlflow models serve -m models:/{args.name}@{args.alias} --env-manager local")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rem register", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_params_arguments(parser)
    parser.add_argument("--name", required=True, help="registered model name")
    parser.add_argument("--rule", required=True, help='e.g. "min-entropy --max-acc-drop 1"')
    parser.add_argument("--alias", default="champion")
    parser.add_argument("--sweep", default="latest", help="a sweep id, or latest (the newest sweep of the experiment)")
    parser.add_argument("--experiment", default="", help="MLflow experiment (default: params' sweep.name)")
    parser.add_argument("--dataset", default="", help="which dataset's trials, when the sweep has several")
    parser.add_argument("--model", default="", help="which architecture's trials, when the sweep has several")
    errors = (RuleError, SweepNotFoundError, tracking.TrackingUnavailableError, MlflowException, *MODEL_SOURCE_ERRORS)
    return run_with_params(register, parser.parse_args(argv), errors)


if __name__ == "__main__":
    exit_with(main())
