"""What measures a trial's model besides its evaluation, for the callers of `rem.training.loop.train` (the pipeline's
trial, `rem train`): the final model's mechanism curve, robustness and equivariance, every epoch's routing per iteration, each when
the config asks for it."""

from __future__ import annotations

from rem.analysis.routing_iterations import iteration_curves_wanted, trial_iteration_curves
from rem.analysis.sparsity_curve import trial_curve
from rem.analysis.transformed import trial_transformed, transformed_wanted
from rem.models import has_routing
from rem.training.loop import Measurement


def curve_wanted(cfg) -> bool:
    # The curve is about routing (entropy, parse trees): none for a CNN baseline, whose method "none" is still in the
    # default curve_methods, so it is skipped there rather than refused.
    return cfg.eval.sparsity_curve and cfg.prune.method in cfg.eval.curve_methods and has_routing(cfg.model.name)


AT_TRIAL_END = (
    Measurement("mechanism curve", curve_wanted, trial_curve, "time/curve_s"),
    # robustness and equivariance share their passes over the transformed images (`rem.analysis.transformed`)
    Measurement("robustness and equivariance", transformed_wanted, trial_transformed, "time/transformed_s"),
    Measurement("iteration curves", iteration_curves_wanted, trial_iteration_curves, "time/iteration_curves_s",
                every_epoch=True),
)
