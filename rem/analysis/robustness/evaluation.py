"""Robustness of one trained model: its test metrics under each family and strength, evaluated exactly as the final
evaluation does (so every identity row equals it); routing metrics only for a model with couplings, never zeros."""

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
    """One row per (family, strength): `split` transformed and evaluated; unset options default to the config's `eval`
    settings. `representations`, a dict, receives per (family, strength) the representation from that same pass."""
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


def _measure(model, cfg: Config, split: Split, transform, num_classes: int, loss_kwargs: dict,
             quantized: bool) -> dict:
    res = evaluate_split(cfg, model, split, transform, num_classes, quantized=quantized,
                         parse_trees=True, loss_kwargs=loss_kwargs)
    out = {"test/acc": res["acc"], "test/loss": res["loss"], "n_images": res["n_images"]}
    out.update({k: float(res[k]) for k in ROUTING_METRICS if k in res})  # absent without couplings
    return out


def robust_metrics(frame: pd.DataFrame, segment: str = "") -> dict[str, float]:
    """A robustness frame as flat metrics, `robust/<family>/<strength:g>[/<segment>]/<metric>`, NaN left out."""
    return point_metrics(frame, "robust", segment)


def robustness_of(trained: ModelOnTest, families: dict | list | None = None, seed: int | None = None) -> pd.DataFrame:
    """The robustness of a saved model on its trial's test split, its model name and epoch in front. `families`:
    {family: strengths}, or names at the config's strengths (defaults for one it lacks), or None: all the config's."""
    if families is not None and not isinstance(families, dict):
        families = select_families(trained.cfg.eval.robust_families, families)
    frame = robustness(trained.model, trained.cfg, trained.test, trained.transform, trained.num_classes,
                       families=families, loss_kwargs=trained.loss_kwargs, seed=seed)
    return trained.labelled(frame)


def robust_from_results(rows: pd.DataFrame, keep=KEEP) -> pd.DataFrame:
    """The `robust_metrics` columns of a results table in long form (`points_from_results`)."""
    return points_from_results(rows, "robust", keep)

