"""Robustness of one trained model: its test metrics with the test images transformed by each family at each
strength (`rem.analysis.robustness.families`), evaluated exactly as the trial's final evaluation evaluates the test split
(its weights, batch size, precision, +Q forward and coupling levels), so every identity row equals that
evaluation. Each row records the test accuracy and loss and, for a model with routing couplings, the parse-tree
entropy (mean and REM's std over classes), the parse trees and the per-image coupling entropy; a model without
couplings (a CNN baseline) has no such columns, never zeros.

The shape of `rem.analysis.sparsity_curve`: a frame per model, its flat metrics `robust/<family>/<strength>/<metric>`,
the same for a trial's final model, a saved model package, and a results table read back into long form.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import torch

from rem.analysis.robustness.families import IDENTITY, check_families, check_family_names, select_families
from rem.analysis.forwards import forwards, metric_name
from rem.analysis.robustness.transforms import transform_images
from rem.analysis.sources import long_form, package_evaluation, publish_table
from rem.config import Config
from rem.data.splits import Split
from rem.device import HOST
from rem.training.run import evaluate_split, final_model_on_test

ROUTING_METRICS = ("entropy/mean", "entropy/std", "parse_trees/total", "routing/coupling_entropy")
LABELS = ("family", "strength", "model.name", "epoch")  # the columns of a frame that are not metrics


def robustness(model: torch.nn.Module, cfg: Config, split: Split, transform, num_classes: int, *,
               families: dict | None = None, loss_kwargs: dict | None = None, seed: int | None = None,
               quantized: bool | None = None) -> pd.DataFrame:
    """One row per (family, strength): `split` transformed (all of it, once) and evaluated. `families` defaults
    to `eval.robust_families`, `seed` (affnist's per-image maps) to `eval.robust_seed`, `quantized` (the +Q
    forward) to `eval.final_quantized`."""
    families = check_families(cfg.eval.robust_families if families is None else families)
    quantized = cfg.eval.final_quantized if quantized is None else quantized
    seed = cfg.eval.robust_seed if seed is None else seed
    kwargs = loss_kwargs if loss_kwargs is not None else cfg.train.margin(0)
    untransformed: dict | None = None  # every family's identity is the same evaluation: run it once
    rows = []
    for family, strengths in families.items():
        for strength in strengths:
            identity = IDENTITY.get(family) == strength
            if identity and untransformed is not None:
                measured = untransformed
            else:
                images = transform_images(split.images, family, strength, seed=seed)
                measured = _measure(model, cfg, Split(images, split.labels), transform, num_classes, kwargs, quantized)
                del images  # freed before the next family's copy is made: one transformed split at a time
                untransformed = measured if identity else untransformed
            rows.append({"family": family, "strength": strength, **measured})
    return pd.DataFrame(rows)


def _measure(model, cfg: Config, split: Split, transform, num_classes: int, loss_kwargs: dict, quantized: bool) -> dict:
    res = evaluate_split(cfg, model, split, transform, num_classes, quantized=quantized,
                         parse_trees=True, loss_kwargs=loss_kwargs)
    out = {"test/acc": res["acc"], "test/loss": res["loss"], "n_images": res["n_images"]}
    out.update({k: float(res[k]) for k in ROUTING_METRICS if k in res})  # absent without couplings
    return out


def robust_metrics(frame: pd.DataFrame, segment: str = "", prefix: str = "robust") -> dict[str, float]:
    """A robustness frame as flat metrics, `robust/<family>/<strength:g>/<metric>` (`.../plain/<metric>` for the
    plain forward measured beside +Q), the form a trial's history, MLflow and the results table carry; a metric
    the model does not have (NaN) is left out. The equivariance frame's metrics are named alike (`prefix`)."""
    out = {}
    for row in frame.to_dict("records"):
        stem = f"{prefix}/{row['family']}/{row['strength']:g}"
        out.update({metric_name(stem, k, segment): float(v) for k, v in row.items()
                    if k not in LABELS and isinstance(v, (int, float)) and not pd.isna(v)})
    return out


def trial_robustness(run, metrics: dict) -> dict[str, float]:
    """The robustness of a trial's final model (`rem.training.run.TrainingRun`, its final `metrics`), on the first
    `eval.robust_images` test images, as `robust_metrics`: in the final evaluation's forward, and in the plain one
    beside it when that is +Q (`rem.analysis.forwards`)."""
    net, test = final_model_on_test(run, metrics, run.cfg.eval.robust_images)
    out = {}
    for forward in forwards(run.cfg):
        frame = robustness(net, run.cfg, test, run.transform, run.splits.spec.num_classes,
                           loss_kwargs=run.loss_kwargs, quantized=forward.quantized)
        out.update(robust_metrics(frame, forward.segment))
    return out


def robustness_for_package(package: dict, source: str, repo_root: Path, *, test_images: int = 0,
                           families: dict | list | None = None, seed: int | None = None,
                           device: torch.device = HOST) -> pd.DataFrame:
    """The robustness of a model package (`rem.tracking.model_store`): its trial's test split (the first `test_images` of
    it when > 0), read as the trial read it. `families`: {family: strengths}, or family names at the strengths of
    the package config's `eval.robust_families` (defaults for one it lacks), or None: all of those; `seed`
    defaults to the package config's, so the trial's own numbers are reproduced."""
    if families is not None and not isinstance(families, dict):
        check_family_names(families)  # before the data is read
    ev = package_evaluation(package, source, repo_root, test_images=test_images, device=device)
    if families is not None and not isinstance(families, dict):
        families = select_families(ev.cfg.eval.robust_families, families)
    frame = robustness(ev.model, ev.cfg, ev.test, ev.transform, ev.num_classes, families=families,
                       loss_kwargs=ev.loss_kwargs, seed=seed)
    frame.insert(0, "model.name", ev.cfg.model.name)
    frame.insert(1, "epoch", ev.epoch)
    return frame


ROBUST_COLUMN = re.compile(r"^robust/(?P<family>[a-z_]+)/(?P<strength>[-+0-9.e]+)/(?P<metric>.+)$")


def robust_from_results(rows: pd.DataFrame, keep=("trial_key", "model.name", "variant", "train.seed")) -> pd.DataFrame:
    """The robustness a results table's rows carry (`robust_metrics` columns), back in long form: one row per
    trial, family and strength, with the `keep` columns that exist; empty when no trial recorded any."""
    return long_form(rows, ROBUST_COLUMN, ("family", "strength"), keep)


def publish_robustness(frame: pd.DataFrame, out: Path, source: str, run_id: str | None = None,
                       tracking_uri: str | None = None) -> list[Path]:
    """The robustness frame as Parquet, CSV and a figure under `out`; with `run_id`, the same logged to that MLflow
    run (the files as artifacts under robustness/, the points as `robust_metrics`)."""
    from rem.report.figures.robustness import robustness_figure

    labelled = frame.assign(series=str(frame["model.name"].iloc[0]))
    return publish_table(frame, out, "robustness",
                         lambda path: robustness_figure(labelled, path, f"{source}: transformed test images"),
                         robust_metrics(frame), run_id, tracking_uri)
