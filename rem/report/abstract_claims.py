"""The abstract's claims (REM lowers the routing entropy, with fewer parameters and negligible accuracy loss), judged
the same way on the evidence and the horizon pages."""

from __future__ import annotations

import pandas as pd

from rem.report.arm_seeds import QUANTIZED, ArmSeeds, arm_seeds, evaluation_note as evaluated
from rem.report.preconditions import PRECONDITIONS_NOTE
from rem.report.render import Table
from rem.report.spread import Spread
from rem.report.verdicts import HEADER as VERDICT_HEADER, RULE_NOTE, Differs, NoWorse, claims_table, judged, paired
from rem.results.arms import PLUS_Q, Arm
from rem.results.frames import arm_rows, arms, finished_trials, last_rows

# What the paper's abstract claims (rem-paper.md section 0; its result tables could not be read, so no number).
CLAIMS = {
    "entropy": "REM strongly reduces the number of intra-class parse trees (lower routing entropy)",
    "parameters": "... with fewer parameters",
    "accuracy": "... and negligible accuracy loss",
}
NEGLIGIBLE_POINTS = 1.0  # accuracy loss we call negligible, in points: the "no worse" claims' margin


def arm_seed_map(results: pd.DataFrame) -> dict[tuple[str, Arm], ArmSeeds]:
    """(model, arm) -> its seeds as the verdicts read them (accuracy, coupling entropy, evaluated epochs)."""
    last = last_rows(results)
    return {(m, a): arm_seeds(arm_rows(last, m, a), f"{m} {a.label}") for m, a in arms(last)}


def fewer_weights_by_construction(unpruned: Spread, pruned: Spread) -> str | None:
    """Why "fewer parameters" holds whatever the seeds do, or None (then the test decides)."""
    if unpruned.n and pruned.n and all(v == 0 for v in unpruned.values) and all(v > 0 for v in pruned.values):
        return "the unpruned arm has 0 % sparsity in every seed and the pruned one removed weights in every seed"
    return None


def claim_rows(model: str, spreads: dict, seeds: dict) -> list[list[str]]:
    """The abstract's three claims for every REM arm of `model`."""
    q = spreads.get((model, PLUS_Q))
    rem = sorted(a for m, a in spreads if m == model and a.thresholds_by_rem)
    return [row for a in rem if q is not None
            for row in _claims_of(f"{model} {a.label}", q, spreads[(model, a)], seeds[(model, PLUS_Q)],
                                  seeds[(model, a)])]


def _claims_of(name: str, q: dict, rem: dict, q_seeds: ArmSeeds, rem_seeds: ArmSeeds) -> list[list[str]]:
    e, t, a, s = "entropy/mean", "parse_trees/total", "test/acc", "sparsity"
    drop = rem[e].mean - q[e].mean
    rel = f" ({100 * drop / q[e].mean:+.0f} %)" if q[e].mean else ""
    learned = (q_seeds.not_learned(), rem_seeds.not_learned())
    routing = (*learned, q_seeds.not_routing(QUANTIZED), rem_seeds.not_routing(QUANTIZED))
    when = evaluated(q_seeds, rem_seeds)
    return [
        [name, CLAIMS["entropy"], f"{q[e].text(3)} → {rem[e].text(3)} bits{rel}; parse trees {q[t].text(0)} → "
         f"{rem[t].text(0)}{when}", *judged(Differs(-1), q[e], rem[e], 3, *routing, q_seeds.at_ceiling())],
        [name, CLAIMS["parameters"], f"{rem[s].text(2)} % of the prunable weights removed",
         *judged(Differs(+1), q[s], rem[s], 2, rem_seeds.not_learned(),
                 by_construction=fewer_weights_by_construction(q[s], rem[s]))],
        [name, CLAIMS["accuracy"] + f" (margin {NEGLIGIBLE_POINTS:g} point)",
         f"{q[a].text(2)} → {rem[a].text(2)} %{when}",
         *judged(NoWorse(NEGLIGIBLE_POINTS), q[a], rem[a], 2, *learned)],
    ]


AFTER_THE_DATA = "after the data were seen"
SAME_EPOCH_NOTE = (f"A row marked '{AFTER_THE_DATA}' reads both arms at their last epoch, seed by seed, a read-out "
                   "chosen once the published one (each arm at its own evaluated epoch) had been seen: its paired "
                   "test is shown for what it suggests and decides nothing.")


def same_epoch_rows(results: pd.DataFrame) -> list[list[str]]:
    """For each REM arm whose entropy claim is tested but read at other epochs than +Q's: both arms' entropy at their
    last epoch, paired by seed, marked as chosen after the data were seen (no verdict)."""
    done, seeds = finished_trials(results), arm_seed_map(results)
    out = []
    for (model, arm), mine in seeds.items():
        q = seeds.get((model, PLUS_Q))
        if q is None or not arm.thresholds_by_rem or not evaluated(q, mine) or any(
                (q.not_learned(), mine.not_learned(), q.not_routing(QUANTIZED), mine.not_routing(QUANTIZED),
                 q.at_ceiling())):
            continue
        last = {a: arm_rows(done, model, a).groupby("train.seed").tail(1).set_index("train.seed")
                for a in (PLUS_Q, arm)}
        common = sorted(set(last[PLUS_Q].index) & set(last[arm].index))
        epochs = sorted({int(last[a].loc[s, "epoch"]) for a in last for s in common})
        a, b = (last[x].loc[common, "entropy/mean"].to_numpy(dtype=float) for x in (PLUS_Q, arm))
        if len(common) < 2:
            continue
        d = paired(a, b, direction=-1)
        diffs = ", ".join(f"{v:+.3f}" for v in b - a)
        out.append([f"{model} {arm.label}", f"{CLAIMS['entropy']}: both arms at their last epoch "
                    f"({', '.join(map(str, epochs))}), paired by seed ({AFTER_THE_DATA})",
                    f"{a.mean():.3f} → {b.mean():.3f} bits; per seed {diffs}",
                    f"{d.text(3)}, n = {d.n} pairs; one-sided paired t p = {d.p:.3g}, exact sign-flip p = "
                    f"{d.p_sign_flip:.3g}", f"no verdict: {AFTER_THE_DATA}"])
    return out


def abstract_claims_table(title: str, spreads: dict, seeds: dict, later: list[list[str]] | None = None) -> Table:
    """The abstract's claims for every model of `spreads` (`final_spreads`; `seeds`: `arm_seed_map`), then the rows
    `later` adds (`same_epoch_rows`: no verdict, no part of the family)."""
    models = sorted({m for m, _ in spreads})
    rows = [row for m in models for row in claim_rows(m, spreads, seeds)] + list(later or [])
    return claims_table(title, ["Arm", "Claim", "Measured (mean ± std over seeds)", *VERDICT_HEADER], rows,
                        notes=[RULE_NOTE, PRECONDITIONS_NOTE, *([SAME_EPOCH_NOTE] if later else [])])
