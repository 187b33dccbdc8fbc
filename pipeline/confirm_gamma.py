"""Publish the confirmatory γ-CapsNet study (profile `confirm_gamma`) under reports/evidence/confirm-gamma/: REM's
entropy claim decided by the paired design its profile committed before any trial ran (rem.report.sequential), one
pair (+Q and +REM of one seed) a sweep, each from a clean checkout of that commit.

    python -m pipeline.sweep -S profile=confirm_gamma -S 'sweep.grid=[<one seed's two arms>]'   # one pair a sweep
    python -m pipeline.confirm_gamma            # publish the first pair (reads results/sweep.parquet and MLflow)
    python -m pipeline.confirm_gamma --add      # join a later pair, run from the same commit
    python -m pipeline.confirm_gamma --render-only
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.publication import Publication
from rem.report.blocks import PublishedPage
from rem.report.figures.epochs import horizon_figure
from rem.report.figures.style import ceiling_line, colours, plt, save
from rem.report.arm_seeds import routing_dependence, trees_per_image
from rem.report.preconditions import (CEILING_TREES_PER_IMAGE, chance_accuracy, classes_of, did_not_learn, first,
                                      input_independent, routing_uniform)
from rem.report.registry import CONFIRM_PAGE, Context, report_table
from rem.report.render import Table
from rem.report.routing_measures import ceiling_bits
from rem.report.sequential import FAILED_PAIR_RULE, Design, design_of
from rem.report.spread import spread
from rem.report.verdicts import (ALPHA, HEADER as VERDICT_HEADER, MIN_SEEDS, VerdictCell, claims_table,
                                 paired, paired_verdict)
from rem.results.frames import final_value, last_rows

FOLDER = Path("reports/evidence/confirm-gamma")
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


@report_table("confirm-primary", "The primary endpoint, by the committed rule", pages={CONFIRM_PAGE: 10},
              file="primary")
def primary_table(frame: pd.DataFrame, context: Context) -> Table:
    pairs = context.once(pairs_of)
    design, ref, new = pairs.design, pairs.design.reference, pairs.design.treatment
    a, b = pairs.values(ref, design.metric), pairs.values(new, design.metric)
    reason = not_tested(pairs, str(frame["data.dataset"].iloc[0]))
    verdict, d = design.decide(list(a), list(b))
    at_look = any(look <= len(a) for look in design.looks)  # preconditions decide too: at the looks only
    text = f"not tested: {reason}" if reason and at_look else verdict.text()
    standing = f"at the next look it would read 'not tested: {reason}'" if reason else "they hold so far"
    measured = "–" if d is None else (f"{d.text(3)} bits, n = {d.n} pairs; one-sided paired t p = {d.p:.3g}, exact "
                                      f"sign-flip p = {d.p_sign_flip:.3g}")
    looks = "; ".join(f"{n} pairs: p <= {p:g}" for n, p in zip(design.looks, design.nominal_p))
    endpoint = str(frame["report.primary_endpoint"].iloc[0]) if "report.primary_endpoint" in frame \
        else "not recorded in sweep.parquet"
    return Table("The primary endpoint, by the committed rule", [
        "Endpoint", "Pairs in", f"{label(new)} - {label(ref)} [95 % CI], tests", "Boundaries", "Verdict"],
        [[endpoint, f"{len(a)} of {design.pairs} committed", measured, looks, text]], notes=[
        f"The committed rule (report.sequential, rem.report.sequential): {design.rule_text(ARM_LABELS)}. Between the "
        f"looks the verdict reads 'undecided (n = k of {design.pairs} committed pairs; decided at "
        f"{design.looks_text()} only)' whatever the pairs show. The interval is the paired t's two-sided 95 % "
        "interval, shown for reading only: the decision is the one-sided test's at the look. The exact sign-flip p "
        "enumerates every sign of the pairs' differences, beside the t-test, not instead of it. A failed pair: "
        f"{FAILED_PAIR_RULE}. The house's standing "
        "preconditions (rem.report.preconditions: routing leaves uniform and depends on the image within a class, "
        "the reference arm below the ceiling), read over the counted pairs at a look like the test, make it 'not "
        f"tested' where one fails; today {standing}."])


@report_table("confirm-pairs", "Every pair", pages={CONFIRM_PAGE: 20}, file="pairs")
def pairs_table(frame: pd.DataFrame, context: Context) -> Table:
    pairs = context.once(pairs_of)
    ref, new, metric = pairs.design.reference, pairs.design.treatment, pairs.design.metric
    rows = []
    for seed, row in pairs.table.iterrows():
        rows.append([str(int(seed)), f"{row[f'{ref}/{metric}']:.3f}", f"{row[f'{new}/{metric}']:.3f}",
                     f"{row[f'{new}/{metric}'] - row[f'{ref}/{metric}']:+.3f}",
                     f"{row[f'{ref}/parse_trees/total']:,.0f}", f"{row[f'{new}/parse_trees/total']:,.0f}",
                     f"{100 * row[f'{ref}/test/acc']:.2f}", f"{100 * row[f'{new}/test/acc']:.2f}",
                     f"{row[f'{new}/sparsity']:.1f}",
                     f"{int(row[f'{ref}/checkpoint_epoch'])} / {int(row[f'{new}/checkpoint_epoch'])}",
                     "yes" if row["counts"] else f"no: {row['why']}"])
    q, r = label(ref), label(new)
    return Table("Every pair", ["Seed", f"{q} entropy (bits)", f"{r} entropy (bits)", "Difference (bits)",
                                f"{q} trees", f"{r} trees", f"{q} acc. (%)", f"{r} acc. (%)", f"{r} sparsity (%)",
                                "Read at epoch", "Counted"], rows, notes=[
        "Both arms of a seed start from the same weights and see the same batches (the seed is set before the model is "
        "built; each epoch's batches come from a generator seeded by seed and epoch: "
        "tests/training/test_paired_start.py), and both are read at the last epoch of the fixed budget. Entropy: "
        "REM's, the mean over classes of each class's parse-tree entropy at REM's K = 6, on all 10,000 test images."])


@report_table("confirm-secondary", "Secondary measures: no weight on the verdict", pages={CONFIRM_PAGE: 30},
              file="secondary")
def secondary_table(frame: pd.DataFrame, context: Context) -> Table:
    pairs = context.once(pairs_of)
    ref, new, direction = pairs.design.reference, pairs.design.treatment, pairs.design.direction
    rows = []
    for column, name, digits in SECONDARY:
        a, b = pairs.values(ref, column), pairs.values(new, column)
        keep = ~(np.isnan(a) | np.isnan(b))  # a pair with no colliding tree in an arm has no collision entropy
        a, b = a[keep], b[keep]
        interval = paired(a, b, direction).text(digits) + f", n = {len(a)} pairs" if len(a) >= 2 else "–"
        verdict = paired_verdict(a, b, direction)
        rows.append([name, spread(pd.Series(a)).text(digits), spread(pd.Series(b)).text(digits), interval,
                     VerdictCell(verdict, digits, 1)])
    q, r = label(ref), label(new)
    side = "lower" if direction < 0 else "higher"
    return claims_table("Secondary measures: no weight on the verdict", [
        "Measure", f"{q} (mean ± std over pairs)", f"{r}", f"{r} - {q} [95 % CI], n", VERDICT_HEADER[1]], rows, notes=[
        f"Each claims {r} {side} than {q}, by a one-sided paired t-test at α = {ALPHA:g} on the counted pairs, "
        f"with fewer than {MIN_SEEDS} pairs undecided; the committed design gives them no weight. K = 5 and K = 7 key "
        "the same couplings REM's K = 6 key reads, with bin edges away from the uniform coupling 0.1 on which K = 6 "
        "puts an edge. The collision entropy is a lower bound on the Shannon entropy that the ceiling does not cap; "
        "each class's count profile (keys seen once, twice, ...) is in sweep.parquet (collisions/class_<j>/seen_<m>)."])


@report_table("confirm-routing", "Where the keys sit and what routing follows", pages={CONFIRM_PAGE: 35},
              file="routing")
def routing_table(frame: pd.DataFrame, context: Context) -> Table:
    pairs = context.once(pairs_of)
    rows = []
    for column, name, scale, digits in DESCRIPTIVE:
        rows.append([name, *(spread(pd.Series(pairs.values(arm, column)), scale).text(digits)
                             for arm in (pairs.design.reference, pairs.design.treatment))])
    return Table("Where the keys sit and what routing follows", [
        "Measure (descriptive, no claim)", *(f"{label(a)} (mean ± std over pairs)"
                                             for a in (pairs.design.reference, pairs.design.treatment))], rows, notes=[
        "At K = 6 a coupling of exactly 0.1 (uniform over 10 classes) sits on a bin edge, and +Q's forward rounds it "
        "down to 0: the share of keyed couplings within 0.01 of an edge says how many trees, and merges, may be "
        "couplings crossing an edge. Input dependence within a class, I(X; c_i | Y) with Y the predicted class REM's "
        "entropy groups images by, is what the routing precondition reads."])


def paired_figure(pairs: Pairs, path: Path) -> Path:
    """Each pair's two entropies joined by a line, with each arm's ceiling dashed."""
    ref, new, metric = pairs.design.reference, pairs.design.treatment, pairs.design.metric
    fig, ax = plt.subplots(figsize=(5.5, 4.2), constrained_layout=True)
    palette = colours(["counted", "replaced"])
    for seed, row in pairs.table.iterrows():
        ax.plot([0, 1], [row[f"{ref}/{metric}"], row[f"{new}/{metric}"]], marker="o",
                color=palette["counted" if row["counts"] else "replaced"], alpha=0.8)
        ax.annotate(f"s{int(seed)}", (1.02, row[f"{new}/{metric}"]), fontsize=7)
    ceiling_line(ax, [0, 1], [pairs.table[f"{ref}/ceiling"].mean(), pairs.table[f"{new}/ceiling"].mean()])
    ax.set_xticks([0, 1], [label(ref), label(new)])
    ax.set_xlim(-0.2, 1.25)
    ax.set_ylabel("REM's entropy, K = 6 (bits)")
    ax.legend(fontsize=7, loc="lower left")
    ax.grid(alpha=0.3)
    ax.set_title(f"γ-CapsNet: each pair at the last epoch ({len(pairs.counted)} of {pairs.design.pairs} committed)",
                 fontsize=9)
    return save(fig, path)


def draw(results: pd.DataFrame, figures: Path) -> list[Path]:
    """The pairs side by side, and every trial epoch by epoch (results table only)."""
    return [paired_figure(pairs_of(results), figures / "pairs_gamma_capsnet.png"),
            horizon_figure(results, "gamma_capsnet", figures / "epochs_gamma_capsnet.png")]


def heading(done: pd.DataFrame) -> tuple[str, str]:
    design = design_of(done)
    seeds = sorted(int(s) for s in done["train.seed"].unique())
    cap = int(done["train.epochs"].max())
    return ("REM's entropy claim on γ-CapsNet, confirmatory: a paired study committed before it ran",
            f"gamma_capsnet on {', '.join(sorted(done['data.dataset'].astype(str).unique()))}, +Q against +REM from "
            f"the same start, seeds {', '.join(map(str, seeds))} ({done['trial_key'].nunique()} finished trials; "
            f"{design.pairs} pairs committed, decided at {design.looks_text()}), each arm read at the last of a fixed "
            f"budget of {cap} epochs")


def not_run() -> str:
    return ("# REM's entropy claim on γ-CapsNet, confirmatory\n\nNo pair is published yet. The plan is the profile "
            "`confirm_gamma` in params.yaml; run a pair with `python -m pipeline.sweep -S profile=confirm_gamma -S "
            "'sweep.grid=[...]'` from a clean checkout of the commit that added it, then `python -m "
            "pipeline.confirm_gamma`.\n")


PAGE = PublishedPage(CONFIRM_PAGE, "confirm_gamma", heading, new_sentence=True)
CONFIRM_GAMMA = Publication("confirm_gamma", partial(PAGE.write, draw=draw), folder=FOLDER, not_run=not_run,
                            by_sweep=True)


def main(argv: list[str] | None = None) -> int:
    return CONFIRM_GAMMA.main(argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
