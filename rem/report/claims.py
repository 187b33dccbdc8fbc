"""The claims page (reports/claims/): do capsule networks keep their promises here -- robustness to geometric
change against a matched CNN, the number of routing iterations, the decoder -- and does REM keep them?

Every number comes from the results table alone (the trials' final evaluations and their `robust/...` points), so
the committed Parquet regenerates the page. A claim "holds" only when the difference exceeds the combined seed
spread in the claimed direction (`rem.report.evidence.tables.direction`); "no worse" claims hold unless the difference
exceeds it the wrong way.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from rem.analysis.forwards import PLAIN
from rem.report.ablations import gflops, step_ms
from rem.report.assemble import assemble_page, markdown_body, markdown_files
from rem.report.evidence.page import run_lines
from rem.report.evidence.tables import VERDICT, Spread, direction
from rem.report.registry import CLAIMS_PAGE, Context, report_table
from rem.report.render import Table
from rem.report.equivariance import equivariance_points, equivariance_rows
from rem.report.overlapping import overlapping_rows
from rem.report.robustness import (HEADLINE, arm_spread, arms, baseline_arms, capsule_arms, dataset_points, drop,
                                   robustness_points)
from rem.report.tables import aggregate
from rem.results.arms import PLUS_Q
from rem.results.frames import finished_trials
from rem.results.variants import routed

ACCURACY_RESOLUTION = 0.01  # points: the tables print accuracy to 2 decimals
PLAIN_ACC = f"{PLAIN}/test/acc"  # the plain forward's accuracy in the robustness points (rem.report.robustness)
FINAL_FORWARD = "+Q (final evaluation)"
NO_WORSE = {-1: "holds (better)", 0: "holds (within the seed spread)", 1: "does not hold"}
# Sabour et al. 2017 and the capsule literature, as the claims page states them
CLAIMS = {
    "robust": "Capsules lose less accuracy than a CNN of the same size under geometric change they were not trained on",
    "rem": "REM-pruned capsules stay as robust as the unpruned model (REM's summaries)",
    "iterations": "Routing by agreement needs its iterations: 1 (a single softmax, no feedback) is worse than 3",
    "plateau": "Beyond 3 iterations little is gained while the cost grows",
    "decoder": "The reconstruction decoder helps (a regulariser, Sabour et al.)",
    "shared": "Vote matrices shared across the grid per capsule type lose nothing against one per primary capsule",
}


def arm_drop(points: pd.DataFrame, model: str, variant: str, family: str, strengths, metric: str = "test/acc") -> Spread:
    return arm_spread(drop(points, family, strengths, metric), points, model, variant, 100.0)


def robust_against_cnn(points: pd.DataFrame, model: str, cnn: str, family: str, strengths, label: str) -> list[str] | None:
    """The robustness claim for one transform: the capsule model's plain forward (the routing as trained) where
    its trials measured it, +Q beside it; the final evaluation's +Q alone where they did not."""
    base = arm_drop(points, cnn, "plain", family, strengths, PLAIN_ACC)
    caps, plain = arm_drop(points, model, "+Q", family, strengths), arm_drop(points, model, "+Q", family, strengths, PLAIN_ACC)
    read, forward = (plain, "plain") if plain.n else (caps, "+Q")
    if read.n == 0 or base.n == 0:
        return None
    beside = f" (+Q {caps.text(2)})" if plain.n and caps.n else ""
    return [f"{model} +Q vs {cnn}", CLAIMS["robust"] + f": {label}", forward,
            f"accuracy lost {read.text(2)}{beside} vs {base.text(2)} points",
            VERDICT[direction(base, read, ACCURACY_RESOLUTION)]]


def robustness_rows(points: pd.DataFrame) -> list[list[str]]:
    rows = []
    if points.empty:  # a sweep that measured no robustness (its pairs, say) has no such claim to state
        return rows
    for model in capsule_arms(points):
        for cnn in baseline_arms(points):
            rows += [row for family, strengths, label in HEADLINE
                     if (row := robust_against_cnn(points, model, cnn, family, strengths, label))]
        # REM's claims are about its own evaluation, the +Q forward of the pruned model against the unpruned one's
        for _, variant in [(m, v) for m, v in arms(points, lambda arm: arm.thresholds_by_rem) if m == model]:
            for family, strengths, label in HEADLINE:
                q, rem = arm_drop(points, model, "+Q", family, strengths), arm_drop(points, model, variant, family, strengths)
                if q.n and rem.n:
                    rows.append([f"{model} {variant} vs +Q", CLAIMS["rem"] + f": {label}", "+Q",
                                 f"accuracy lost {rem.text(2)} vs {q.text(2)} points",
                                 NO_WORSE[direction(q, rem, ACCURACY_RESOLUTION)]])
    return rows


def routing_rows(rows) -> list[list[str]]:
    """Iterations and decoder against each capsule model's default +Q arm (same data, epochs and steps)."""
    by = {(r.dataset, r.model, r.arm): r for r in rows if r.seeds}
    out = []
    for (dataset, model, plus_q), row in sorted(by.items(), key=lambda item: item[1].order):
        if plus_q != PLUS_Q or not routed(model):
            continue
        base = Spread(row.acc_mean * 100, row.acc_std * 100, len(row.seeds))

        def arm(**ablation):
            other = by.get((dataset, model, replace(PLUS_Q, **ablation)))
            return other, (Spread(other.acc_mean * 100, other.acc_std * 100, len(other.seeds)) if other else None)

        one, one_acc = arm(iterations=1)
        if one:
            out.append([f"{model} 1 vs 3 iterations", CLAIMS["iterations"], FINAL_FORWARD, f"{one_acc.text(2)} vs {base.text(2)} %",
                        VERDICT[direction(base, one_acc, ACCURACY_RESOLUTION)]])
        five, five_acc = arm(iterations=5)
        if five:
            cost, seconds = gflops(five) / gflops(row), step_ms(five) / step_ms(row)
            gain = direction(base, five_acc, ACCURACY_RESOLUTION)
            out.append([f"{model} 5 vs 3 iterations", CLAIMS["plateau"], FINAL_FORWARD, f"{five_acc.text(2)} vs {base.text(2)} %; "
                        f"{cost:.3f}x the FLOPs, {seconds:.2f}x the time per step",
                        "holds" if gain <= 0 and cost > 1 else "does not hold"])
        dec, dec_acc = arm(decoder=True)
        if dec:
            out.append([f"{model} decoder vs none", CLAIMS["decoder"], FINAL_FORWARD, f"{dec_acc.text(2)} vs {base.text(2)} %",
                        VERDICT[-direction(base, dec_acc, ACCURACY_RESOLUTION)]])
        shared, shared_acc = arm(shared_votes=True)
        if shared:
            out.append([f"{model} shared vs per-capsule votes", CLAIMS["shared"], FINAL_FORWARD,
                        f"{shared_acc.text(2)} vs {base.text(2)} % with {shared.params:,} vs {row.params:,} parameters",
                        NO_WORSE[-direction(base, shared_acc, ACCURACY_RESOLUTION)]])
    return out


def verdict_table(points: pd.DataFrame, rows, equivariance: pd.DataFrame | None = None) -> Table:
    equivariant = equivariance_rows(equivariance) if equivariance is not None and not equivariance.empty else []
    return Table("The capsule claims against this run", ["Arms", "Claim", "Forward", "Measured (mean ± std over seeds)",
                                                          "Here"],
                 robustness_rows(points) + equivariant + overlapping_rows(rows) + routing_rows(rows), notes=[
                     "Accuracy lost: each trial's clean test accuracy minus its accuracy on the transformed images, in "
                     "points. 'holds': the difference exceeds the combined seed spread in the claimed direction; "
                     "'no worse' claims (REM) hold unless it exceeds the spread the wrong way.",
                     "Forward: what the claim reads of a capsule model. plain: the routing as trained; +Q: REM's "
                     "quantized forward (the last iteration's couplings rounded to the K levels, which switches the "
                     "routing off where nearly every coupling falls in one bin). Robustness against the CNN reads the "
                     "plain forward where the trials measured it (+Q beside it in brackets); REM's claims read +Q, "
                     "its own evaluation; the iterations and decoder read the final evaluation (+Q)."])


def size_table(rows) -> Table:
    """Parameters, FLOPs and time per step of each unablated arm: how closely the CNN matches the capsule model."""
    def number(value: float, digits: int) -> str:
        return "–" if math.isnan(value) else f"{value:.{digits}f}"

    cells = [[r.model, r.variant, f"{r.params:,}", number(gflops(r), 4), number(step_ms(r), 0)]
             for r in rows if r.seeds and " (" not in r.variant]
    return Table("The baseline's size against the capsule model's", ["Model", "Variant", "Parameters",
                 "GFLOPs per image", "Time per step (ms)"], cells, notes=[
                     "Parameters: trainable, of the model as trained (a REM-pruned model keeps its zeros). GFLOPs: one "
                     "image's inference forward, dense (2 x multiply-adds; rem.models.counts). Time per step: median "
                     "over seeds of each trial's mean training step."])


def drop_table(points: pd.DataFrame, dataset: str) -> Table:
    """Accuracy lost per transform, per arm: the robustness table as differences from each trial's clean accuracy."""
    points = points[points["data.dataset"].astype(str) == dataset]
    rows = [[m, v, *(arm_drop(points, m, v, f, s).text(2) for f, s, _ in HEADLINE)] for m, v in arms(points)]
    return Table(f"{dataset}: accuracy lost to each transform (points)", ["Model", "Variant",
                 *(label for _, _, label in HEADLINE)], rows, notes=["Mean ± std over seeds of clean minus transformed "
                                                                      "accuracy; – where the run did not measure it."])


@report_table("capsule-claims", "The capsule claims against this run", pages={CLAIMS_PAGE: 10},
              file="claims")
def capsule_claims(frame: pd.DataFrame, context: Context) -> Table:
    return verdict_table(context.once(robustness_points), context.once(aggregate), context.once(equivariance_points))


@report_table("sizes", "The baseline's size against the capsule model's", pages={CLAIMS_PAGE: 20})
def sizes_section(frame: pd.DataFrame, context: Context) -> Table:
    return size_table(context.once(aggregate))


# In the robustness table's file on the claims page, after it: the same points as differences.
@report_table("accuracy-lost", "Accuracy lost to each transform", pages={CLAIMS_PAGE: 50}, per="data.dataset",
              file="robustness_{group}")
def accuracy_lost_section(frame: pd.DataFrame, context: Context, dataset: str) -> Table | None:
    points = dataset_points(context, dataset)
    return None if points is None else drop_table(points, dataset)


def render_tables(results: pd.DataFrame) -> dict[str, str]:
    """Every claims table as Markdown, by file name; the page embeds the same strings."""
    return markdown_files(assemble_page(results, CLAIMS_PAGE).parts)


def claims_page(results: pd.DataFrame, run: dict, figures: list[str], notes: str = "") -> str:
    """The page as Markdown: `run` says how the run was made, `figures` are file names under figures/, `notes` is
    the hand-written reading of the numbers (reports/claims/notes.md), linked rather than generated."""
    done = finished_trials(results)
    listed = ", ".join(f"{m} {v}" for m, v in sorted({(str(m), str(v)) for m, v in zip(done["model.name"], done["variant"])}))
    parts = ["# Claims: do capsule networks keep their promises here, and does REM keep them?", "",
             f"{done['trial_key'].nunique()} finished trials ({listed}); every number below is computed from "
             "`sweep.parquet` in this folder (`python -m pipeline.claims --render-only` regenerates the tables and "
             "this page from it without retraining).", "", *run_lines(run), "", notes.strip(), "",
             *markdown_body(assemble_page(results, CLAIMS_PAGE).parts, figures)]
    return "\n".join(parts).rstrip() + "\n"
