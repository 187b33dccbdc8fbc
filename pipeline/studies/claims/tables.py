"""The claims page's own tables (reports/claims/): do capsule networks keep their promises here, and does REM
keep them?"""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from pipeline.studies.claims.overlapping import accuracy, overlapping_rows
from rem.analysis.forwards import PLAIN
from rem.data.registry import find_family
from rem.models.counts import decoder_parameters
from rem.report.ablations import gflops, step_ms
from rem.report.arm_seeds import QUANTIZED, ArmSeeds, arms_of, evaluation_note
from rem.report.equivariance import equivariance_points, equivariance_rows
from rem.report.preconditions import PRECONDITIONS_NOTE, at_chance, chance_accuracy, first
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.robustness import (
    HEADLINE,
    arm_spread,
    arms,
    baseline_arms,
    capsule_arms,
    dataset_points,
    drop,
    per_trial,
    robustness_points,
)
from rem.report.spread import Spread
from rem.report.tables import aggregate
from rem.report.verdicts import HEADER as VERDICT_HEADER, RULE_NOTE, Differs, NoWorse, claims_table, judged
from rem.results.arms import PLAIN_ARM, PLUS_Q, Arm
from rem.results.variants import routed

PLAIN_ACC = f"{PLAIN}/test/acc"  # the plain forward's accuracy in the robustness points (rem.report.robustness)
FINAL_FORWARD = "+Q (final evaluation)"
MARGIN_POINTS = 1.0  # the "no worse" claims' margin: accuracy (or accuracy lost) within 1 point
# Sabour et al. 2017 and the capsule literature, as the claims page states them
CLAIMS = {
    "robust": "Capsules lose less accuracy than a CNN of the same size under geometric change they were not trained on",
    "rem": ("REM-pruned capsules stay as robust as the unpruned model (REM's summaries; "
            f"margin {MARGIN_POINTS:g} point)"),
    "iterations": "Routing by agreement needs its iterations: 1 (a single softmax, no feedback) is worse than 3",
    "plateau": f"Beyond 3 iterations little is gained (at most {MARGIN_POINTS:g} point) while the cost grows",
    "decoder": "The reconstruction decoder helps (a regulariser, Sabour et al.)",
    "shared": f"Vote matrices shared across the grid per capsule type lose nothing against one per primary capsule "
              f"(margin {MARGIN_POINTS:g} point)",
}
HEADER = ["Arms", "Claim", "Forward", "Measured (mean ± std over seeds)", *VERDICT_HEADER]


def arm_drop(points: pd.DataFrame, model: str, arm: Arm, family: str, strengths, metric: str = "test/acc") -> Spread:
    return arm_spread(drop(points, family, strengths, metric), points, model, arm, 100.0)


def near_chance(points: pd.DataFrame, model: str, arm: Arm, family: str, strengths, label: str,
                metric: str = "test/acc") -> str | None:
    """The reason a transformed point cannot be scored for this arm: `at_chance` at one of its strengths."""
    dataset = str(points["data.dataset"].iloc[0])
    for strength in strengths:
        values = arm_spread(per_trial(points, family, (strength,), metric), points, model, arm, 100.0).values
        reason = at_chance(f"{model} {arm.label}", values, chance_accuracy(dataset), f"{label} ({family} {strength:g})")
        if reason:
            return reason
    return None


def seeds_of(seeds: dict, points_or_row, model: str, arm: Arm) -> ArmSeeds:
    """The arm's seeds on the dataset its points (or aggregate row) are of."""
    dataset = points_or_row.dataset if hasattr(points_or_row, "dataset") else \
        str(points_or_row["data.dataset"].iloc[0])
    return seeds[(dataset, model, arm)]


def robust_against_cnn(points: pd.DataFrame, seeds: dict, model: str, cnn: str, family: str, strengths,
                       label: str) -> list[str] | None:
    """The robustness claim for one transform, on the capsule model's plain forward where measured, else +Q."""
    q = PLUS_Q
    base = arm_drop(points, cnn, PLAIN_ARM, family, strengths, PLAIN_ACC)
    caps = arm_drop(points, model, q, family, strengths)
    plain = arm_drop(points, model, q, family, strengths, PLAIN_ACC)
    read, forward = (plain, PLAIN) if plain.n else (caps, QUANTIZED)
    if read.n == 0 or base.n == 0:
        return None
    beside = f" ({QUANTIZED} {caps.text(2)})" if plain.n and caps.n else ""
    mine, theirs = seeds_of(seeds, points, model, q), seeds_of(seeds, points, cnn, PLAIN_ARM)
    metric = PLAIN_ACC if forward == PLAIN else "test/acc"
    return [f"{model} {q.label} vs {cnn}", CLAIMS["robust"] + f": {label}", forward,
            f"accuracy lost {read.text(2)}{beside} vs {base.text(2)} points{evaluation_note(mine, theirs)}",
            *judged(Differs(-1), base, read, 2, mine.not_learned(), theirs.not_learned(),
                    near_chance(points, model, q, family, strengths, label, metric),
                    near_chance(points, cnn, PLAIN_ARM, family, strengths, label, PLAIN_ACC))]


def robustness_rows(points: pd.DataFrame, seeds: dict) -> list[list[str]]:
    rows = []
    if points.empty:  # a sweep that measured no robustness (its pairs, say) has no such claim to state
        return rows
    for model in capsule_arms(points):
        for cnn in baseline_arms(points):
            rows += [row for family, strengths, label in HEADLINE
                     if (row := robust_against_cnn(points, seeds, model, cnn, family, strengths, label))]
        # REM's claims are about its own evaluation, the +Q forward of the pruned model against the unpruned one's
        q_seeds = seeds_of(seeds, points, model, PLUS_Q)
        for _, arm in [(m, a) for m, a in arms(points, lambda arm: arm.thresholds_by_rem) if m == model]:
            rem_seeds = seeds_of(seeds, points, model, arm)
            untested = first(q_seeds.not_learned(), rem_seeds.not_learned(), q_seeds.not_routing(QUANTIZED),
                             rem_seeds.not_routing(QUANTIZED))
            for family, strengths, label in HEADLINE:
                q = arm_drop(points, model, PLUS_Q, family, strengths)
                rem = arm_drop(points, model, arm, family, strengths)
                if q.n and rem.n:
                    rows.append([f"{model} {arm.label} vs {PLUS_Q.label}", CLAIMS["rem"] + f": {label}", QUANTIZED,
                                 f"accuracy lost {rem.text(2)} vs {q.text(2)} points"
                                 f"{evaluation_note(rem_seeds, q_seeds)}",
                                 *judged(NoWorse(MARGIN_POINTS, higher_is_better=False), q, rem, 2, untested,
                                         near_chance(points, model, PLUS_Q, family, strengths, label),
                                         near_chance(points, model, arm, family, strengths, label))])
    return rows


def routing_rows(rows, seeds: dict) -> list[list[str]]:
    """Iterations, decoder and shared votes against each capsule model's default +Q arm."""
    by = {(r.dataset, r.model, r.arm): r for r in rows if r.seeds}
    out = []
    for (dataset, model, plus_q), row in sorted(by.items(), key=lambda item: item[1].order):
        if plus_q != PLUS_Q or not routed(model):
            continue
        base, base_seeds = accuracy(row), seeds_of(seeds, row, model, row.arm)

        def arm(**ablation):
            other = by.get((dataset, model, replace(PLUS_Q, **ablation)))
            return (other, (accuracy(other) if other else None),
                    (seeds_of(seeds, other, model, other.arm) if other else None))

        def measured(other_acc, other_seeds, extra=""):
            return f"{other_acc.text(2)} vs {base.text(2)} %{extra}{evaluation_note(other_seeds, base_seeds)}"

        learned = base_seeds.not_learned()
        routes = base_seeds.not_routing(QUANTIZED)
        one, one_acc, one_seeds = arm(iterations=1)
        if one:  # one iteration is a single softmax of zero logits: uniform by construction, so only 3's must route
            out.append([f"{model} 1 vs 3 iterations", CLAIMS["iterations"], FINAL_FORWARD, measured(one_acc, one_seeds),
                        *judged(Differs(-1), base, one_acc, 2, learned, one_seeds.not_learned(), routes)])
        five, five_acc, five_seeds = arm(iterations=5)
        if five:
            cost, seconds = gflops(five) / gflops(row), step_ms(five) / step_ms(row)
            out.append([f"{model} 5 vs 3 iterations", CLAIMS["plateau"], FINAL_FORWARD,
                        measured(five_acc, five_seeds, f"; {cost:.3f}x the FLOPs, {seconds:.2f}x the time per step"),
                        *judged(NoWorse(MARGIN_POINTS, higher_is_better=False), base, five_acc, 2, learned,
                                five_seeds.not_learned(), routes, five_seeds.not_routing(QUANTIZED),
                                None if cost > 1 else f"5 iterations cost no more FLOPs ({cost:.3f}x)")])
        dec, dec_acc, dec_seeds = arm(decoder=True)
        if dec:
            out.append([f"{model} decoder vs none", CLAIMS["decoder"], FINAL_FORWARD, measured(dec_acc, dec_seeds),
                        *judged(Differs(+1), base, dec_acc, 2, learned, dec_seeds.not_learned())])
        shared, shared_acc, shared_seeds = arm(shared_votes=True)
        if shared:
            out.append([f"{model} shared vs per-capsule votes", CLAIMS["shared"], FINAL_FORWARD,
                        measured(shared_acc, shared_seeds, f" with {shared.params:,} vs {row.params:,} parameters"),
                        *judged(NoWorse(MARGIN_POINTS), base, shared_acc, 2, learned, shared_seeds.not_learned())])
    return out


def verdict_table(points: pd.DataFrame, rows, seeds: dict, equivariance: pd.DataFrame | None = None) -> Table:
    equivariant = equivariance_rows(equivariance, seeds) if equivariance is not None and not equivariance.empty else []
    return claims_table("The capsule claims against this run", HEADER,
                 robustness_rows(points, seeds) + equivariant + overlapping_rows(rows, seeds)
                 + routing_rows(rows, seeds),
                 notes=[
                     "Accuracy lost: each trial's clean test accuracy minus its accuracy on the transformed images, in "
                     "points.", RULE_NOTE, PRECONDITIONS_NOTE,
                     "Forward: what the claim reads of a capsule model. plain: the routing as trained; +Q: REM's "
                     "quantized forward (the last iteration's couplings rounded to the K levels, which switches the "
                     "routing off where nearly every coupling falls in one bin). Robustness against the CNN reads the "
                     "plain forward where the trials measured it (+Q beside it in brackets); REM's claims read +Q, "
                     "its own evaluation; the iterations and decoder read the final evaluation (+Q)."])


def inference_parameters(row) -> tuple[int, int]:
    """(parameters at inference, the decoder's): only training uses the decoder."""
    if not row.arm.decoder:
        return row.params, 0
    spec = find_family(row.dataset).spec(row.dataset)
    decoder = decoder_parameters(row.model, spec.in_shape, spec.num_classes)
    return row.params - decoder, decoder


def size_table(rows) -> Table:
    """Parameters, FLOPs and time per step of each unablated and decoder arm: how closely the CNN matches."""
    def number(value: float, digits: int) -> str:
        return "–" if math.isnan(value) else f"{value:.{digits}f}"

    shown = [r for r in rows if r.seeds and (not r.arm.ablated or r.arm.decoder)]
    counts = {id(r): inference_parameters(r) for r in shown}
    cells = [[r.dataset, r.model, r.variant, f"{r.params:,}", f"{counts[id(r)][1]:,}" if counts[id(r)][1] else "–",
              f"{counts[id(r)][0]:,}", number(gflops(r), 4), number(step_ms(r), 0)] for r in shown]
    matched = []
    for dataset in sorted({r.dataset for r in shown}):
        caps = [r for r in shown if r.dataset == dataset and routed(r.model) and r.arm.unpruned]
        cnns = [r for r in shown if r.dataset == dataset and not routed(r.model)]
        for c in caps:
            for n in cnns:
                ratio = counts[id(n)][0] / counts[id(c)][0]
                matched.append(f"{dataset}: {n.model} has {ratio:.4f}x the inference parameters of {c.model} "
                               f"{c.variant} ({counts[id(n)][0]:,} vs {counts[id(c)][0]:,}) and "
                               f"{gflops(n) / gflops(c):.3f}x its FLOPs")
    return Table("The baseline's size against the capsule model's", ["Dataset", "Model", "Variant", "Parameters",
                 "Decoder (training only)", "Parameters at inference", "GFLOPs per image", "Time per step (ms)"], cells,
                 notes=[
                     "Parameters: trainable, of the model as trained (a REM-pruned model keeps its zeros); the "
                     "reconstruction decoder is counted apart, since only training uses it. GFLOPs: one image's "
                     "inference forward, dense (2 x multiply-adds; rem.models.counts). Time per step: median over "
                     "seeds of each trial's mean training step.",
                     "Matching, from these counts: " + ("; ".join(matched) + "." if matched else "no CNN beside a "
                                                        "capsule model here.")])


def drop_table(points: pd.DataFrame, dataset: str) -> Table:
    """The robustness table as accuracy lost against each trial's clean accuracy."""
    points = points[points["data.dataset"].astype(str) == dataset]
    rows = [[m, a.label, *(arm_drop(points, m, a, f, s).text(2) for f, s, _ in HEADLINE)] for m, a in arms(points)]
    return Table(f"{dataset}: accuracy lost to each transform (points)", ["Model", "Variant",
                 *(label for _, _, label in HEADLINE)], rows,
                 notes=["Mean ± sample std (ddof 1) over seeds of clean minus transformed "
                        "accuracy; – where the run did not measure it."])


@report_table("capsule-claims", "The capsule claims against this run", file="claims")
def capsule_claims(frame: pd.DataFrame, context: Context) -> Table:
    return verdict_table(context.once(robustness_points), context.once(aggregate), context.once(arms_of),
                         context.once(equivariance_points))


@report_table("sizes", "The baseline's size against the capsule model's")
def sizes_section(frame: pd.DataFrame, context: Context) -> Table:
    return size_table(context.once(aggregate))


@report_table("accuracy-lost", "Accuracy lost to each transform", per="data.dataset",
              file="robustness_{group}")
def accuracy_lost_section(frame: pd.DataFrame, context: Context, dataset: str) -> Table | None:
    points = dataset_points(context, dataset)
    return None if points is None else drop_table(points, dataset)


def heading(done: pd.DataFrame) -> tuple[str, str]:
    listed = ", ".join(f"{m} {v}"
                       for m, v in sorted({(str(m), str(v)) for m, v in zip(done["model.name"], done["variant"])}))
    return ("Claims: do capsule networks keep their promises here, and does REM keep them?",
            f"{done['trial_key'].nunique()} finished trials ({listed})")

