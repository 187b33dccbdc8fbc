"""The mechanism curve the evidence and horizon pages show: at what sparsity does the routing entropy start to fall when
a trained model is pruned by magnitude, read from the curves in the results table (`curve/<scope>/<target>/<metric>`).
"""

from __future__ import annotations

import pandas as pd

from rem.analysis.sparsity_curve import curves_from_results
from rem.report.preconditions import (
    KEPT_ACCURACY_POINTS,
    accuracy_lost,
    classes_of,
    first,
    input_independent,
    routing_uniform,
)
from rem.report.render import Table
from rem.report.spread import METRICS, Spread, model_arms, spread
from rem.report.verdicts import MIN_SEEDS, RULE_NOTE, Differs, Outcome, Verdict, decide, holm
from rem.results.arms import Arm
from rem.results.frames import arm_rows, last_rows

# curve column -> (label, scale, digits): the final table's, in the curve's order
COLUMNS = {c: METRICS[c] for c in ("test/acc", "entropy/mean", "parse_trees/total", "routing/coupling_entropy",
                                   "routing/dead_capsules", "sparsity", "sparsity/votes.weight")}
# Measures later runs' curves hold: shown where they do
LATER_COLUMNS = {"routing/input_dependence": ("Input dependence (bits)", 1.0, 4),
                 "entropy/k3_mean": ("Entropy at K = 3, secondary (bits)", 1.0, 3),
                 "entropy/kept_mean": ("Entropy over alive capsules (bits)", 1.0, 3)}


def shown_columns(curves: pd.DataFrame) -> dict[str, tuple[str, float, int]]:
    """The curve table's columns: the published ones, then each later measure the curves recorded."""
    return {**COLUMNS, **{c: v for c, v in LATER_COLUMNS.items() if c in curves and curves[c].notna().any()}}
SCOPES = {"global": "every REM tensor", "class_capsules": "W only", "primary_conv": "primary conv only"}


def trial_curves(results: pd.DataFrame) -> pd.DataFrame:
    """Every finished trial's recorded curve in long form (trial, model, arm, seed, scope, target, metrics)."""
    return curves_from_results(last_rows(results), keep=("trial_key", "data.dataset", "model.name", "arm", "arm_key",
                                                          "variant", "arm_rank", "train.seed"))


def point_spreads(curves: pd.DataFrame, model: str, arm: Arm, scope: str) -> dict[float, dict[str, Spread]]:
    """Per target sparsity: each column's mean ± std over the arm's seeds."""
    rows = arm_rows(curves, model, arm)
    rows = rows[rows["scope"] == scope]
    columns = {**shown_columns(curves), "n_images": ("Images", 1.0, 0)}
    return {float(t): {c: spread(g[c] if c in g else [], scale) for c, (_, scale, _) in columns.items()}
            for t, g in rows.groupby("target")}


def falls(base: dict[str, Spread], point: dict[str, Spread]):
    """The verdict on "the entropy at this target is lower than unpruned" (`rem.report.verdicts`)."""
    return decide(Differs(-1), base["entropy/mean"].values, point["entropy/mean"].values)


def kept_targets(points: dict[float, dict[str, Spread]]) -> list[float]:
    """The pruned targets whose mean accuracy stays within `KEPT_ACCURACY_POINTS` of the unpruned model's."""
    base = points[0.0]
    return [t for t in sorted(points) if t > 0
            and not accuracy_lost(base["test/acc"].values, points[t]["test/acc"].values)]


def kept_verdicts(points: dict[float, dict[str, Spread]]) -> dict[float, Verdict]:
    """"Lower than unpruned" at every target that keeps accuracy, corrected together as one family (`holm`): a
    curve reads several targets, and one of them falling by chance must not decide it."""
    targets = kept_targets(points)
    return dict(zip(targets, holm([falls(points[0.0], points[t]) for t in targets])))


def onset(points: dict[float, dict[str, Spread]], kept: bool = True) -> float | None:
    """The smallest target where `falls` is supported: among those that keep accuracy, after the family's
    correction, unless `kept=False` (then any target, each alone: where the entropy falls at all)."""
    if points.get(0.0) is None:
        return None
    if kept:
        return next((t for t, v in kept_verdicts(points).items() if v.outcome is Outcome.SUPPORTED), None)
    base = points[0.0]
    return next((t for t, p in sorted(points.items()) if t > 0 and falls(base, p).outcome is Outcome.SUPPORTED), None)


def rise(points: dict[float, dict[str, Spread]]) -> float | None:
    """The smallest target that keeps accuracy where the entropy is shown higher than unpruned (after the family's
    correction): the opposite of REM's mechanism."""
    return next((t for t, v in kept_verdicts(points).items() if v.outcome is Outcome.NOT_SUPPORTED), None)


def measured_at(base: dict[str, Spread], p: dict[str, Spread], target: float) -> str:
    return (f"{target:g} % ({p['sparsity'].text(1)} % global, {p['sparsity/votes.weight'].text(1)} % of W): "
            f"{base['entropy/mean'].text(3)} → {p['entropy/mean'].text(3)} bits; accuracy "
            f"{base['test/acc'].text(1)} → {p['test/acc'].text(1)} %; coupling entropy "
            f"{p['routing/coupling_entropy'].text(4)} bits, dead capsules {p['routing/dead_capsules'].text(1)} %")


def curve_table(curves: pd.DataFrame, model: str, arm: Arm) -> Table:
    rows, columns = [], shown_columns(curves)
    for scope, name in SCOPES.items():
        for target, p in point_spreads(curves, model, arm, scope).items():
            rows.append([name, f"{target:g}", *(p[c].text(d) for c, (_, _, d) in columns.items())])
    images = int(curves["n_images"].max()) if "n_images" in curves and not curves.empty else 0
    return Table(f"{model} {arm.label}: its final models pruned by magnitude, without retraining",
                 ["Pruned", "Target (%)", *(label for label, _, _ in columns.values())], rows,
                 notes=[f"The first {images} test images, the final evaluation's weights and +Q forward "
                        "(the 0 % row is that evaluation on these images). Mean ± sample std (ddof 1) over seeds."])


def onset_rows(curves: pd.DataFrame, model: str, arm: Arm) -> list[list[str]]:
    """Per scope: where the entropy starts to fall, with the accuracy, W sparsity and routing there."""
    out = []
    mine = arm_rows(curves, model, arm)
    dataset = str(mine["data.dataset"].iloc[0]) if "data.dataset" in mine and not mine.empty else ""
    for scope, name in SCOPES.items():
        points = point_spreads(curves, model, arm, scope)
        if 0.0 not in points:
            continue
        base, at = points[0.0], onset(points)
        named = f"{model} {arm.label}"
        question = f"{named}: sparsity at which the entropy starts to fall, pruning {name}"
        # Routing must route; the ceiling does not gate a curve, whose fall from it is what it looks for
        uniform = first(routing_uniform(named, base["routing/coupling_entropy"].values, classes_of(dataset), "+Q"),
                        input_independent(named, base.get("routing/input_dependence", spread([])).values)) \
            if dataset else None
        last, fell, rose = max(points), at if at is not None else onset(points, kept=False), rise(points)
        n = base["entropy/mean"].n
        if uniform:
            verdict = f"not tested: {uniform}"
        elif n < MIN_SEEDS:
            verdict = f"undecided (n = {n}, fewer than {MIN_SEEDS} seeds)"
        elif at is not None:
            verdict = f"supported: falls from {fell:g} %, accuracy kept"
        elif rose is not None:
            verdict = f"not supported: the entropy rises from {rose:g} %, accuracy kept"
        elif fell is not None:  # the first fall lost accuracy, and none that kept it is lower
            lost = accuracy_lost(base["test/acc"].values, points[fell]["test/acc"].values)
            verdict = f"undecided (it falls only where {lost}; no target that keeps accuracy is lower)"
        else:
            verdict = f"undecided (no target up to {last:g} % is shown lower)"
        shown = at if at is not None else rose if rose is not None else fell
        out.append([question, measured_at(base, points[shown], shown) if shown is not None else
                    f"no fall shown up to {last:g} %: {base['entropy/mean'].text(3)} → "
                    f"{points[last]['entropy/mean'].text(3)} bits, accuracy {points[last]['test/acc'].text(1)} %",
                    verdict])
    return out


def curve_tables(results: pd.DataFrame) -> dict[str, Table]:
    """`curve_<model>.md`: the onset verdicts, then each variant's curve table; empty without recorded curves."""
    curves = trial_curves(results)
    out = {}
    for model in sorted(set(curves["model.name"].astype(str))) if not curves.empty else []:
        variants = model_arms(curves, model)
        onsets = Table(f"{model}: where the entropy falls as magnitude pruning removes more (no retraining)",
                       ["Question", "Measured (mean ± std over seeds)", "Verdict"],
                       [r for v in variants for r in onset_rows(curves, model, v)],
                       notes=["'supported: falls from t %': the first target whose entropy is lower than the unpruned "
                              "model's by the verdict rule (a difference claim at every target; the unpruned model's "
                              "routing must have left uniform, else the fall is votes vanishing, not routing), among "
                              f"the targets whose mean accuracy stays within {KEPT_ACCURACY_POINTS:g} point of the "
                              "unpruned model's (trees merge trivially once a model stops classifying); 'not "
                              "supported: the entropy rises from t %': no such target is lower, and the first is "
                              "higher by the same rule. Each curve's targets that keep accuracy are one family, "
                              "corrected by Holm's method. The ceiling does not gate a curve: a fall from it, images "
                              "starting to share trees, is what the curve looks for.",
                              RULE_NOTE])
        out[f"curve_{model}"] = [onsets, *(curve_table(curves, model, v) for v in variants)]
    return out
