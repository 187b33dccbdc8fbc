"""The confirmatory γ-CapsNet page's own tables (reports/evidence/confirm-gamma/README.md): REM's entropy claim decided
by the paired design its profile committed before any trial ran (rem.report.sequential)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.studies.confirm_gamma.pairs import ARM_LABELS, DESCRIPTIVE, SECONDARY, label, not_tested, pairs_of
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.sequential import FAILED_PAIR_RULE, design_of
from rem.report.spread import spread
from rem.report.verdicts import (
    ALPHA,
    HEADER as VERDICT_HEADER,
    MIN_SEEDS,
    VerdictCell,
    claims_table,
    paired,
    paired_verdict,
)


@report_table("confirm-primary", "The primary endpoint, by the committed rule",
              file="primary")
def primary_table(frame: pd.DataFrame, context: Context) -> Table:
    pairs = context.once(pairs_of)
    design, ref, new = pairs.design, pairs.design.reference, pairs.design.treatment
    a, b = pairs.values(ref, design.metric), pairs.values(new, design.metric)
    reason = not_tested(pairs, str(frame["data.dataset"].iloc[0]))
    verdict, d = design.decide(list(a), list(b))
    at_look = any(look <= len(a) for look in design.looks)  # preconditions decide too: at the looks only
    text = f"not tested: {reason}" if reason and at_look else verdict.text()
    if not reason:
        standing = "they hold so far"
    elif at_look:  # each check reads the worst counted pair: more pairs can only keep it failed
        standing = (f"one fails ({reason}), and since each reads the worst counted pair no later pair can lift it: "
                    "the verdict is final, and the remaining committed seeds are not run")
    else:
        standing = f"at the next look it would read 'not tested: {reason}'"
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


@report_table("confirm-pairs", "Every pair", file="pairs",
              figures=("pairs_gamma_capsnet.png", "epochs_gamma_capsnet.png"))
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


@report_table("confirm-secondary", "Secondary measures: no weight on the verdict",
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


@report_table("confirm-routing", "Where the keys sit and what routing follows",
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



def heading(done: pd.DataFrame) -> tuple[str, str]:
    design = design_of(done)
    seeds = sorted(int(s) for s in done["train.seed"].unique())
    cap = int(done["train.epochs"].max())
    return ("REM's entropy claim on γ-CapsNet, confirmatory: a paired study committed before it ran",
            f"gamma_capsnet on {', '.join(sorted(done['data.dataset'].astype(str).unique()))}, +Q against +REM from "
            f"the same start, seeds {', '.join(map(str, seeds))} ({done['trial_key'].nunique()} finished trials; "
            f"{design.pairs} pairs committed, decided at {design.looks_text()}), each arm read at the last of a fixed "
            f"budget of {cap} epochs")

