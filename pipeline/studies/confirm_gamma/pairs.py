"""The confirmatory study's pairs: every seed with both arms' final values, whether the committed rule counts it, and
the house's standing preconditions read over the counted pairs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rem.report.arm_seeds import routing_dependence, trees_per_image
from rem.report.preconditions import (
    CEILING_TREES_PER_IMAGE,
    chance_accuracy,
    classes_of,
    did_not_learn,
    first,
    input_independent,
    routing_uniform,
)
from rem.report.routing_measures import ceiling_bits
from rem.report.sequential import Design, design_of
from rem.results.frames import final_value, last_rows

ARM_LABELS = {"none": "+Q", "rem": "+REM"}
# Secondary measures: (results column, label, digits); each a paired one-sided claim in the design's direction
SECONDARY = (("entropy/k5_mean", "REM's entropy with K = 5 keys (edges at 0.125, 0.375, ...)", 3),
             ("entropy/k7_mean", "REM's entropy with K = 7 keys (edges at 0.083, 0.25, ...)", 3),
             ("collisions/entropy_bits", "Within-class collision entropy (-log2 of the share of same-class pairs "
                                         "sharing a tree)", 3))
# Shown beside them, with no claim: (column, label, scale, digits)
DESCRIPTIVE = (("parse_trees/near_edge", "Keyed couplings within 0.01 of a K = 6 edge (%)", 100.0, 2),
               ("routing/input_dependence_within_class", "Input dependence within a class (bits)", 1.0, 4),
               ("routing/input_dependence", "Input dependence over all images (bits)", 1.0, 4),
               ("parse_trees/total", "Distinct parse trees (of 10,000 test images)", 1.0, 0),
               ("test/acc", "Test accuracy (%)", 100.0, 2))


@dataclass(frozen=True)
class Pairs:
    """The study's pairs: every seed with both arms (`table`: one row per seed, both arms' final values and whether
    the pair counts), and the design they are read by."""
    design: Design
    table: pd.DataFrame  # index seed; columns "<arm>/<metric>", "counts", "why"

    @property
    def counted(self) -> pd.DataFrame:
        """The pairs the committed rule reads, in seed order (a failed pair's place taken by the next seed)."""
        return self.table[self.table["counts"]].sort_index()

    def values(self, arm: str, column: str) -> np.ndarray:
        return self.counted[f"{arm}/{column}"].to_numpy(dtype=np.float64)


def arm_finals(last: pd.DataFrame, method: str) -> pd.DataFrame:
    """One arm's finished trials by seed: every final metric the page reads."""
    mine = last[last["prune.method"].astype(str) == method].set_index("train.seed")
    columns = ["entropy/mean", "test/acc", "sparsity", *(c for c, _, _ in SECONDARY), *(c for c, *_ in DESCRIPTIVE),
               "routing/coupling_entropy", "checkpoint_epoch"]
    out = pd.DataFrame({c: final_value(mine, c) for c in dict.fromkeys(columns)}, index=mine.index)
    out["epoch"] = mine["epoch"]
    out["trees_per_image"] = trees_per_image(mine)
    out["ceiling"] = ceiling_bits(mine).to_numpy()
    out["dependence"] = routing_dependence(mine)
    return out


def pairs_of(results: pd.DataFrame) -> Pairs:
    """Every seed whose two arms both finished, with the committed rule's reading of each (`FAILED_PAIR_RULE`)."""
    design = design_of(results)
    last = last_rows(results)
    arms = {m: arm_finals(last, m) for m in (design.reference, design.treatment)}
    seeds = sorted(set(arms[design.reference].index) & set(arms[design.treatment].index))
    table = pd.concat({m: frame.loc[seeds] for m, frame in arms.items()}, axis=1)
    table.columns = [f"{m}/{c}" for m, c in table.columns]
    chance = chance_accuracy(str(results["data.dataset"].iloc[0]))
    why = [first(*(did_not_learn(f"{label(m)} s{seed}", [100 * table.loc[seed, f"{m}/test/acc"]], chance)
                   for m in arms)) or "" for seed in seeds]
    table["why"], table["counts"] = why, [not w for w in why]
    return Pairs(design, table)


def not_tested(pairs: Pairs, dataset: str) -> str | None:
    """The house's standing preconditions on the reference arm, over the counted pairs (rem.report.preconditions):
    its routing leaves uniform and depends on the image within a class, and its trees sit below the ceiling."""
    ref, rows = pairs.design.reference, pairs.counted
    if rows.empty:
        return None
    name = f"γ-CapsNet {label(ref)}"
    trees = rows[f"{ref}/trees_per_image"]
    ceiling = (f"at ceiling: {name} has {trees.max():.3f} distinct parse trees per test image in a pair"
               if trees.max() >= CEILING_TREES_PER_IMAGE else None)
    return first(routing_uniform(name, rows[f"{ref}/routing/coupling_entropy"], classes_of(dataset), "+Q"),
                 input_independent(name, rows[f"{ref}/dependence"]), ceiling)


def label(arm: str) -> str:
    """How the page names an arm by its pruning method (+Q, +REM)."""
    return ARM_LABELS.get(arm, arm)

