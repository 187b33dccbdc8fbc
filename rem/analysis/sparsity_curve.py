"""The mechanism curve: one trained model's accuracy and routing as magnitude pruning removes more of it, without
retraining. REM lowers entropy only by zeroing votes, so the curve prunes three scopes (`global`, `class_capsules`,
`primary_conv`) and evaluates as the final evaluation does, its 0 % row equal to that evaluation."""

from __future__ import annotations

import math
import re

import pandas as pd
import torch

from rem.analysis.long_form import long_form
from rem.analysis.model_on_test import ModelOnTest
from rem.analysis.points import KEEP
from rem.config import Config
from rem.models import has_routing
from rem.pruning.imp import magnitude_prune_to
from rem.pruning.masks import Masks, sparsity_report
from rem.pruning.parameters import is_class_capsule_matrix, is_primary_conv, prunable_parameters
from rem.training.run import evaluate_split, final_model_on_test

SPARSITIES = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 0.98)
METRICS = ("test/acc", "test/loss", "entropy/mean", "entropy/std", "parse_trees/total", "routing/coupling_entropy",
           "routing/dead_capsules", "routing/input_dependence", "routing/fixed_preference", "entropy/k3_mean",
           "entropy/kept_mean")


class CurveError(ValueError):
    """The curve cannot be drawn for this input (the message names the file or run and what is wrong)."""


def check_sparsities(sparsities) -> tuple[float, ...]:
    values = tuple(float(s) for s in sparsities)
    bad = [s for s in values if not 0.0 <= s < 1.0 or math.isnan(s)]
    if bad or not values:
        raise CurveError(f"sparsity-curve: sparsities must be fractions in [0, 1); got {bad or 'none'}")
    return tuple(sorted(set(values)))


def scope_tensors(model: torch.nn.Module, rem_tensors: bool = True) -> dict[str, list[str]]:
    """Each scope's prunable tensor names; a scope the model has no tensor for is left out (DeepCaps' class
    matrix is not one REM thresholds)."""
    names = list(prunable_parameters(model, rem_tensors=rem_tensors))
    scopes = {"global": names,
              "class_capsules": [n for n in names if is_class_capsule_matrix(n, model)],
              "primary_conv": [n for n in names if is_primary_conv(n, model)]}
    return {scope: found for scope, found in scopes.items() if found}


def sparsity_curve(model: torch.nn.Module, cfg: Config, split, transform, num_classes: int, *,
                   sparsities=SPARSITIES, loss_kwargs: dict | None = None) -> pd.DataFrame:
    """One row per (scope, target sparsity): the model pruned to it and evaluated on `split`; the model's
    weights are restored afterwards. A target below what the scope already holds at zero prunes nothing more."""
    sparsities = check_sparsities(sparsities)
    every = Masks.dense(model, rem_tensors=cfg.prune.rem_tensors)  # all True: sparsity is read from the weights
    original = {n: p.detach().clone() for n, p in every.parameters(model).items()}

    def restore() -> None:
        with torch.no_grad():
            for n, p in every.parameters(model).items():
                p.copy_(original[n])

    kwargs = loss_kwargs if loss_kwargs is not None else cfg.train.margin(0)
    unpruned: dict | None = None
    rows = []
    try:
        for scope, names in scope_tensors(model, cfg.prune.rem_tensors).items():
            for target in sparsities:
                restore()
                if target == 0.0 and unpruned is not None:  # the same model in every scope
                    rows.append({**unpruned, "scope": scope})
                    continue
                scoped = every.subset(names)
                if target > 0:
                    magnitude_prune_to(model, scoped, target)
                row = {"scope": scope, "target": 100.0 * target,
                       **_measure(model, cfg, split, transform, num_classes, kwargs, every, scoped)}
                if target == 0.0:
                    unpruned = row
                rows.append(row)
    finally:
        restore()
    return pd.DataFrame(rows)


def _measure(model, cfg: Config, split, transform, num_classes: int, loss_kwargs: dict, every: Masks,
             scoped: Masks) -> dict:
    res = evaluate_split(cfg, model, split, transform, num_classes, quantized=cfg.eval.final_quantized,
                         parse_trees=True, loss_kwargs=loss_kwargs)
    report = sparsity_report(model, every)
    out = {"sparsity": report["sparsity"], "scope_sparsity": sparsity_report(model, scoped)["sparsity"],
           **{k: v for k, v in report.items() if k.startswith("sparsity/")}}
    out.update({"test/acc": res["acc"], "test/loss": res["loss"], "n_images": res["n_images"]})
    out.update({k: float(res[k]) for k in METRICS if k in res and k not in out})
    return out


def check_has_routing(model_name: str, source: str) -> None:
    """Raises CurveError for a model without routing (a CNN baseline), before any of its data is read."""
    if not has_routing(model_name):
        raise CurveError(f"{source}: model {model_name!r} has no routing, so no entropy or parse trees to "
                         f"follow as it is pruned; the mechanism curve is for capsule models")


def curve_of(trained: ModelOnTest, sparsities=SPARSITIES) -> pd.DataFrame:
    """The curve of a saved model on its trial's test split, its model name and epoch in front."""
    frame = sparsity_curve(trained.model, trained.cfg, trained.test, trained.transform, trained.num_classes,
                           sparsities=sparsities, loss_kwargs=trained.loss_kwargs)
    return trained.labelled(frame)


def curve_metrics(frame: pd.DataFrame) -> dict[str, float]:
    """A curve as flat metrics, `curve/<scope>/<target %>/<metric>`, as the results table carries them."""
    out = {}
    for row in frame.to_dict("records"):
        stem = f"curve/{row['scope']}/{row['target']:g}"
        out.update({f"{stem}/{k}": float(v) for k, v in row.items()
                    if k not in ("scope", "target", "model.name", "epoch") and isinstance(v, (int, float))})
    return out


def trial_curve(run, metrics: dict) -> dict[str, float]:
    """The `curve_metrics` of a trial's final model on its first `eval.curve_images` test images."""
    net, test = final_model_on_test(run, metrics, run.cfg.eval.curve_images)
    frame = sparsity_curve(net, run.cfg, test, run.transform, run.splits.spec.num_classes,
                           sparsities=run.cfg.eval.curve_sparsities, loss_kwargs=run.loss_kwargs)
    return curve_metrics(frame)


CURVE_COLUMN = re.compile(r"^curve/(?P<scope>[a-z_]+)/(?P<target>[0-9.]+)/(?P<metric>.+)$")


def curves_from_results(rows: pd.DataFrame, keep=KEEP) -> pd.DataFrame:
    """The `curve_metrics` columns of a results table in long form, one row per trial, scope and target; empty when
    no trial recorded a curve."""
    return long_form(rows, CURVE_COLUMN, ("scope", "target"), keep)

