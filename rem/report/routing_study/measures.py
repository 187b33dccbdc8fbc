"""What the routing-regime study reads from the results table, per trial and epoch: images seen so far, and the class
layer's routing (coupling entropy, vote-output agreement after the last routing iteration) beside accuracy and REM's
parse-tree measures. One frame (`curves`) that the tables and the figure share."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from rem.report.preconditions import ROUTING_MARGIN_BITS, classes_of
from rem.results.frames import finished_trials

ITERATION = re.compile(r"^routing/iter(?P<t>[0-9]+)/agreement$")
# curve column -> (results column, scale, label, digits)
MEASURES = {
    "coupling_entropy": ("routing/coupling_entropy", 1.0, "Coupling entropy (bits)", 4),
    "agreement": ("", 1.0, "Vote-output agreement", 3),  # the last routing iteration's (`last_agreement`)
    "parse_tree_entropy": ("entropy/mean", 1.0, "Parse-tree entropy (bits)", 3),
    "parse_trees": ("parse_trees/total", 1.0, "Parse trees", 0),
    "accuracy": ("test/acc", 100.0, "Test acc. (%)", 2),
}


def last_agreement(rows: pd.DataFrame) -> pd.Series:
    """Each row's agreement after the highest routing iteration it recorded (NaN where none was: no iteration
    curves, or a model without routing)."""
    found = sorted((int(m["t"]), c) for c in rows.columns if (m := ITERATION.match(c)))
    out = pd.Series(np.nan, index=rows.index)
    for _, column in found:
        out = rows[column].where(rows[column].notna(), out)
    return out


def curves(results: pd.DataFrame) -> pd.DataFrame:
    """One row per finished trial and epoch: model, arm, variant, seed, epoch, images seen by the end of the epoch,
    and every `MEASURES` column."""
    done = finished_trials(results).sort_values(["trial_key", "epoch"])
    out = done[["trial_key", "data.dataset", "model.name", "arm", "variant", "train.seed", "epoch"]].copy()
    out["images"] = done.groupby("trial_key")["train/images"].cumsum().astype(np.int64)
    for name, (column, scale, _, _) in MEASURES.items():
        values = last_agreement(done) if name == "agreement" else done.get(column, pd.Series(np.nan, index=done.index))
        out[name] = pd.to_numeric(values, errors="coerce") * scale
    return out.reset_index(drop=True)


def routing_threshold(dataset: str) -> float:
    """The coupling entropy below which a seed counts as routing: uniform over the classes minus the margin the
    verdicts' routing precondition uses (rem.report.preconditions), so the study and the verdicts agree."""
    return math.log2(classes_of(dataset)) - ROUTING_MARGIN_BITS


def onset(arm_curves: pd.DataFrame) -> tuple[int | None, int | None]:
    """(epoch, images seen) of the first epoch at which every seed of the arm routes (coupling entropy below the
    threshold), or (None, None) if none did."""
    threshold = routing_threshold(str(arm_curves["data.dataset"].iloc[0]))
    seeds = arm_curves["train.seed"].nunique()
    for epoch, group in arm_curves.groupby("epoch"):
        values = group["coupling_entropy"].dropna()
        if len(values) == seeds and bool((values < threshold).all()):
            return int(epoch), int(group["images"].max())
    return None, None
