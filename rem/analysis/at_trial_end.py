"""The measurements `rem.training.loop.train` runs on a trial's model besides its evaluation, each when the config
asks for it."""

from __future__ import annotations

from rem.analysis.routing_iterations import iteration_curves_wanted, trial_iteration_curves
from rem.analysis.sparsity_curve import trial_curve
from rem.analysis.transformed import transformed_wanted, trial_transformed
from rem.models import has_routing
from rem.training.loop import Measurement


def curve_wanted(cfg) -> bool:
    # about routing: a CNN baseline is skipped, not refused, as its method "none" is in the default curve_methods
    return cfg.eval.sparsity_curve and cfg.prune.method in cfg.eval.curve_methods and has_routing(cfg.model.name)


AT_TRIAL_END = (
    Measurement("mechanism curve", curve_wanted, trial_curve, "time/curve_s"),
    # robustness and equivariance share their passes over the transformed images (`rem.analysis.transformed`)
    Measurement("robustness and equivariance", transformed_wanted, trial_transformed, "time/transformed_s"),
    Measurement("iteration curves", iteration_curves_wanted, trial_iteration_curves, "time/iteration_curves_s",
                every_epoch=True),
)
