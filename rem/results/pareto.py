"""The sweep's trade-off front: trials no other trial of the same dataset and architecture beats on test accuracy
(higher), mean routing entropy (lower) and sparsity (higher); `rem pareto` and the report's figure both use `front`."""

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

