"""The sweep's trade-off front: trials no other trial of the same dataset and architecture beats on test
accuracy (higher), mean routing entropy (lower) and sparsity (higher).

`front(points)` is the one definition: `rem pareto` applies it to the trials read from MLflow, the report's
Pareto figure to the trials of the results table (`rem.report.figures.sweep_plots.trial_points` gives both).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# column -> maximised?
OBJECTIVES = {"test_acc": True, "entropy": False, "sparsity": True}
GROUPS = ["dataset", "model"]


def non_dominated(values: np.ndarray, maximize: list[bool]) -> np.ndarray:
    """Rows of `values` (n, k) that no other row beats: at least as good in every column, better in one."""
    signed = np.asarray(values, dtype=np.float64) * np.where(maximize, 1.0, -1.0)
    keep = np.ones(len(signed), dtype=bool)
    for i in range(len(signed)):
        at_least = (signed >= signed[i]).all(axis=1)
        better = (signed > signed[i]).any(axis=1)
        keep[i] = not (at_least & better).any()
    return keep


def front(points: pd.DataFrame, objectives: dict[str, bool] = OBJECTIVES) -> pd.DataFrame:
    """The non-dominated rows of `points` per dataset and architecture (rows missing an objective are out),
    sorted by dataset, model, then accuracy (best first)."""
    columns = list(objectives)
    kept = []
    for _, group in points.dropna(subset=columns).groupby(GROUPS, sort=True):
        kept.append(group[non_dominated(group[columns].to_numpy(), list(objectives.values()))])
    if not kept:
        return points.iloc[0:0]
    return pd.concat(kept).sort_values([*GROUPS, "test_acc"], ascending=[True, True, False], ignore_index=True)


TABLE_COLUMNS = ["dataset", "model", "variant", "seed", "test_acc", "entropy", "sparsity", "run_id", "trial_key"]


def front_from_mlflow(uri: str, experiment: str, sweep: str | None) -> pd.DataFrame:
    """The front of the finished trials MLflow holds (one sweep, or every sweep of the experiment), with run ids."""
    from rem.report.figures.sweep_plots import trial_points
    from rem.tracking.results import results_from_mlflow

    table = results_from_mlflow(uri, experiment, sweep, history=False)
    if sweep is None:  # trials of several sweeps: a grid point's key repeats in each
        table["trial_key"] = table["sweep_id"] + "/" + table["trial_key"]
    points = trial_points(table)
    points["run_id"] = points["trial_key"].map(dict(zip(table["trial_key"], table["run_id"])))
    return front(points)[TABLE_COLUMNS]
