"""`rem pareto`: the trade-off front (`rem.results.pareto.front`) of the trials an MLflow store holds, with the run
id of each, so a trial on the front can be opened in the UI, its model loaded from the store or registered
(`rem register`, `rem.tracking.trade_off`)."""

from __future__ import annotations

import pandas as pd

from rem.results.frames import trial_points
from rem.results.pareto import front
from rem.tracking.results import results_from_mlflow

TABLE_COLUMNS = ["dataset", "model", "variant", "seed", "test_acc", "entropy", "sparsity", "run_id", "trial_key"]


def points_from_mlflow(uri: str, experiment: str, sweep: str | None) -> pd.DataFrame:
    """The finished trials MLflow holds (one sweep, or every sweep of the experiment) as points
    (`rem.results.frames.trial_points`), each with its run id and whether it was pruned (`pruned`)."""
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
