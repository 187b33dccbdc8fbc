"""The evidence page's own tables (reports/evidence/README.md): does REM do what its paper's abstract claims?"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from rem.report.abstract_claims import NEGLIGIBLE_POINTS, abstract_claims_table, arm_seed_map
from rem.report.arm_seeds import QUANTIZED, ArmSeeds, evaluation_note as evaluated
from rem.report.mechanism_curve import curve_tables
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.spread import METRICS, final_spreads, model_arms, spread
from rem.report.verdicts import (
    HEADER as VERDICT_HEADER,
    DerivedCell,
    Differs,
    NoWorse,
    Outcome,
    Verdict,
    claims_table,
    judged,
)
from rem.results.arms import PLUS_Q, Arm
from rem.results.frames import arm_rows, finished_trials

SEED_SPREAD_NOTE = ("Mean ± std over seeds of each trial's value, the std the sample standard deviation (ddof 1); the "
                    "'REM's ±' column is the paper's ±, the population std of the entropy over classes as REM computes "
                    "it, itself averaged over seeds.")
FIRST_EPOCH = {"train/loss": ("Train loss", 1.0, 4), "val/loss": ("Val. loss", 1.0, 4),
               "val/acc": ("Val. acc. (%)", 100.0, 2), "test/acc": ("Test acc. (%)", 100.0, 2)}


# Where the entropy drop comes from: polarised couplings or starved capsules, and REM against its parts alone
def routing_kind(arm: dict, seeds: ArmSeeds, lower_coupling: Verdict) -> str:
    """What a lower entropy is made of: structured routing, no routing (couplings at uniform), or undecided."""
    uniform = seeds.not_routing(QUANTIZED)
    if uniform:
        return f"no routing: {uniform}; dead capsules {arm['routing/dead_capsules'].text(1)} %"
    if lower_coupling.outcome is Outcome.SUPPORTED:
        return "structured routing (couplings left uniform and are more polarised than +Q's)"
    return "undecided (couplings left uniform, but not shown more polarised than +Q's)"


def arm_rows_against_q(model: str, variant: str, q: dict, arm: dict, q_seeds: ArmSeeds,
                       seeds: ArmSeeds) -> list[list[str]]:
    """`variant` (a label) against +Q: its entropy, its couplings' polarisation, its dead capsules."""
    e, c, d = "entropy/mean", "routing/coupling_entropy", "routing/dead_capsules"
    learned = (q_seeds.not_learned(), seeds.not_learned())
    entropy = judged(Differs(-1), q[e], arm[e], 3, *learned, q_seeds.not_routing(QUANTIZED),
                     seeds.not_routing(QUANTIZED), q_seeds.at_ceiling())
    coupling = judged(Differs(-1), q[c], arm[c], 4, *learned)
    rows = [[model, f"{variant}: entropy lower than +Q's", f"{q[e].text(3)} → {arm[e].text(3)} bits at "
             f"{arm['sparsity'].text(2)} % sparsity ({arm['sparsity/votes.weight'].text(2)} % of W)"
             f"{evaluated(q_seeds, seeds)}", *entropy],
            [model, f"{variant}: couplings more polarised (coupling entropy lower)",
             f"{q[c].text(4)} → {arm[c].text(4)} bits", *coupling],
            [model, f"{variant}: capsules starved (more dead input capsules)", f"{q[d].text(1)} → {arm[d].text(1)} %",
             *judged(Differs(+1), q[d], arm[d], 1, *learned)]]
    if arm[e].mean < q[e].mean:
        rows.append([model, f"{variant}: what the lower entropy is made of",
                     DerivedCell(coupling[1], lambda verdict: routing_kind(arm, seeds, verdict)), "–", "–"])
    return rows


def mechanism_rows(model: str, spreads: dict, seeds: dict) -> list[list[str]]:
    """Each REM-family arm against +Q, then the matched controls and shrinkage-only arms against their REM arm."""
    q = spreads.get((model, PLUS_Q))
    if q is None:
        return []
    rows = []
    family = [a for m, a in spreads if m == model and a.method == "rem"]  # +REM's arms and LOBSTER's alone
    for arm in sorted(family):
        rows += arm_rows_against_q(model, arm.label, q, spreads[(model, arm)], seeds[(model, PLUS_Q)],
                                   seeds[(model, arm)])
    return (rows + reference_rows(model, spreads, seeds, control_reference,
                                  "the same sparsity by magnitude: not pruning alone")
            + reference_rows(model, spreads, seeds, shrinkage_reference, "the same shrinkage, no threshold"))


def versus_rows(model: str, reference_arm: Arm, other_arm: Arm, spreads: dict, seeds: dict,
                why: str) -> list[list[str]]:
    """A REM arm against an arm that isolates one of its parts (`why`): entropy lower, accuracy no worse."""
    ref, alt = spreads[(model, reference_arm)], spreads[(model, other_arm)]
    ref_seeds, alt_seeds = seeds[(model, reference_arm)], seeds[(model, other_arm)]
    reference, other = reference_arm.label, other_arm.label
    e, a, s, w = "entropy/mean", "test/acc", "sparsity", "sparsity/votes.weight"
    learned = (ref_seeds.not_learned(), alt_seeds.not_learned())
    when = evaluated(alt_seeds, ref_seeds)
    return [[model, f"{reference}'s entropy lower than {other}'s ({why})",
             f"{other} {alt[e].text(3)} vs {reference} {ref[e].text(3)} bits at {alt[s].text(2)} vs {ref[s].text(2)} % "
             f"sparsity ({alt[w].text(2)} vs {ref[w].text(2)} % of W){when}",
             *judged(Differs(-1), alt[e], ref[e], 3, *learned, alt_seeds.not_routing(QUANTIZED),
                     ref_seeds.not_routing(QUANTIZED), alt_seeds.at_ceiling())],
            [model, f"{reference}'s accuracy no worse than {other}'s (margin {NEGLIGIBLE_POINTS:g} point; {why})",
             f"{other} {alt[a].text(2)} vs {reference} {ref[a].text(2)} %{when}",
             *judged(NoWorse(NEGLIGIBLE_POINTS), alt[a], ref[a], 2, *learned)]]


def control_reference(arm: Arm) -> Arm | None:
    """A matched control's REM arm (+IMP@REM W only -> +REM W only): the same sparsity, pruned by magnitude."""
    return replace(arm, method="rem", control_of="") if arm.control_of == "rem" else None


def shrinkage_reference(arm: Arm) -> Arm | None:
    """A shrinkage-only arm's REM arm of the same λ (LOBSTER λ×100 (no threshold) -> +REM λ×100)."""
    return replace(arm, shrinkage_only=False) if arm.shrinkage_only else None


def reference_rows(model: str, spreads: dict, seeds: dict, reference_of, why: str) -> list[list[str]]:
    """`versus_rows` for every arm of `model` that `reference_of` maps to a REM arm present in `spreads`."""
    rows = []
    for m, arm in sorted(spreads, key=lambda pair: pair[1]):
        reference = reference_of(arm) if m == model else None
        if reference and (model, reference) in spreads:
            rows += versus_rows(model, reference, arm, spreads, seeds, why)
    return rows


def entropy_drop_table(spreads: dict, seeds: dict) -> Table:
    """Every model's `mechanism_rows`, `spreads` from `final_spreads`, `seeds` from `arm_seed_map`."""
    rows = [r for m in sorted({m for m, _ in spreads}) for r in mechanism_rows(m, spreads, seeds)]
    return claims_table("Where the entropy drop comes from", ["Model", "Question", "Measured", *VERDICT_HEADER], rows)


@report_table("abstract-claims", "The abstract's claims against this run",
              file="claims")
def abstract_claims(frame: pd.DataFrame, context: Context) -> list[Table]:
    """The abstract's verdicts, where the entropy drop comes from, then each model's curve onsets."""
    spreads, seeds = context.once(final_spreads), context.once(arm_seed_map)
    onsets = [tables[0] for tables in context.once(curve_tables).values()]
    return [abstract_claims_table("The abstract's claims against this run", spreads, seeds),
            entropy_drop_table(spreads, seeds), *onsets]


@report_table("final", "Final evaluation, per architecture and variant")
def final_section(frame: pd.DataFrame, context: Context) -> Table:
    seeds = finished_trials(context.results).groupby(["model.name", "arm_key"])["train.seed"].nunique()
    rows = [[m, a.label, str(int(seeds[(m, a.key)])), *(s[c].text(METRICS[c][2]) for c in METRICS)]
            for (m, a), s in context.once(final_spreads).items()]
    return Table("Final evaluation, per architecture and variant", ["Model", "Variant", "Seeds",
                 *(label for label, _, _ in METRICS.values())], rows,
                 notes=["Each trial's final evaluation (+Q couplings; an unpruned trial's best-validation-loss epoch, "
                        "a pruned trial's last epoch).", SEED_SPREAD_NOTE])


@report_table("first-epoch", "First epoch of REM's recipe", file="first_epoch")
def first_epoch_section(frame: pd.DataFrame, context: Context) -> Table:
    """The unpruned arm's first epoch, per seed and over seeds."""
    done = finished_trials(context.results)
    first = done[(done["epoch"] == 1) & (done["arm_key"] == PLUS_Q.key)]
    rows = []
    for model, group in first.groupby("model.name"):
        for seed, row in group.set_index("train.seed").sort_index().iterrows():
            rows.append([str(model), str(int(seed)),
                         *(f"{scale * row[c]:.{d}f}" for c, (_, scale, d) in FIRST_EPOCH.items())])
        rows.append([str(model), "mean ± std",
                     *(spread(group[c], scale).text(d) for c, (_, scale, d) in FIRST_EPOCH.items())])
    return Table("First epoch of REM's recipe (unpruned, +Q)",
                 ["Model", "Seed", *(l for l, _, _ in FIRST_EPOCH.values())], rows)


@report_table("epochs", "Every epoch", per="model.name", file="epochs_{group}",
              figures=("epochs_{group}.png",))
def epochs_section(frame: pd.DataFrame, context: Context, model: str) -> Table:
    done = finished_trials(context.results)
    rows = []
    for arm in model_arms(done, model):
        for epoch, group in arm_rows(done, model, arm).groupby("epoch"):
            rows.append([arm.label, str(int(epoch)), *(spread(group[c] if c in group else [], scale).text(d)
                                                     for c, (_, scale, d) in METRICS.items())])
    return Table(f"{model}: every epoch", ["Variant", "Epoch", *(label for label, _, _ in METRICS.values())], rows,
                 notes=["Per-epoch metrics on the test split (entropy and parse trees: REM's K-level couplings).",
                        SEED_SPREAD_NOTE])


# The coupling histograms are drawn from checkpoints by the report stage: copied, not regenerated
@report_table("curve", "Pruned by magnitude without retraining", per="model.name",
              file="curve_{group}", figures=("curve_{group}.png", "couplings_{group}.png"))
def curve_section(frame: pd.DataFrame, context: Context, model: str) -> list[Table] | None:
    tables = context.once(curve_tables).get(f"curve_{model}")
    return None if tables is None else tables[1:]  # the onsets open the page, with the claims


def heading(done: pd.DataFrame) -> tuple[str, str]:
    epochs = ", ".join(f"{m} {int(e)}" for m, e in done.groupby("model.name")["epoch"].max().items())
    return ("Evidence: does REM do what its paper claims?",
            f"Fashion-MNIST, {done['trial_key'].nunique()} finished trials (epochs: {epochs}), REM's recipe")

