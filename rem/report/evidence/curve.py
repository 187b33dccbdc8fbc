"""The evidence page's mechanism curve: at what sparsity does CapsNet's routing entropy start to fall when its
trained weights are pruned by magnitude, and what is the entropy made of there?

Read from the curves the trials recorded with their final evaluation (`eval.sparsity_curve`, columns
`curve/<scope>/<target>/<metric>` of the results table), so the committed Parquet regenerates every number.
"""

from __future__ import annotations

import pandas as pd

from rem.analysis.sparsity_curve import curves_from_results
from rem.report.evidence.tables import METRICS, Spread, direction, spread
from rem.report.render import Table
from rem.results.frames import last_rows
from rem.results.variants import ranked

# curve column -> (label, scale, digits): the final table's, in the curve's order
COLUMNS = {c: METRICS[c] for c in ("test/acc", "entropy/mean", "parse_trees/total", "routing/coupling_entropy",
                                   "routing/dead_capsules", "sparsity", "sparsity/votes.weight")}
SCOPES = {"global": "every REM tensor", "class_capsules": "W only", "primary_conv": "primary conv only"}
ENTROPY_RESOLUTION = 1e-3  # the tables print entropy to 3 decimals: smaller differences are not called


def trial_curves(results: pd.DataFrame) -> pd.DataFrame:
    """Every finished trial's recorded curve in long form (trial, model, variant, seed, scope, target, metrics)."""
    return curves_from_results(last_rows(results), keep=("trial_key", "model.name", "variant", "arm_rank", "train.seed"))


def point_spreads(curves: pd.DataFrame, model: str, variant: str, scope: str) -> dict[float, dict[str, Spread]]:
    """Per target sparsity: each column's mean ± std over the arm's seeds."""
    rows = curves[(curves["model.name"].astype(str) == model) & (curves["variant"] == variant) & (curves["scope"] == scope)]
    return {float(t): {c: spread(g[c] if c in g else [], scale) for c, (_, scale, _) in COLUMNS.items()}
            for t, g in rows.groupby("target")}


def onset(points: dict[float, dict[str, Spread]]) -> float | None:
    """The smallest target at which the entropy is below the unpruned model's by more than the seed spread."""
    base = points.get(0.0)
    if base is None:
        return None
    return next((t for t, p in sorted(points.items())
                 if t > 0 and direction(base["entropy/mean"], p["entropy/mean"], ENTROPY_RESOLUTION) == -1), None)


def curve_table(curves: pd.DataFrame, model: str, variant: str) -> Table:
    rows = []
    for scope, name in SCOPES.items():
        for target, p in point_spreads(curves, model, variant, scope).items():
            rows.append([name, f"{target:g}", *(p[c].text(d) for c, (_, _, d) in COLUMNS.items())])
    images = int(curves["n_images"].max()) if "n_images" in curves and not curves.empty else 0
    return Table(f"{model} {variant}: its final models pruned by magnitude, without retraining",
                 ["Pruned", "Target (%)", *(label for label, _, _ in COLUMNS.values())], rows,
                 notes=[f"The first {images} test images, the final evaluation's weights and +Q forward (the 0 % row is "
                        "that evaluation on these images). Mean ± std over seeds."])


def onset_rows(curves: pd.DataFrame, model: str, variant: str) -> list[list[str]]:
    """Per scope: where the entropy starts to fall (or that it does not up to the last target), with the
    accuracy, W sparsity and routing there."""
    out = []
    for scope, name in SCOPES.items():
        points = point_spreads(curves, model, variant, scope)
        if 0.0 not in points:
            continue
        base, at = points[0.0], onset(points)
        question = f"{model} {variant}: sparsity at which the entropy starts to fall, pruning {name}"
        if at is None:
            last = max(points)
            out.append([question, f"no fall up to {last:g} %: {base['entropy/mean'].text(3)} → "
                        f"{points[last]['entropy/mean'].text(3)} bits, accuracy {points[last]['test/acc'].text(1)} %",
                        "does not fall"])
            continue
        p = points[at]
        out.append([question, f"{at:g} % ({p['sparsity'].text(1)} % global, {p['sparsity/votes.weight'].text(1)} % of W): "
                    f"{base['entropy/mean'].text(3)} → {p['entropy/mean'].text(3)} bits; accuracy "
                    f"{base['test/acc'].text(1)} → {p['test/acc'].text(1)} %; coupling entropy "
                    f"{p['routing/coupling_entropy'].text(4)} bits, dead capsules {p['routing/dead_capsules'].text(1)} %",
                    f"falls from {at:g} %"])
    return out


def curve_variants(curves: pd.DataFrame, model: str) -> list[str]:
    if curves.empty:
        return []
    mine = curves[curves["model.name"].astype(str) == model]
    return ranked(mine["variant"], mine)


def curve_tables(results: pd.DataFrame) -> dict[str, Table]:
    """`curve_<model>.md`: the onset verdicts, then each variant's curve table; empty without recorded curves."""
    curves = trial_curves(results)
    out = {}
    for model in sorted(set(curves["model.name"].astype(str))) if not curves.empty else []:
        variants = curve_variants(curves, model)
        onsets = Table(f"{model}: where the entropy falls as magnitude pruning removes more (no retraining)",
                       ["Question", "Measured (mean ± std over seeds)", "Here"],
                       [r for v in variants for r in onset_rows(curves, model, v)],
                       notes=["'falls': the entropy is below the unpruned model's by more than the combined seed "
                              f"spread (and more than {ENTROPY_RESOLUTION:g} bits)."])
        out[f"curve_{model}"] = [onsets, *(curve_table(curves, model, v) for v in variants)]
    return out
