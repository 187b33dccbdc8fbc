"""`rem pareto`: the trade-off front of the trials an MLflow store holds, with each one's run id to open, load or
register it."""

from __future__ import annotations

import pandas as pd

from rem.results.frames import trial_points
from rem.results.pareto import front
from rem.tracking.results import results_from_mlflow

TABLE_COLUMNS = ["dataset", "model", "variant", "seed", "test_acc", "entropy", "sparsity", "run_id", "trial_key"]


def points_from_mlflow(uri: str, experiment: str, sweep: str | None) -> pd.DataFrame:
    """The finished trials of one sweep (or, with None, of every sweep) as `trial_points`, each with its `run_id` and
    whether it was `pruned`."""
    table = results_from_mlflow(uri, experiment, sweep, history=False)
    if sweep is None:  # trials of several sweeps: a grid point's key repeats in each
        table["trial_key"] = table["sweep_id"] + "/" + table["trial_key"]
    points = trial_points(table)
    per_trial = table.drop_duplicates("trial_key").set_index("trial_key")
    points["run_id"] = points["trial_key"].map(per_trial["run_id"])
    points["pruned"] = points["trial_key"].map(per_trial["prune.method"].astype(str) != "none")
    return points


def front_from_mlflow(uri: str, experiment: str, sweep: str | None) -> pd.DataFrame:
    """The front of the finished trials MLflow holds (one sweep, or every sweep of the experiment), with run ids."""
    return front(points_from_mlflow(uri, experiment, sweep))[TABLE_COLUMNS]
