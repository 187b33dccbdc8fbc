"""What measures a trial's model besides its evaluation, for the callers of `rem.training.loop.train` (the pipeline's
trial, `rem train`): the final model's mechanism curve, robustness and equivariance, every epoch's routing per iteration, each when
the config asks for it."""

from __future__ import annotations

from rem.analysis.equivariance import trial_equivariance
from rem.analysis.robustness.evaluation import trial_robustness
from rem.analysis.routing_iterations import iteration_curves_wanted, trial_iteration_curves
from rem.analysis.sparsity_curve import trial_curve
from rem.models import has_routing
from rem.training.loop import Measurement


def curve_wanted(cfg) -> bool:
    # The curve is about routing (entropy, parse trees): none for a CNN baseline, whose method "none" is still in the
    # default curve_methods, so it is skipped there rather than refused.
    return cfg.eval.sparsity_curve and cfg.prune.method in cfg.eval.curve_methods and has_routing(cfg.model.name)


def robustness_wanted(cfg) -> bool:
    return cfg.eval.robustness  # CNN baselines too: they are what capsules' robustness is compared against


def equivariance_wanted(cfg) -> bool:
    return cfg.eval.equivariance  # CNN baselines too: their hidden layer is what capsule poses are compared against


AT_TRIAL_END = (
    Measurement("mechanism curve", curve_wanted, trial_curve, "time/curve_s"),
    Measurement("robustness", robustness_wanted, trial_robustness, "time/robustness_s"),
    Measurement("equivariance", equivariance_wanted, trial_equivariance, "time/equivariance_s"),
    Measurement("iteration curves", iteration_curves_wanted, trial_iteration_curves, "time/iteration_curves_s",
                every_epoch=True),
)
