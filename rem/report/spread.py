"""An arm's values over its seeds as every published page prints and tests them: mean, sample std (ddof 1) and the
per-seed values."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rem.results.arms import Arm
from rem.results.frames import arm_rows, arms, final_value, last_rows

# results column -> (label, scale, digits). Per-epoch values; a trial's last row also has `final/<column>`.
METRICS = {
    "test/acc": ("Test acc. (%)", 100.0, 2),
    "entropy/mean": ("Entropy (bits)", 1.0, 3),
    "entropy/std": ("REM's ± (entropy std over classes)", 1.0, 3),
    "parse_trees/total": ("Parse trees", 1.0, 0),
    "sparsity": ("Sparsity (%)", 1.0, 2),
    "sparsity/votes.weight": ("W sparsity (%)", 1.0, 2),
    "sparsity/primary.conv.weight": ("Primary conv sparsity (%)", 1.0, 2),
    "routing/dead_capsules": ("Dead capsules (%)", 100.0, 1),
    "routing/coupling_entropy": ("Coupling entropy (bits)", 1.0, 4),
}


@dataclass(frozen=True)
class Spread:
    mean: float
    std: float
    n: int

    values: tuple[float, ...] = ()  # per seed (scaled), for the verdicts' tests

    def text(self, digits: int) -> str:
        if math.isnan(self.mean):
            return "–"
        return f"{self.mean:.{digits}f}" if self.n < 2 else f"{self.mean:.{digits}f} ± {self.std:.{digits}f}"


def spread(values, scale: float = 1.0) -> Spread:
    v = np.asarray(pd.to_numeric(pd.Series(values), errors="coerce").dropna(), dtype=np.float64) * scale
    std = float(v.std(ddof=1)) if len(v) > 1 else math.nan  # the sample std: what the verdicts' tests use too
    return Spread(float(v.mean()), std, len(v), tuple(float(x) for x in v)) if len(v) else \
        Spread(math.nan, math.nan, 0)


def final_spreads(results: pd.DataFrame) -> dict[tuple[str, Arm], dict[str, Spread]]:
    """Per (model, arm): each metric's final value over seeds."""
    last = last_rows(results)
    return {(m, v): {c: spread(final_value(arm_rows(last, m, v), c), scale) for c, (_, scale, _) in METRICS.items()}
            for m, v in arms(last)}


def model_arms(frame: pd.DataFrame, model: str) -> list[Arm]:
    """`model`'s arms in the frame, in their order."""
    return [arm for m, arm in arms(frame) if m == model]
