"""`prune.method: capsules`: when and how many primary-capsule types a trial removes, and the rebuilt model
handed to the trainer."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from rem.device import HOST
from rem.evaluate import batches_of, evaluate, model_device
from rem.pruning import schedule_sparsity, sparsity_report
from rem.pruning.capsules.criteria import capsule_report, coupling_mass_scores, sensitivity_add_, weight_norm_scores
from rem.pruning.capsules.layout import capsule_layout, prune_capsules, retarget_optimizer
from rem.pruning.capsules.options import CapsuleOptions


def types_to_remove(fraction: float, types: int, step: int, steps: int, schedule: str) -> int:
    """Types removed in total after `step` of `steps` pruning steps (at least one type always stays)."""
    return min(types - 1, round(schedule_sparsity(fraction, step, steps, schedule) * types))


def _val_loss(model: nn.Module, val, precision: str) -> float:
    return float(evaluate(model, batches_of(val.images, val.labels, val.batch_size, val.transform),
                          num_classes=val.num_classes, precision=precision, parse_trees=False,
                          loss_kwargs=val.loss_kwargs)["loss"])


def largest_harmless_removal(model: nn.Module, ranked: torch.Tensor, most: int, build, build_args: dict, val,
                             precision: str, tolerance: float) -> tuple[int, int]:
    """REM's rule on types: the largest k <= `most` whose removal keeps the validation loss <= base * (1 +
    tolerance), by bisection on k (the loss assumed to rise with k). Returns (k, passes)."""
    base = _val_loss(model, val, precision)
    lo, hi, passes = 0, most + 1, 1
    while hi - lo > 1:
        k = (lo + hi) // 2
        candidate, _, _ = prune_capsules(model, ranked[k:], build, build_args)
        passes += 1
        if _val_loss(candidate, val, precision) <= base * (1 + tolerance):
            lo = k
        else:
            hi = k
    return lo, passes


class CapsulePruner:
    """The `TrialPruner` of `prune.method: capsules`: at the ends of epochs 1..T (T = prune.schedule_epochs, else
    all but the last) the scheduled share of the options' `fraction` of types is removed (rule "rem": only as
    many as keep the validation loss within the bound), and `adopt` hands over the rebuilt model."""

    rebuilds_model = True  # see `adopt` and `restore_structure`

    def __init__(self, model: nn.Module, cfg, build: Callable[..., nn.Module], in_shape: tuple[int, int, int],
                 precision: str, options: CapsuleOptions):
        self.cfg, self.build, self.in_shape, self.precision = cfg, build, tuple(in_shape), precision
        self.options = options  # read and checked by the method (`CapsuleTypes.options_of`)
        layout = capsule_layout(model)  # fails early for unsupported families
        self.original_types = layout.types
        self.original_prunable = int(sparsity_report(model)["prunable_params"])
        self.kept = list(range(layout.types))  # original ids of the types the current model holds
        self.build_args: dict = {}
        self.device = model_device(model)  # the sensitivity sums stay there (see sensitivity_add_)
        self.sensitivity = torch.zeros(layout.types, device=self.device)
        self.history: list[dict] = []
        self._pending: tuple[nn.Module, dict] | None = None

    # --- the Pruner interface (rem.pruning.pruner.TrialPruner)
    @property
    def searches_threshold(self) -> bool:
        """Validation passes at each end of epoch, unless `threshold_search: none`."""
        return self.cfg.threshold_search != "none"

    def at_start(self, model: nn.Module, batch_loss_fn=None) -> dict:
        return capsule_report(model, self.in_shape, self.original_types, self.original_prunable)

    def before_optimizer_step(self, model: nn.Module, epoch: int) -> None:
        if self.options.criterion == "sensitivity":
            sensitivity_add_(model, self.sensitivity)

    def after_optimizer_step(self, model: nn.Module, optimizer=None) -> None:
        pass

    def scores(self, model: nn.Module, val) -> torch.Tensor:
        criterion = self.options.criterion
        if criterion == "weight_norm":
            return weight_norm_scores(model)
        if criterion == "sensitivity":
            return self.sensitivity.clone()
        return coupling_mass_scores(model, batches_of(val.images, val.labels, val.batch_size, val.transform))

    def end_of_epoch(self, model: nn.Module, epoch: int, total_epochs: int, val=None) -> dict:
        steps = self.cfg.schedule_epochs or max(1, total_epochs - 1)
        target = types_to_remove(self.options.fraction, self.original_types, epoch + 1, steps, self.cfg.schedule)
        removed_now = target - (self.original_types - len(self.kept))
        metrics: dict[str, float] = {"prune/capsules_removed": 0.0}
        if removed_now > 0:
            if val is None and (self.options.criterion == "coupling_mass" or self.options.rule == "rem"):
                raise ValueError("CapsulePruner.end_of_epoch: this criterion/rule needs the validation set")
            ranked = torch.argsort(self.scores(model, val), stable=True)  # lowest score first
            if self.options.rule == "rem":
                removed_now, passes = largest_harmless_removal(model, ranked, removed_now, self.build,
                                                               self.build_args, val, self.precision, self.cfg.twt)
                metrics["prune/evaluations"] = passes
        if removed_now > 0:
            keep = torch.sort(ranked[removed_now:]).values
            new, self.build_args, slices = prune_capsules(model, keep, self.build, self.build_args)
            self.kept = [self.kept[k] for k in keep.tolist()]
            self.sensitivity = self.sensitivity[keep.to(self.device)]
            self._pending = (new, slices)
            metrics["prune/capsules_removed"] = float(removed_now)
            model = new
        if self.options.criterion == "sensitivity":
            self.sensitivity.zero_()  # each step ranks by the sensitivity seen since the last one
        metrics.update(capsule_report(model, self.in_shape, self.original_types, self.original_prunable))
        self.history.append({"epoch": epoch, "kept": list(self.kept), **metrics})
        return metrics

    def adopt(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> nn.Module:
        """The model to train from now on: the rebuilt one after a pruning step (the optimizer retargeted), else
        `model`."""
        if self._pending is None:
            return model
        new, slices = self._pending
        self._pending = None
        retarget_optimizer(optimizer, model, new, slices)
        return new

    def state_dict(self) -> dict:
        return {"method": "capsules", "build_args": dict(self.build_args), "kept": list(self.kept),
                "original_types": self.original_types, "sensitivity": self.sensitivity.to(HOST, copy=True),
                "history": list(self.history)}

    def load_state_dict(self, state: dict, model: nn.Module | None = None) -> None:
        self.build_args, self.kept = dict(state["build_args"]), list(state["kept"])
        self.sensitivity = state["sensitivity"].to(self.device, copy=True)
        self.history = list(state.get("history", []))

    def restore_structure(self, state: dict, model: nn.Module, optimizer: torch.optim.Optimizer) -> nn.Module:
        """On resume: the model at the checkpoint's size, the optimizer pointed at it, ready to load both."""
        if not state.get("build_args"):
            return model
        new = self.build(**state["build_args"])
        retarget_optimizer(optimizer, model, new)
        return new

