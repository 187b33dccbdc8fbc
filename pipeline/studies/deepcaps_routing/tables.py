"""DeepCaps' routing page's own table: whether REM's entropy claim is testable on DeepCaps at the confirmatory budget,
by the preconditions every verdict reads (rem.report.preconditions), each number beside its threshold."""

from __future__ import annotations

import math

import pandas as pd

from rem.report.arm_seeds import QUANTIZED, ArmSeeds, arms_of
from rem.report.preconditions import (
    CEILING_TREES_PER_IMAGE,
    DEPENDENCE_MARGIN_BITS,
    LEARNED_MARGIN_POINTS,
    ROUTING_MARGIN_BITS,
    chance_accuracy,
    classes_of,
    first,
)
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.spread import spread

MODEL = "deepcaps"
QUESTION = "REM's entropy claim testable at this budget"
TESTABLE = "testable"  # every precondition holds: a study of +Q against +REM could decide the claim


def testable(seeds: ArmSeeds) -> str:
    """"testable", or "not tested: <the first failed precondition's measured reason>"."""
    reason = first(seeds.not_learned(), seeds.not_routing(QUANTIZED), seeds.at_ceiling())
    return TESTABLE if reason is None else f"not tested: {reason}"


def row_of(seeds: ArmSeeds) -> list[str]:
    below = [math.log2(classes_of(seeds.dataset)) - c for c in seeds.coupling[QUANTIZED]]
    return [seeds.name, QUESTION, ", ".join(map(str, seeds.seeds)), spread(seeds.accuracy).text(2),
            spread(below).text(4), spread(seeds.dependence).text(4), spread(seeds.trees_per_image).text(3),
            testable(seeds)]


# the trial epoch by epoch (the study's figure) follows the verdict it explains
@report_table("deepcaps-testable", "Is REM's entropy claim testable on DeepCaps?", file="testable",
              figures=(f"epochs_{MODEL}.png",))
def testable_table(frame: pd.DataFrame, context: Context) -> Table | None:
    found = [seeds for (_, model, arm), seeds in arms_of(context.results).items()
             if model == MODEL and arm.label == QUANTIZED]
    if not found:
        return None
    chance = chance_accuracy(found[0].dataset)
    return Table("Is REM's entropy claim testable on DeepCaps?", [
        "Arm", "Question", "Seeds", "Test acc. (%)", "Coupling entropy below uniform (bits)",
        "Input dependence within a class (bits)", "Distinct trees per image", "Verdict"],
        [row_of(seeds) for seeds in found], notes=[
        "The +Q trial's class layer at its final evaluation (the last epoch, all test images), against the "
        "preconditions every verdict reads (rem.report.preconditions), each in every seed: accuracy at least "
        f"{LEARNED_MARGIN_POINTS:g} points above chance ({chance:.2f} %); couplings at least {ROUTING_MARGIN_BITS:g} "
        f"bits below uniform; input dependence within a class (I(X; c_i | Y), Y the predicted class REM's entropy "
        f"groups images by) at least {DEPENDENCE_MARGIN_BITS:g} bits; fewer than {CEILING_TREES_PER_IMAGE:g} distinct "
        "parse trees per test image, else REM's entropy sits at its ceiling and a drop could not show. A run from "
        "before the within-class measure shows its input dependence over all images, which the precondition then "
        "reads. "
        f"'{TESTABLE}': all hold, so a paired study of +Q against +REM could decide the claim; otherwise 'not tested' "
        "with the first that fails. Mean ± sample std (ddof 1) over seeds."])


def heading(done: pd.DataFrame) -> tuple[str, str]:
    seeds = sorted(int(s) for s in done["train.seed"].unique())
    return ("Does DeepCaps' routing route? REM's third architecture at the confirmatory budget",
            f"{MODEL} on {', '.join(sorted(done['data.dataset'].astype(str).unique()))}, +Q, seed"
            f"{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))} ({done['trial_key'].nunique()} finished "
            f"trial{'s' if done['trial_key'].nunique() > 1 else ''}), read at the last of a fixed budget of "
            f"{int(done['train.epochs'].max())} epochs")
