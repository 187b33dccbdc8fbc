"""A report table of one's own, registered from outside `rem/` (docs/extending.md): per arm, how many trials the
sweep ran, how many finished, and their mean seconds per epoch. The report stage finds it through
REM_PLUGINS=tests.extending.toy_table and shows it after the built-in tables. Its option, `decimals`, is set in
params.yaml as `report.options: {trials-per-arm: {decimals: 2}}`."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rem.report.registry import REPORT_PAGE, report_table
from rem.report.render import Table

ARM = ["data.dataset", "model.name", "arm_rank", "variant"]  # arm_rank: the arms in the order every table lists them


@dataclass(frozen=True)
class TrialsPerArmOptions:
    decimals: int = 1  # of the mean seconds per epoch

    def __post_init__(self):
        if not 0 <= self.decimals <= 6:  # its type is read against the annotation: only the range is its own
            raise ValueError(f"decimals must be a whole number in 0..6; got {self.decimals!r}")


@report_table("trials-per-arm", "Trials per arm", pages=[REPORT_PAGE], options=TrialsPerArmOptions)
def trials_per_arm(frame: pd.DataFrame, context) -> Table | None:
    """`frame`: the results labelled with each trial's arm; None (no section) when it holds no trial."""
    if frame.empty:
        return None
    decimals = context.options_of("trials-per-arm").decimals
    last = frame.sort_values("epoch").groupby("trial_key").tail(1)
    rows = []
    for (dataset, model, _, variant), trials in last.groupby(ARM, sort=True):
        epochs = frame[frame["trial_key"].isin(trials["trial_key"])]
        seconds = epochs["time/epoch_s"].mean() if "time/epoch_s" in epochs else float("nan")
        rows.append([dataset, model, variant, str(len(trials)), str(int((trials["status"] == "FINISHED").sum())),
                     "-" if pd.isna(seconds) else f"{seconds:.{decimals}f}"])
    return Table("Trials per arm", ["Dataset", "Model", "Variant", "Trials", "Finished", "Mean epoch (s)"], rows,
                 notes=["Every trial of the results table, finished or not; seconds over all its epochs."])
