"""`Pruner`: the one object a training loop drives, at fixed points, for every `prune.method`."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Callable, Protocol

import torch
from torch import nn

from rem.pruning.config import PruneConfig
from rem.pruning.imp import magnitude_prune_to, schedule_sparsity
from rem.pruning.lobster import lobster_shrink_
from rem.pruning.masks import Masks, magnitude_report, sparsity_report
from rem.pruning.parameters import shrinkable_parameters
from rem.pruning.search import threshold_search
from rem.pruning.snip import snip_prune

log = logging.getLogger(__name__)


class TrialPruner(Protocol):
    """What a trial's training run drives, whatever `prune.method` is: `Pruner` for the methods that mask weights,
    `rem.pruning.capsules.CapsulePruner` for the one that rebuilds the model (the call order is in rem.pruning's
    docstring). The run asks the pruner instead of asking which method it is."""

    rebuilds_model: bool  # True: `adopt` / `restore_structure` may hand back another (smaller) model

    @property
    def searches_threshold(self) -> bool: ...  # `end_of_epoch` wants the validation passes of a search

    def at_start(self, model: nn.Module, batch_loss_fn=None) -> dict: ...
    def before_optimizer_step(self, model: nn.Module, epoch: int) -> None: ...
    def after_optimizer_step(self, model: nn.Module, optimizer=None) -> None: ...
    def end_of_epoch(self, model: nn.Module, epoch: int, total_epochs: int, val=None) -> dict: ...
    def adopt(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> nn.Module: ...
    def restore_structure(self, state: dict, model: nn.Module, optimizer: torch.optim.Optimizer) -> nn.Module: ...
    def state_dict(self) -> dict: ...
    def load_state_dict(self, state: dict, model: nn.Module | None = None) -> None: ...


class Pruner:
    """Masks, LOBSTER and the per-method epoch step behind the `TrialPruner` hooks; `state_dict` holds the masks
    and the per-epoch history for a resumed run."""

    rebuilds_model = False  # masks keep every tensor's shape: the trainer's model stays the one it built

    def __init__(self, model: nn.Module, cfg: PruneConfig | None = None):
        self.cfg = (cfg or PruneConfig()).validate()
        if self.cfg.target_from and self.cfg.target_sparsity <= 0:
            raise ValueError(f"prune.target_from={self.cfg.target_from!r}: the sweep sets prune.target_sparsity from the "
                             f"matching {self.cfg.target_from} trial; a single run needs prune.target_sparsity set")
        self.masks = Masks.dense(model, rem_tensors=self.cfg.rem_tensors)
        self.masks.subset(self.cfg.threshold_tensors)  # a name that is not a prunable tensor fails here, in one line
        self._shrinkable = list(shrinkable_parameters(model).values())
        self._masks_active = False  # per-step mask work is skipped until something is pruned
        self.history: list[dict] = []

    @property
    def searches_threshold(self) -> bool:
        """REM's end of epoch searches a threshold on validation passes (not with `threshold_search: none`)."""
        return self.cfg.method == "rem" and self.cfg.threshold_search != "none"

    def lam(self, epoch: int) -> float:
        """LOBSTER's lambda in 0-based `epoch` (lambda0 in epoch 0, as REM's 1e-4 * 0.99**(e+1) after epoch e)."""
        return self.cfg.lambda0 * self.cfg.lambda_decay ** epoch if self.cfg.method == "rem" else 0.0

    def imp_epochs(self, total_epochs: int) -> int:
        """Epochs over which IMP reaches its target: `schedule_epochs`, else all but the last, so the last pruning
        step is followed by an epoch of training before the final evaluation (a one-epoch run has no room)."""
        return self.cfg.schedule_epochs or max(1, total_epochs - 1)

    def at_start(self, model: nn.Module, batch_loss_fn: Callable[[nn.Module], torch.Tensor] | None = None) -> dict:
        """Before the first step: SNIP prunes here (it needs batch_loss_fn(model) -> scalar loss tensor)."""
        if self.cfg.method == "snip":
            if batch_loss_fn is None:
                raise ValueError("Pruner.at_start: method='snip' needs batch_loss_fn(model) -> loss tensor")
            snip_prune(model, self.masks, batch_loss_fn, self.cfg.target_sparsity, self.cfg.snip_batches)
        self._masks_active = self.masks.any_pruned()
        if self._masks_active:
            self.masks.apply(model)
        report = sparsity_report(model, self.masks)
        if self.cfg.method == "snip":
            log.info("SNIP at initialisation: %.2f %% sparsity", report["sparsity"])
        return report

    def before_optimizer_step(self, model: nn.Module, epoch: int) -> None:
        """After backward: LOBSTER's shrink (REM), then the masked weights' gradients zeroed."""
        if self.cfg.method == "rem":
            lobster_shrink_(self._shrinkable, self.lam(epoch))
        if self._masks_active:
            self.masks.mask_grads(model)

    def after_optimizer_step(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> None:
        """Re-apply the masks and zero the optimizer state of masked weights."""
        if self._masks_active:
            self.masks.apply(model)
            if optimizer is not None:
                self.masks.zero_optimizer_state(model, optimizer)

    def end_of_epoch(self, model: nn.Module, epoch: int, total_epochs: int, val_loss_fn=None) -> dict:
        """REM's threshold search or IMP's scheduled step, then the measured sparsity; returns the epoch's metrics."""
        metrics: dict[str, float] = {}
        if self.cfg.method == "rem":
            metrics.update(self._threshold_step(model, epoch, val_loss_fn))
        elif self.cfg.method == "imp":
            metrics.update(self._imp_step(model, epoch, total_epochs))
        self._masks_active = self.masks.any_pruned()
        metrics.update(sparsity_report(model, self.masks))
        if self.cfg.method in ("rem", "imp"):  # shrunk or pruned: LOBSTER moves weights toward zero without zeroing
            metrics.update(magnitude_report(model, self.masks))
        self.history.append({"epoch": epoch, **metrics})
        return metrics

    def _threshold_step(self, model: nn.Module, epoch: int, val_loss_fn) -> dict[str, float]:
        if self.cfg.threshold_search == "none":  # the shrinkage-only control: LOBSTER, no threshold
            return {"prune/lambda": self.lam(epoch + 1)}
        if val_loss_fn is None:
            raise ValueError("Pruner.end_of_epoch: method='rem' needs val_loss_fn(model)")
        searched = self.masks.subset(self.cfg.threshold_tensors)
        result = threshold_search(model, searched, val_loss_fn, self.cfg)
        self.masks.update(searched)
        return {
            "prune/threshold": result.threshold, "prune/evaluations": result.evaluations, "prune/val_loss": result.loss,
            "prune/base_val_loss": result.base_loss, "prune/pruned": result.pruned,
            "prune/guard_limited": float(result.guard_limited), "prune/seconds": result.seconds,
            "prune/partial_evaluations": result.partial_evaluations, "prune/lambda": self.lam(epoch + 1),
        }

    def _imp_step(self, model: nn.Module, epoch: int, total_epochs: int) -> dict[str, float]:
        sparsity = schedule_sparsity(self.cfg.target_sparsity, epoch + 1, self.imp_epochs(total_epochs), self.cfg.schedule)
        pruned = self.masks.subset(self.cfg.threshold_tensors)
        magnitude_prune_to(model, pruned, sparsity, self.cfg.scope)
        self.masks.update(pruned)
        return {"prune/scheduled_sparsity": 100.0 * sparsity}

    def adopt(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> nn.Module:
        """The model to train after `end_of_epoch`: the same one (pruned in place), the optimizer untouched."""
        return model

    def restore_structure(self, state: dict, model: nn.Module, optimizer: torch.optim.Optimizer) -> nn.Module:
        """The model a checkpoint's weights load into: the one built from the config (no pruning changes shapes)."""
        return model

    def state_dict(self) -> dict:
        return {"config": asdict(self.cfg), "masks": self.masks.state_dict(), "history": list(self.history)}

    def load_state_dict(self, state: dict, model: nn.Module | None = None) -> None:
        """Restore masks and history (the config is kept as constructed); with `model`, re-apply the masks."""
        self.masks.load_state_dict(state["masks"])
        self.history = list(state.get("history", []))
        self._masks_active = self.masks.any_pruned()
        if model is not None and self._masks_active:
            self.masks.apply(model)
