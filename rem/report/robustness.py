"""Robustness tables: each arm under the transformation families its trials recorded (`robust/<family>/<strength>/...`
columns); "±30°" is a trial's mean over -30° and +30°, then the mean ± std over seeds."""

from __future__ import annotations

import pandas as pd

from rem.analysis.forwards import PLAIN
from rem.analysis.robustness.evaluation import robust_from_results
from rem.report.protocol import viewpoint_table
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.spread import Spread, spread
from rem.report.tables import MISSING, NOT_APPLICABLE, aggregate, pm
from rem.results.arms import PLUS_Q, Arm
from rem.results.frames import arm_rows, arms as frame_arms, last_rows
from rem.results.variants import routed

KEEP = ("trial_key", "data.dataset", "model.name", "arm", "arm_key", "variant", "arm_rank", "train.seed",
        "final/quantized")
# (family, strengths averaged per trial, column label): the headline columns, each shown when the sweep ran it
HEADLINE = (
    ("rotation", (-30.0, 30.0), "Rotation ±30°"),
    ("rotation", (-60.0, 60.0), "Rotation ±60°"),
    ("scale", (0.8,), "Scale 0.8"),
    ("shear", (-0.2, 0.2), "Shear ±0.2"),
    ("translation", (-4.0, 4.0), "Shift ±4 px"),
    ("affnist", (1.0,), "affNIST-style affine"),
)
IDENTITY_POINTS = (("rotation", 0.0), ("scale", 1.0), ("shear", 0.0), ("translation", 0.0))


def robustness_points(results: pd.DataFrame) -> pd.DataFrame:
    """Every finished trial's robustness points in long form, with `plain/<metric>` where it has a plain forward."""
    return with_plain_forward(robust_from_results(last_rows(results), keep=KEEP))


def final_was_plain(points: pd.DataFrame) -> pd.Series:
    """Per row: whether the trial's final forward was plain (a CNN, or `eval.final_quantized: false`)."""
    quantized = (points["final/quantized"].fillna(1.0) if "final/quantized" in points
                 else pd.Series(1.0, index=points.index))
    return ~pd.Series([routed(str(m)) for m in points["model.name"]], index=points.index) | (quantized == 0)


def with_plain_forward(points: pd.DataFrame) -> pd.DataFrame:
    """`points` with each metric copied to `plain/<metric>` where the final forward was plain."""
    if points.empty:
        return points
    plain = final_was_plain(points)
    metrics = [c for c in points.columns if c not in (*KEEP, "family", "strength") and not c.startswith(f"{PLAIN}/")]
    copies = {f"{PLAIN}/{m}": points[m].where(plain) for m in metrics}
    for name, values in copies.items():
        copies[name] = points[name].fillna(values) if name in points else values
    return points.assign(**copies)


def per_trial(points: pd.DataFrame, family: str, strengths, metric: str) -> pd.Series:
    """trial_key -> the mean of `metric` over `strengths` of `family` (NaN where a trial lacks one of them)."""
    wanted = points[(points["family"] == family) & points["strength"].isin([float(s) for s in strengths])]
    if wanted.empty or metric not in wanted:
        return pd.Series(dtype="float64")
    counts = wanted.groupby("trial_key")[metric].count()
    means = wanted.groupby("trial_key")[metric].mean()
    return means[counts == len(set(strengths))]


def clean(points: pd.DataFrame, metric: str) -> pd.Series:
    """trial_key -> `metric` of the untransformed images (any family's identity strength: the same images)."""
    for family, strength in IDENTITY_POINTS:
        found = per_trial(points, family, (strength,), metric)
        if not found.empty:
            return found
    return pd.Series(dtype="float64")


def arms(points: pd.DataFrame, which=lambda arm: True) -> list[tuple[str, Arm]]:
    """(model, arm) pairs of the arms `which` accepts, in table order."""
    return [(model, arm) for model, arm in frame_arms(points) if which(arm)]


def capsule_arms(points: pd.DataFrame) -> list[str]:
    """The capsule models with an unpruned, unablated (+Q) arm, in name order."""
    return sorted({str(m) for m, a in zip(points["model.name"], points["arm"]) if a == PLUS_Q and routed(str(m))})


def baseline_arms(points: pd.DataFrame) -> list[str]:
    """The CNN baselines (models without routing), in name order."""
    return sorted({str(m) for m in points["model.name"] if not routed(str(m))})


def arm_trials(points: pd.DataFrame, model: str, arm: Arm):
    return arm_rows(points, model, arm)["trial_key"].unique()


def arm_spread(values: pd.Series, points: pd.DataFrame, model: str, arm: Arm, scale: float) -> Spread:
    return spread(values.reindex(arm_trials(points, model, arm)).dropna(), scale)


def shown_headline(points: pd.DataFrame, metric: str = "test/acc") -> list[tuple[str, tuple, str]]:
    """The `HEADLINE` transforms whose `metric` the points hold."""
    return [h for h in HEADLINE if not per_trial(points, h[0], h[1], metric).empty]


def cell(model: str, value: Spread, digits: int, routing_metric: bool) -> str:
    if routing_metric and not routed(model):
        return NOT_APPLICABLE
    return value.text(digits)


# Datasets whose test sets are real geometric change, shown beside the generated transforms where the sweep ran them
PROTOCOL_DATASETS = {"affnist": "affNIST test set", viewpoint_table("azimuth"): "smallNORB novel azimuths",
                     viewpoint_table("elevation"): "smallNORB novel elevations"}


def protocol_accuracy(rows) -> dict[str, dict[tuple[str, Arm], str]]:
    """column label -> {(model, arm): test accuracy} of the protocol datasets among `rows` (`tables.aggregate`)."""
    found: dict[str, dict[tuple[str, Arm], str]] = {}
    for row in rows:
        if row.dataset in PROTOCOL_DATASETS and row.seeds:
            found.setdefault(PROTOCOL_DATASETS[row.dataset], {})[(row.model, row.arm)] = pm(row.acc_mean, row.acc_std)
    return found


def robustness_table(points: pd.DataFrame, dataset: str, protocols: dict | None = None) -> Table:
    """Accuracy and entropy on clean and transformed test images per arm, `protocol_accuracy` beside them."""
    protocols = protocols or {}
    points = points[points["data.dataset"].astype(str) == dataset]
    headline = shown_headline(points)
    acc_clean, ent_clean = clean(points, "test/acc"), clean(points, "entropy/mean")
    ent_affine = per_trial(points, "affnist", (1.0,), "entropy/mean")
    affine = any(family == "affnist" for family, _, _ in headline)
    rows = []
    for model, arm in arms(points):
        seeds = arm_rows(points, model, arm)["train.seed"]
        row = [model, arm.label, str(seeds.nunique()),
               cell(model, arm_spread(acc_clean, points, model, arm, 100), 2, False)]
        row += [cell(model, arm_spread(per_trial(points, f, s, "test/acc"), points, model, arm, 100), 2, False)
                for f, s, _ in headline]
        row += [cell(model, arm_spread(ent_clean, points, model, arm, 1), 3, True)]
        if affine:
            row += [cell(model, arm_spread(ent_affine, points, model, arm, 1), 3, True)]
        row += [found.get((model, arm), MISSING) for found in protocols.values()]
        rows.append(row)
    header = ["Model", "Variant", "Seeds", "Clean acc. (%)", *(f"{label} (%)" for _, _, label in headline),
              "Entropy clean (bits)", *(["Entropy affNIST-style (bits)"] if affine else []),
              *(f"{label} (%)" for label in protocols)]
    images = int(points["n_images"].max()) if "n_images" in points and not points.empty else 0
    return Table(f"{dataset}: robustness to geometric change", header, rows, notes=[
        f"Each trial's final model on its first {images} test images, transformed "
        "(rem/analysis/robustness/families.py: rotation about the centre, zoom, horizontal shear, diagonal shift "
        "with zero fill, and one seeded random affine map per image drawn as affNIST draws them); never trained on "
        "these transforms. ±30° is the mean of -30° and +30° per trial. Mean ± sample std (ddof 1) over seeds. n/a: "
        "a model without routing has no parse trees. affNIST / smallNORB columns, where the sweep ran them: the "
        "same model and variant trained on that protocol's training set and tested on its real transformed / "
        "novel-viewpoint test set."])


def drop(points: pd.DataFrame, family: str, strengths, metric: str = "test/acc") -> pd.Series:
    """trial_key -> `metric` lost to the transform against the trial's own clean value."""
    return (clean(points, metric) - per_trial(points, family, strengths, metric)).dropna()


def dataset_points(context: Context, dataset: str) -> pd.DataFrame | None:
    """The results' `robustness_points` when `dataset`'s trials recorded some, else None."""
    points = context.once(robustness_points)
    return points if not points.empty and (points["data.dataset"].astype(str) == dataset).any() else None


@report_table("robustness", "Robustness to geometric change",
              per="data.dataset", file="robustness_{group}", figures=("robustness_{group}.png",))
def robustness_section(frame: pd.DataFrame, context: Context, dataset: str) -> Table | None:
    points = dataset_points(context, dataset)
    return None if points is None else robustness_table(points, dataset, protocol_accuracy(context.once(aggregate)))
