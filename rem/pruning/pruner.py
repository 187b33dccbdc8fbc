"""`Pruner`: the one object a training loop drives, at fixed points, for every `prune.method` that masks weights."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Callable, Protocol

import torch
from torch import nn

from rem.config.prune import PruneConfig
from rem.pruning.masks import Masks, magnitude_report, sparsity_report
from rem.pruning.methods.registry import get_method
from rem.pruning.parameters import shrinkable_parameters

log = logging.getLogger(__name__)


class TrialPruner(Protocol):
    """What a trial's training run drives, whatever `prune.method` is (call order: rem.pruning's docstring)."""

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
    """The `TrialPruner` of every method that masks weights in place: each hook runs the method's step
    (`rem.pruning.methods`); `state_dict` holds the masks and history for a resumed run."""

    rebuilds_model = False  # masks keep every tensor's shape: the trainer's model stays the one it built

    def __init__(self, model: nn.Module, cfg: PruneConfig | None = None):
        self.cfg = (cfg or PruneConfig()).validate()
        if self.cfg.target_from and self.cfg.target_sparsity <= 0:
            raise ValueError(f"prune.target_from={self.cfg.target_from!r}: the sweep sets prune.target_sparsity from "
                             f"the matching {self.cfg.target_from} trial; a single run needs prune.target_sparsity set")
        self.method = get_method(self.cfg.method)(self.cfg)
        self.masks = Masks.dense(model, rem_tensors=self.cfg.rem_tensors)
        self.masks.subset(self.cfg.threshold_tensors)  # a name that is not a prunable tensor fails here, in one line
        self.shrinkable = list(shrinkable_parameters(model).values())
        self._masks_active = False  # per-step mask work is skipped until something is pruned
        self.history: list[dict] = []

    @property
    def searches_threshold(self) -> bool:
        """The end of each epoch wants validation passes (REM's threshold search)."""
        return self.method.searches_threshold

    def lam(self, epoch: int) -> float:
        """LOBSTER's λ in 0-based `epoch` (0 for a method that does not shrink)."""
        return self.method.lam(epoch)

    def at_start(self, model: nn.Module, batch_loss_fn: Callable[[nn.Module], torch.Tensor] | None = None) -> dict:
        """Before the first step: SNIP prunes here (it needs batch_loss_fn(model) -> scalar loss tensor)."""
        self.method.at_start(self, model, batch_loss_fn)
        self._masks_active = self.masks.any_pruned()
        if self._masks_active:
            self.masks.apply(model)
        report = sparsity_report(model, self.masks)
        if self._masks_active:
            log.info("%s at initialisation: %.2f %% sparsity", self.cfg.method, report["sparsity"])
        return report

    def before_optimizer_step(self, model: nn.Module, epoch: int) -> None:
        """After backward: the method's step (REM: LOBSTER's shrink), then the masked weights' gradients zeroed."""
        self.method.before_optimizer_step(self, epoch)
        if self._masks_active:
            self.masks.mask_grads(model)

    def after_optimizer_step(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> None:
        """Re-apply the masks and zero the optimizer state of masked weights."""
        if self._masks_active:
            self.masks.apply(model)
            if optimizer is not None:
                self.masks.zero_optimizer_state(model, optimizer)

    def end_of_epoch(self, model: nn.Module, epoch: int, total_epochs: int, val_loss_fn=None) -> dict:
        """The method's epoch step (REM's search, IMP's step); returns the epoch's metrics with the sparsity."""
        metrics = dict(self.method.end_of_epoch(self, model, epoch, total_epochs, val_loss_fn))
        self._masks_active = self.masks.any_pruned()
        metrics.update(sparsity_report(model, self.masks))
        if self.method.reports_magnitudes:  # shrunk or pruned: LOBSTER moves weights toward zero without zeroing
            metrics.update(magnitude_report(model, self.masks))
        self.history.append({"epoch": epoch, **metrics})
        return metrics

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
