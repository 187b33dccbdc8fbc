"""Two tables every page that judges REM shows beside its verdicts: REM's entropy beside its ceiling (every image its
own tree), and whether the couplings depend on the image. Runs made before a measure show "not recorded"."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rem.evaluate import ENTROPY_IMAGES_PER_CLASS, SECONDARY_LEVELS
from rem.report.arm_seeds import trees_per_image
from rem.report.preconditions import CEILING_TREES_PER_IMAGE, DEPENDENCE_MARGIN_BITS, classes_of
from rem.report.registry import CLAIMS_PAGE, EVIDENCE_PAGE, HORIZON_PAGE, ROUTING_PAGE, Context, report_table
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


def routed_arms(context: Context) -> list[tuple[str, object, pd.DataFrame]]:
    last = last_rows(context.results)
    return [(m, arm, arm_rows(last, m, arm)) for m, arm in arms(last) if routed(m)]


@report_table("ceiling", "REM's entropy beside its ceiling",
              pages={EVIDENCE_PAGE: 22, HORIZON_PAGE: 12, ROUTING_PAGE: 25, CLAIMS_PAGE: 8}, file="ceiling")
def ceiling_table(frame: pd.DataFrame, context: Context) -> Table | None:
    rows = []
    for model, arm, mine in routed_arms(context):
        if not any(c.startswith("images/class_") for c in mine.columns):
            continue
        entropy, ceiling = final_value(mine, "entropy/mean"), ceiling_bits(mine)
        rows.append([model, arm.label, str(len(mine)), spread(entropy).text(3), spread(ceiling).text(3),
                     spread(ceiling - entropy).text(3), spread(pd.Series(trees_per_image(mine))).text(3),
                     recorded(mine, "entropy/at_images_mean", 3), recorded(mine, "entropy/k3_mean", 3),
                     recorded(mine, "entropy/kept_mean", 3)])
    if not rows:
        return None
    return Table("REM's entropy beside its ceiling", [
        "Model", "Variant", "Seeds", "Entropy (bits)", "Ceiling: log2 images per class (bits)", "Below ceiling (bits)",
        "Distinct trees per image", f"Entropy on {ENTROPY_IMAGES_PER_CLASS} images a class (ceiling "
        f"{math.log2(ENTROPY_IMAGES_PER_CLASS):.3f})", f"Entropy at K = {SECONDARY_LEVELS} (secondary)",
        "Entropy over alive capsules"], rows, notes=[
        "REM's entropy (mean over classes, REM's K) at the final evaluation, and its ceiling: every test image a parse "
        "tree of its own, log2 of the images predicted as each class, averaged over classes. Where the reference arm "
        f"has {CEILING_TREES_PER_IMAGE:g} or more distinct trees per image, an entropy claim is 'not tested: at "
        f"ceiling' (rem.report.preconditions). The entropy on the first {ENTROPY_IMAGES_PER_CLASS} images of each "
        "class compares across test subsets; K = 3 is a coarser key (secondary: not REM's); over alive capsules: the "
        "keys' entries of the input capsules that reached the dead-capsule threshold on some image. "
        f"'{NOT_RECORDED}': the run predates the measure. {SAMPLE_SD}"])


@report_table("routing-dependence", "Does routing depend on the image?",
              pages={EVIDENCE_PAGE: 23, HORIZON_PAGE: 13, ROUTING_PAGE: 26, CLAIMS_PAGE: 9}, file="dependence")
def dependence_table(frame: pd.DataFrame, context: Context) -> Table | None:
    rows = []
    for model, arm, mine in routed_arms(context):
        uniform = math.log2(classes_of(str(mine["data.dataset"].iloc[0])))
        below = spread(uniform - final_value(mine, "routing/coupling_entropy")).text(4)
        images = final_value(mine, "routing/images")
        rows.append([model, arm.label, str(len(mine)), below, recorded(mine, "routing/input_dependence", 4),
                     recorded(mine, "routing/input_dependence_weighted", 4), recorded(mine, "routing/fixed_preference", 4),
                     NOT_RECORDED if images.isna().all() else f"{int(images.max()):,}"])
    if not rows:
        return None
    return Table("Does routing depend on the image?", [
        "Model", "Variant", "Seeds", "Coupling entropy below uniform (bits)", "Input dependence (bits)",
        "... weighted by capsule length", "Fixed preference (bits)", "Images read"], rows, notes=[
        "The class layer's couplings at the final evaluation (rem.routing.health). Below uniform: log2 of the classes "
        "minus the mean entropy of an input capsule's couplings, and that distance is exactly the sum of the other "
        "two: input dependence, the mean over input capsules of the mutual information between the image and the "
        "capsule's couplings, H(E c_i) - E H(c_i) (0 when every image gets the same couplings), and the fixed "
        "preference, log2 J - H(E c_i), what every image shares. Routing counts as active only with an input "
        f"dependence of at least {DEPENDENCE_MARGIN_BITS:g} bits where measured (rem.report.preconditions). Plug-in "
        f"estimates on the images read (all test images the evaluation keyed). '{NOT_RECORDED}': the run predates the "
        f"measure. {SAMPLE_SD}"])
