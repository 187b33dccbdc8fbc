"""Pruning for capsule networks: REM (LOBSTER plus a loss-bounded magnitude threshold), IMP, SNIP, whole capsule
types (`rem.pruning.capsules`), or a method registered with `register_method`. A training loop drives a `Pruner`::

    pruner = Pruner(model, PruneConfig(method="rem"))
    pruner.at_start(model, batch_loss_fn)                    # SNIP prunes here
    for epoch in range(epochs):
        for batch in loader:
            loss.backward()
            pruner.before_optimizer_step(model, epoch)       # LOBSTER shrink (REM), masked gradients
            optimizer.step()
            pruner.after_optimizer_step(model, optimizer)    # masks re-applied, masked Adam state zeroed
        metrics = pruner.end_of_epoch(model, epoch, epochs, val_loss_fn)  # threshold search / IMP step
    checkpoint["pruner"] = pruner.state_dict()               # pruner.load_state_dict(...) on resume
"""

from rem.config.prune import SCHEDULES, SCOPES, SEARCHES, PruneConfig
from rem.pruning import checks  # noqa: F401  (registers the methods' own checks: PruneConfig(method=...) is checked)
from rem.pruning.imp import magnitude_prune_to, schedule_sparsity
from rem.pruning.lobster import lobster_shrink_
from rem.pruning.masks import Masks, sparsity_report
from rem.pruning.methods import PruningMethod, get_method, method_names, register_method
from rem.pruning.parameters import is_class_capsule_matrix, is_primary_conv, prunable_parameters, shrinkable_parameters
from rem.pruning.probe import ThresholdProbe
from rem.pruning.pruner import Pruner, TrialPruner
from rem.pruning.search import Bisection, SortedSearch, ThresholdResult, threshold_search
from rem.pruning.snip import snip_prune

METHODS = tuple(method_names())  # the built-in ones; `method_names()` adds those registered since

__all__ = [
    "METHODS", "SCHEDULES", "SCOPES", "SEARCHES", "Bisection", "Masks", "PruneConfig", "Pruner", "PruningMethod",
    "SortedSearch", "get_method", "method_names", "register_method",
    "ThresholdProbe", "ThresholdResult", "TrialPruner", "is_class_capsule_matrix", "is_primary_conv", "lobster_shrink_",
    "magnitude_prune_to", "prunable_parameters",
    "schedule_sparsity", "shrinkable_parameters", "snip_prune", "sparsity_report", "threshold_search",
]
