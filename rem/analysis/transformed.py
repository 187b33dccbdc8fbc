"""A trial's final model on its transformed test images: robustness and equivariance from one evaluation pass per
transform, strength and forward, so asking for both costs no extra forward."""

from __future__ import annotations

from rem.analysis.equivariance import encode, equivariance, equivariance_frame
from rem.analysis.forwards import forwards
from rem.analysis.points import point_metrics
from rem.analysis.robustness.evaluation import robust_metrics, robustness
from rem.analysis.robustness.families import IDENTITY
from rem.training.run import final_model_on_test


def transformed_wanted(cfg) -> bool:
    # CNN baselines too: their accuracy and hidden layer are what capsules' are compared against
    return cfg.eval.robustness or cfg.eval.equivariance


def trial_transformed(run, metrics: dict, *, robust: bool | None = None, equivariant: bool | None = None) -> dict:
    """The `robust/...` and `equivariance/...` metrics of a trial's final model, each when `eval.robustness` /
    `eval.equivariance` (or `robust`, `equivariant`) asks."""
    cfg = run.cfg
    robust = cfg.eval.robustness if robust is None else robust
    equivariant = cfg.eval.equivariance if equivariant is None else equivariant
    net, test = final_model_on_test(run, metrics, cfg.eval.robust_images)
    levels = cfg.eval.levels_for(cfg.model.name)
    out: dict[str, float] = {}
    for forward in forwards(cfg):
        options = {"transform": run.transform, "batch": cfg.train.eval_batch_size, "precision": cfg.train.precision,
                   "quantize_levels": levels if forward.quantized else None}
        if not robust:
            if equivariant:
                frame = equivariance(net, test.images, cfg.eval.robust_families, seed=cfg.eval.robust_seed, **options)
                out.update(point_metrics(frame, "equivariance", forward.segment))
            continue
        points = {} if equivariant else None
        frame = robustness(net, cfg, test, run.transform, run.splits.spec.num_classes, loss_kwargs=run.loss_kwargs,
                           quantized=forward.quantized, representations=points)
        out.update(robust_metrics(frame, forward.segment))
        if equivariant:
            base = next((moved for (family, strength), moved in points.items() if IDENTITY.get(family) == strength),
                        None)
            base = encode(net, test.images, **options) if base is None else base  # no family holds the identity
            frame = equivariance_frame(points, base, cfg.eval.robust_seed)
            out.update(point_metrics(frame, "equivariance", forward.segment))
    return out
