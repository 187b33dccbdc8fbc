"""Equivariance tested directly: per arm and transform, the held-out error of the linear map from a representation of
x (capsule poses, or a CNN's hidden layer as wide) to that of g·x, and whether capsule poses are more predictable.
"""

from __future__ import annotations

import pandas as pd

from rem.analysis.equivariance import FOLDS, MIN_FIT_IMAGES, equivariance_from_results
from rem.analysis.forwards import PLAIN
from rem.analysis.robustness.families import PER_IMAGE
from rem.report.arm_seeds import QUANTIZED, evaluation_note
from rem.report.preconditions import no_better_than_null
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.robustness import (
    KEEP,
    arm_spread,
    arm_trials,
    arms,
    baseline_arms,
    capsule_arms,
    per_trial,
    shown_headline,
    with_plain_forward,
)
from rem.report.spread import Spread
from rem.report.verdicts import Differs, judged
from rem.results.arms import PLAIN_ARM, PLUS_Q, Arm
from rem.results.frames import arm_rows, last_rows
from rem.results.variants import routed

PLAIN_ERROR = f"{PLAIN}/error"
CLAIM = "Capsule poses transform more predictably than a CNN's features of the same width (held-out linear map)"


def equivariance_points(results: pd.DataFrame) -> pd.DataFrame:
    """Every finished trial's equivariance points in long form, with `plain/error` where there is a plain forward."""
    return with_plain_forward(equivariance_from_results(last_rows(results), keep=KEEP))


def arm_error(points: pd.DataFrame, model: str, arm: Arm, family: str, strengths, metric: str) -> Spread:
    return arm_spread(per_trial(points, family, strengths, metric), points, model, arm, 1.0)


def error_cell(points: pd.DataFrame, model: str, arm: Arm, family: str, strengths) -> str:
    """The plain forward's error, with +Q's in brackets where the final forward was +Q."""
    plain = arm_error(points, model, arm, family, strengths, PLAIN_ERROR)
    final = arm_error(points, model, arm, family, strengths, "error")
    if not plain.n:
        return f"{final.text(3)} (+Q)" if final.n else "–"
    return plain.text(3) + (f" (+Q {final.text(3)})" if routed(model) and final.n else "")


def null_recorded(points: pd.DataFrame) -> bool:
    """Whether these trials fitted their maps by cross-validation beside a shuffled-pair null (`null_error`)."""
    return "null_error" in points and points["null_error"].notna().any()


def null_cell(points: pd.DataFrame, model: str, arm: Arm, family: str, strengths) -> str:
    """The shuffled-pair null of the forward `error_cell` leads with."""
    plain = arm_error(points, model, arm, family, strengths, f"{PLAIN}/null_error")
    return (plain if plain.n else arm_error(points, model, arm, family, strengths, "null_error")).text(3)


def method_note(points: pd.DataFrame, images: int) -> str:
    if null_recorded(points):
        return (f"a linear map with bias Q ≈ P·W + b, its ridge chosen by cross-validation inside the fitting images, "
                f"scored by {FOLDS}-fold cross-validation (each fold predicted by the map fitted on the other "
                f"{FOLDS - 1}, at least {MIN_FIT_IMAGES:,} images): its pooled relative squared error (0: the "
                "representation moves linearly; 1: the map explains nothing of how it moves). Null: the same fit on "
                "shuffled pairs (each f(x) against another image's f(g·x)); an error is read against its null")
    return (f"a linear map with bias Q ≈ P·W + b fitted by least squares (ridge 1e-6) on half of the {images} images, "
            "its relative squared error on the other half (0: the representation moves linearly; 1: the map "
            "explains nothing of how it moves). These trials predate the cross-validated fit and its shuffled-pair "
            f"null: with {images // 2} fitting images for 161 numbers per output the map overfits, so part of each "
            "error is the overfit's, and no null was recorded to read them against")


def equivariance_table(points: pd.DataFrame, dataset: str) -> Table:
    points = points[points["data.dataset"].astype(str) == dataset]
    headline, nulls = shown_headline(points, "error"), null_recorded(points)
    rows = []
    for model, arm in arms(points):
        mine = arm_rows(points, model, arm)
        rows.append([model, arm.label, str(mine["train.seed"].nunique()), str(int(mine["width"].max())),
                     *(cell for f, s, _ in headline for cell in (
                         (error_cell(points, model, arm, f, s), null_cell(points, model, arm, f, s)) if nulls
                         else (error_cell(points, model, arm, f, s),)))])
    images = int(points["images"].max()) if not points.empty else 0
    return Table(f"{dataset}: equivariance tested directly", ["Model", "Variant", "Seeds", "Width",
                 *(column for _, _, label in headline for column in (
                     (f"{label} error", f"{label} null") if nulls else (f"{label} error",)))], rows, notes=[
        f"For each trial's final model on its first {images} test images: P = f(x) and Q = f(g·x), f the class "
        "capsules' poses (a CNN: its last hidden layer, the same width as CapsNet's 10 x 16); "
        f"{method_note(points, images)}. ±30° averages -30° and +30° per trial; mean ± std over seeds. Capsule "
        "models: the plain forward (the routing as trained), +Q in brackets.",
        f"{', '.join(PER_IMAGE)}: a different map per image, so no single linear map exists; its column says how "
        "predictable the transformed representation is from the original, and no claim reads it."])


def null_check(points: pd.DataFrame, model: str, arm: Arm, family: str, strengths, metric: str,
               label: str) -> str | None:
    """`no_better_than_null` on an arm's seeds, where they recorded a null."""
    null = metric.replace("error", "null_error")
    if null not in points:
        return None
    keys = arm_trials(points, model, arm)
    errors, nulls = (per_trial(points, family, strengths, m).reindex(keys) for m in (metric, null))
    return no_better_than_null(f"{model} {arm.label}", list(errors), list(nulls), label)


def equivariance_rows(points: pd.DataFrame, seeds: dict) -> list[list[str]]:
    """The claim per unpruned capsule arm, CNN and headline transform."""
    rows = []
    for model in capsule_arms(points):
        for cnn in baseline_arms(points):
            for family, strengths, label in [h for h in shown_headline(points, "error") if h[0] not in PER_IMAGE]:
                caps = arm_error(points, model, PLUS_Q, family, strengths, PLAIN_ERROR)
                read, forward = (caps, PLAIN) if caps.n else \
                    (arm_error(points, model, PLUS_Q, family, strengths, "error"), QUANTIZED)
                base = arm_error(points, cnn, PLAIN_ARM, family, strengths, PLAIN_ERROR)
                if read.n and base.n:
                    dataset = str(points["data.dataset"].iloc[0])
                    mine, theirs = seeds[(dataset, model, PLUS_Q)], seeds[(dataset, cnn, PLAIN_ARM)]
                    metric = PLAIN_ERROR if forward == PLAIN else "error"
                    rows.append([f"{model} {PLUS_Q.label} vs {cnn}", f"{CLAIM}: {label}", forward,
                                 f"held-out error {read.text(3)} vs {base.text(3)}{evaluation_note(mine, theirs)}",
                                 *judged(Differs(-1), base, read, 3, mine.not_learned(), theirs.not_learned(),
                                         null_check(points, model, PLUS_Q, family, strengths, metric, label))])
    return rows


@report_table("equivariance", "Equivariance tested directly",
              per="data.dataset", file="equivariance_{group}")
def equivariance_section(frame: pd.DataFrame, context: Context, dataset: str) -> Table | None:
    points = context.once(equivariance_points)
    if points.empty or not (points["data.dataset"].astype(str) == dataset).any():
        return None
    return equivariance_table(points, dataset)
