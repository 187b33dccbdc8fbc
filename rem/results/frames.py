"""What every reader of the results table shares: finished trials labelled with their arm, last rows, a metric's
final value (`final/<metric>`, the evaluation the paper reports, else the last epoch's) and plot points."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rem.results.arms import Arm
from rem.results.variants import label_trials

FINAL = "final/"
POINT_COLUMNS = ["trial_key", "dataset", "model", "variant", "arm_rank", "seed", "epoch", "sparsity", "test_acc",
                 "entropy", "coupling_entropy", "arm_key", "arm"]


def finished_trials(results: pd.DataFrame) -> pd.DataFrame:
    """The finished trials' rows (a failed one is no evidence), labelled (`label_trials`), by trial and epoch."""
    return label_trials(results[results["status"] == "FINISHED"]).sort_values(["trial_key", "epoch"])


def fixed_budget(rows: pd.DataFrame) -> bool:
    """Whether the trials' patience could never act: none set, or none before the epoch cap (`train.min_epochs`)."""
    patience, cap = int(rows["train.patience"].max()), int(rows["train.epochs"].max())
    floor = int(rows["train.min_epochs"].max()) if "train.min_epochs" in rows else 0
    return patience == 0 or floor >= cap


def last_rows(results: pd.DataFrame) -> pd.DataFrame:
    """Each finished trial's last row, labelled, by trial: the row its final evaluation is on."""
    return finished_trials(results).groupby("trial_key").tail(1)


def arms(frame: pd.DataFrame) -> list[tuple[str, Arm]]:
    """(model, arm) pairs of a labelled frame in table order: models by name, then arms by their fields."""
    return sorted(set(zip(frame["model.name"].astype(str), frame["arm"])))


def arm_rows(frame: pd.DataFrame, model: str, arm: Arm) -> pd.DataFrame:
    """The rows of `model`'s `arm`, selected by its key (`arm_key`), never by its label."""
    return frame[(frame["model.name"].astype(str) == model) & (frame["arm_key"] == arm.key)]


def final_value(rows: pd.DataFrame, column: str) -> pd.Series:
    """`column` of each row from the final evaluation where it has one, else the epoch's own (NaN without either)."""
    epoch = rows[column] if column in rows.columns else pd.Series(np.nan, index=rows.index)
    final = rows.get(f"{FINAL}{column}")
    return epoch if final is None else final.where(final.notna(), epoch)


def with_final_values(rows: pd.DataFrame) -> pd.DataFrame:
    """A copy of `rows` whose every metric with a final evaluation holds `final_value`, so all come from one
    evaluation."""
    out = rows.copy()
    for column in rows.columns:
        if column.startswith(FINAL):
            out[column.removeprefix(FINAL)] = final_value(rows, column.removeprefix(FINAL))
    return out


def _points(rows: pd.DataFrame, test_acc: pd.Series, entropy, coupling) -> pd.DataFrame:
    """`rows` (labelled) as plot points: sparsity and accuracy in %, mean and coupling entropy in bits."""
    if rows.empty:
        return pd.DataFrame(columns=POINT_COLUMNS)
    return pd.DataFrame({
        "trial_key": rows["trial_key"], "dataset": rows["data.dataset"].astype(str),
        "model": rows["model.name"].astype(str), "variant": rows["variant"], "arm_rank": rows["arm_rank"],
        "seed": rows["train.seed"],
        "epoch": rows["epoch"].astype(int), "sparsity": rows["sparsity"] if "sparsity" in rows.columns else 0.0,
        "test_acc": 100 * test_acc, "entropy": entropy, "coupling_entropy": coupling, "arm_key": rows["arm_key"],
        "arm": rows["arm"],
    }).reset_index(drop=True)


def training_points(results: pd.DataFrame) -> pd.DataFrame:
    """One row per finished trial x epoch: that epoch's sparsity (%), test accuracy (%) and mean entropy (bits)."""
    done = finished_trials(results)
    return _points(done, done.get("test/acc", np.nan), done.get("entropy/mean", np.nan),
                   done.get("routing/coupling_entropy", np.nan))


def trial_points(results: pd.DataFrame) -> pd.DataFrame:
    """One row per finished trial, by trial: its final evaluation (accuracy, entropy) at its last epoch's sparsity."""
    last = last_rows(results)
    return _points(last, final_value(last, "test/acc"), final_value(last, "entropy/mean"),
                   final_value(last, "routing/coupling_entropy"))
