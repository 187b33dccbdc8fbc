"""Two tables every page that judges REM shows beside its verdicts: REM's entropy beside its ceiling (every image its
own tree), and whether the couplings depend on the image. Runs made before a measure show "not recorded"."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rem.evaluate import ENTROPY_IMAGES_PER_CLASS, SECONDARY_LEVELS
from rem.parse_trees import collision_entropy_bound, describe_collision_entropy, worst_counts
from rem.report.arm_seeds import trees_per_image
from rem.report.preconditions import CEILING_TREES_PER_IMAGE, DEPENDENCE_MARGIN_BITS, classes_of
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.spread import spread
from rem.results.frames import arm_rows, arms, final_value, last_rows
from rem.results.variants import routed

NOT_RECORDED = "not recorded"
SAMPLE_SD = "Mean ± sample std (ddof 1) over seeds."


def recorded(rows: pd.DataFrame, column: str, digits: int) -> str:
    """The final value's mean ± std over seeds, or NOT_RECORDED."""
    values = final_value(rows, column)
    return NOT_RECORDED if values.isna().all() else spread(values).text(digits)


def ceiling_bits(rows: pd.DataFrame) -> pd.Series:
    """Per trial: the mean over classes of log2(images of the class), the entropy when every image is its own tree."""
    classes = sorted(c.removeprefix("images/") for c in rows.columns if c.startswith("images/class_"))
    images = np.stack([final_value(rows, f"images/{c}").to_numpy(dtype=np.float64) for c in classes])
    seen = images > 0
    bits = np.where(seen, np.log2(np.maximum(images, 1)), 0.0).sum(axis=0) / np.maximum(seen.sum(axis=0), 1)
    return pd.Series(bits, index=rows.index)


def collision_bounds(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, bool]:
    """Per trial: the within-class collision entropy and its one-sided 95 % lower bound (bits), recorded by the
    evaluation, or for a run before the measure only the bound, from the profile with the most colliding pairs its
    images and distinct trees per class allow (True: bounds from the trees)."""
    bound = final_value(rows, "collisions/entropy_bound_bits")
    if bound.notna().any():
        return (final_value(rows, "collisions/entropy_bits").to_numpy(dtype=np.float64),
                bound.to_numpy(np.float64), False)
    classes = sorted(c.removeprefix("images/") for c in rows.columns if c.startswith("images/class_"))
    images = np.stack([final_value(rows, f"images/{c}").to_numpy(dtype=np.float64) for c in classes], axis=1)
    trees = np.stack([final_value(rows, f"parse_trees/{c}").to_numpy(dtype=np.float64) for c in classes], axis=1)
    bounds = [collision_entropy_bound([worst_counts(int(n), int(t)) for n, t in zip(ns, ts) if n > 0])
              for ns, ts in zip(images, trees)]
    return np.full(len(rows), math.nan), np.array(bounds, dtype=np.float64), True


def collision_text(rows: pd.DataFrame) -> str:
    """The arm's collision entropy as the ceiling table shows it: mean ± std with the lowest seed's bound, or "at
    least X bits" (the lowest seed's bound) where no point exists."""
    point, bound, from_trees = collision_bounds(rows)
    if np.isnan(bound).all():
        return NOT_RECORDED
    lowest = float(np.nanmin(bound))
    if from_trees or np.isnan(point).any():
        return describe_collision_entropy(math.inf, lowest) + (" (from images and trees)" if from_trees else "")
    return f"{spread(pd.Series(point)).text(2)} (≥ {lowest:.2f})"


def routed_arms(context: Context) -> list[tuple[str, object, pd.DataFrame]]:
    last = last_rows(context.results)
    return [(m, arm, arm_rows(last, m, arm)) for m, arm in arms(last) if routed(m)]


@report_table("ceiling", "REM's entropy beside its ceiling", file="ceiling")
def ceiling_table(frame: pd.DataFrame, context: Context) -> Table | None:
    rows = []
    for model, arm, mine in routed_arms(context):
        if not any(c.startswith("images/class_") for c in mine.columns):
            continue
        entropy, ceiling = final_value(mine, "entropy/mean"), ceiling_bits(mine)
        rows.append([model, arm.label, str(len(mine)), spread(entropy).text(3), spread(ceiling).text(3),
                     spread(ceiling - entropy).text(3), spread(pd.Series(trees_per_image(mine))).text(3),
                     recorded(mine, "entropy/at_images_mean", 3), recorded(mine, "entropy/k3_mean", 3),
                     recorded(mine, "entropy/kept_mean", 3), collision_text(mine)])
    if not rows:
        return None
    return Table("REM's entropy beside its ceiling", [
        "Model", "Variant", "Seeds", "Entropy (bits)", "Ceiling: log2 images per class (bits)", "Below ceiling (bits)",
        "Distinct trees per image", f"Entropy on {ENTROPY_IMAGES_PER_CLASS} images a class (ceiling "
        f"{math.log2(ENTROPY_IMAGES_PER_CLASS):.3f})", f"Entropy at K = {SECONDARY_LEVELS} (secondary)",
        "Entropy over alive capsules", "Within-class collision entropy (bits)"], rows, notes=[
        "REM's entropy (mean over classes, REM's K) at the final evaluation, and its ceiling: every test image a parse "
        "tree of its own, log2 of the images predicted as each class, averaged over classes. Where the reference arm "
        f"has {CEILING_TREES_PER_IMAGE:g} or more distinct trees per image, an entropy claim is 'not tested: at "
        f"ceiling' (rem.report.preconditions). The entropy on the first {ENTROPY_IMAGES_PER_CLASS} images of each "
        "class compares across test subsets; K = 3 is a coarser key (secondary: not REM's); over alive capsules: the "
        "keys' entries of the input capsules that reached the dead-capsule threshold on some image. "
        "The within-class collision entropy, -log2 of the share of same-class image pairs that share a tree "
        "(rem.parse_trees), is a lower bound on the Shannon entropy that the ceiling does not cap: its mean ± std over "
        "seeds with, in brackets, the lowest seed's one-sided 95 % lower bound; 'at least X bits' where a seed had no "
        "colliding pair or, marked 'from images and trees', for a run before the measure: the bound of the most "
        "colliding profile its images and distinct trees per class allow. "
        f"'{NOT_RECORDED}': the run predates the measure. {SAMPLE_SD}"])


@report_table("routing-dependence", "Does routing depend on the image?", file="dependence")
def dependence_table(frame: pd.DataFrame, context: Context) -> Table | None:
    rows = []
    for model, arm, mine in routed_arms(context):
        uniform = math.log2(classes_of(str(mine["data.dataset"].iloc[0])))
        below = spread(uniform - final_value(mine, "routing/coupling_entropy")).text(4)
        images = final_value(mine, "routing/images")
        rows.append([model, arm.label, str(len(mine)), below, recorded(mine, "routing/input_dependence", 4),
                     recorded(mine, "routing/input_dependence_within_class", 4),
                     recorded(mine, "routing/input_dependence_weighted", 4),
                     recorded(mine, "routing/fixed_preference", 4),
                     NOT_RECORDED if images.isna().all() else f"{int(images.max()):,}"])
    if not rows:
        return None
    return Table("Does routing depend on the image?", [
        "Model", "Variant", "Seeds", "Coupling entropy below uniform (bits)", "Input dependence (bits)",
        "... within a class (bits)", "... weighted by capsule length", "Fixed preference (bits)",
        "Images read"], rows, notes=[
        "The class layer's couplings at the final evaluation (rem.routing.health). Below uniform: log2 of the classes "
        "minus the mean entropy of an input capsule's couplings, and that distance is exactly the sum of the other "
        "two: input dependence, the mean over input capsules of the mutual information between the image and the "
        "capsule's couplings, H(E c_i) - E H(c_i) (0 when every image gets the same couplings), and the fixed "
        "preference, log2 J - H(E c_i), what every image shares. Within a class: the same mutual information "
        "inside each predicted class, I(X; c_i | Y), what is left once the class is known (REM's trees are within "
        "a class). Routing counts as active only with an input dependence of at least "
        f"{DEPENDENCE_MARGIN_BITS:g} bits where measured, within a class where the run measured that "
        "(rem.report.preconditions). Plug-in "
        f"estimates on the images read (all test images the evaluation keyed). '{NOT_RECORDED}': the run predates the "
        f"measure. {SAMPLE_SD}"])
