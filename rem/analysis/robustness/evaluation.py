"""Robustness of one trained model: its test metrics with the test images transformed by each family at each
strength (`rem.analysis.robustness.families`), evaluated exactly as the trial's final evaluation evaluates the test split
(its weights, batch size, precision, +Q forward and coupling levels), so every identity row equals that
evaluation. Each row records the test accuracy and loss and, for a model with routing couplings, the parse-tree
entropy (mean and REM's std over classes), the parse trees and the per-image coupling entropy; a model without
couplings (a CNN baseline) has no such columns, never zeros.

The shape of `rem.analysis.sparsity_curve`: a frame per model, its flat metrics `robust/<family>/<strength>/<metric>`,
the same for a trial's final model, a saved model (`robustness_of`), and a results table read back into long
form.
"""

from __future__ import annotations

from contextlib import nullcontext

import pandas as pd
import torch

from rem.analysis.model_on_test import ModelOnTest
from rem.analysis.points import KEEP, point_metrics, points_from_results
from rem.analysis.representations import Representations
from rem.analysis.robustness.families import IDENTITY, check_families, select_families
from rem.analysis.robustness.transforms import transform_images
from rem.config import Config
from rem.data.splits import Split
from rem.training.run import evaluate_split

ROUTING_METRICS = ("entropy/mean", "entropy/std", "parse_trees/total", "routing/coupling_entropy")


def robustness(model: torch.nn.Module, cfg: Config, split: Split, transform, num_classes: int, *,
               families: dict | None = None, loss_kwargs: dict | None = None, seed: int | None = None,
               quantized: bool | None = None, representations: dict | None = None) -> pd.DataFrame:
    """One row per (family, strength): `split` transformed (all of it, once) and evaluated. `families` defaults
    to `eval.robust_families`, `seed` (affnist's per-image maps) to `eval.robust_seed`, `quantized` (the +Q
    forward) to `eval.final_quantized`. `representations`: a dict that receives, per (family, strength), the
    representation of those images in that same pass (`rem.analysis.representations`: what equivariance compares)."""
    families = check_families(cfg.eval.robust_families if families is None else families)
    quantized = cfg.eval.final_quantized if quantized is None else quantized
    seed = cfg.eval.robust_seed if seed is None else seed
    kwargs = loss_kwargs if loss_kwargs is not None else cfg.train.margin(0)
    untransformed: tuple | None = None  # every family's identity is the same evaluation: run it once
    rows = []
    for family, strengths in families.items():
        for strength in strengths:
            identity = IDENTITY.get(family) == strength
            if identity and untransformed is not None:
                measured, seen = untransformed
            else:
                images = transform_images(split.images, family, strength, seed=seed)
                with Representations(model) if representations is not None else nullcontext() as seen:
                    measured = _measure(model, cfg, Split(images, split.labels), transform, num_classes, kwargs,
                                        quantized)
                del images  # freed before the next family's copy is made: one transformed split at a time
                untransformed = (measured, seen) if identity else untransformed
            if representations is not None:
                representations[(family, strength)] = seen.tensor()
            rows.append({"family": family, "strength": strength, **measured})
    return pd.DataFrame(rows)


def _measure(model, cfg: Config, split: Split, transform, num_classes: int, loss_kwargs: dict, quantized: bool) -> dict:
    res = evaluate_split(cfg, model, split, transform, num_classes, quantized=quantized,
                         parse_trees=True, loss_kwargs=loss_kwargs)
    out = {"test/acc": res["acc"], "test/loss": res["loss"], "n_images": res["n_images"]}
    out.update({k: float(res[k]) for k in ROUTING_METRICS if k in res})  # absent without couplings
    return out


def robust_metrics(frame: pd.DataFrame, segment: str = "") -> dict[str, float]:
    """A robustness frame as flat metrics, `robust/<family>/<strength:g>/<metric>` (`.../plain/<metric>` for the
    plain forward measured beside +Q); a metric the model does not have (NaN) is left out."""
    return point_metrics(frame, "robust", segment)


def robustness_of(trained: ModelOnTest, families: dict | list | None = None, seed: int | None = None) -> pd.DataFrame:
    """The robustness of a saved model on its trial's test split, read as the trial read it, with its model name and
    epoch in front (`rem.tracking.package_analyses.robustness_for_package` reads one from a checkpoint or run).
    `families`: {family: strengths}, or family names at the strengths of the model config's `eval.robust_families`
    (defaults for one it lacks), or None: all of those; `seed` defaults to the config's, so the trial's own numbers
    are reproduced."""
    if families is not None and not isinstance(families, dict):
        families = select_families(trained.cfg.eval.robust_families, families)
    frame = robustness(trained.model, trained.cfg, trained.test, trained.transform, trained.num_classes,
                       families=families, loss_kwargs=trained.loss_kwargs, seed=seed)
    return trained.labelled(frame)


def robust_from_results(rows: pd.DataFrame, keep=KEEP) -> pd.DataFrame:
    """The robustness a results table's rows carry (`robust_metrics` columns), back in long form: one row per
    trial, family and strength, with the `keep` columns that exist; empty when no trial recorded any."""
    return points_from_results(rows, "robust", keep)

