"""Evaluating a candidate threshold: zero every unpruned |w| < T, measure the validation loss, restore the weights."""

from __future__ import annotations

import inspect
import logging
import math
from typing import Callable, NamedTuple

import torch
from torch import nn

from rem.config.prune import PruneConfig
from rem.device import HOST
from rem.pruning.masks import Masks

log = logging.getLogger(__name__)


class CandidateOutcome(NamedTuple):
    """A candidate threshold's evaluation (loss inf: the pass stopped early; nan: rejected without a pass)."""

    accepted: bool
    loss: float
    accuracy: float | None


def loss_and_accuracy(out) -> tuple[float, float | None]:
    """A val_loss_fn's result (a loss, a (loss, accuracy) pair, or a dict) as (loss, accuracy or None)."""
    if isinstance(out, dict):  # rem.evaluate.evaluate's result ("acc"), or any dict with "accuracy"
        accuracy = out.get("accuracy", out.get("acc"))
        return float(out["loss"]), (None if accuracy is None else float(accuracy))
    if isinstance(out, (tuple, list)):
        return float(out[0]), (None if len(out) < 2 or out[1] is None else float(out[1]))
    return float(out), None


class ThresholdProbe:
    """Evaluates 'zero every unpruned |w| < T' against the bound base * (1 + prune.twt) and the collapse guards,
    without committing it; `restore` puts the weights back."""

    def __init__(self, model: nn.Module, masks: Masks, val_loss_fn: Callable, cfg: PruneConfig):
        self.model, self.val_loss_fn, self.cfg = model, val_loss_fn, cfg
        self.params = masks.parameters(model)
        self.original = {n: p.detach().clone() for n, p in self.params.items()}
        # Sorted and searched on the weights' device: no trip to the host.
        magnitudes = [p.detach().abs().flatten().float() for p in self.params.values()]
        unpruned = [m[masks.masks[n].flatten().to(m.device)] for n, m in zip(self.params, magnitudes)]
        # REM's search range: min, max and mean of |w| over every weight it prunes, zeros included
        every = torch.cat(magnitudes)
        self.range = (float(every.min()), float(every.max()), float(every.double().mean()))
        # Only unpruned weights change the mask: a threshold is identified by how many of them lie below it.
        self.unpruned_sorted = torch.sort(torch.cat(unpruned)).values if unpruned else torch.zeros(0, device=HOST)
        self.n_live = self.unpruned_sorted.numel()
        self.evaluations = 0
        self.stopped_early = 0  # passes stopped once their loss could no longer meet the bound
        self.max_pruned = math.floor(cfg.max_prune_fraction_per_epoch * self.n_live + 1e-9)
        self.guard_limited = False
        self.can_stop_early = "stop_above" in inspect.signature(val_loss_fn).parameters
        self.base_loss, self.base_accuracy = self._evaluate(None)
        self.bound = self.base_loss * (1 + cfg.twt)
        if cfg.require_accuracy and self.base_accuracy is None:
            raise ValueError("PruneConfig.require_accuracy=True needs val_loss_fn to return (loss, accuracy) or a dict "
                             "with 'accuracy'")

    def budget_left(self) -> bool:
        return self.cfg.max_evaluations is None or self.evaluations < self.cfg.max_evaluations

    def count_below(self, threshold: float) -> int:
        """How many unpruned weights a threshold would prune."""
        at = torch.tensor([threshold], device=self.unpruned_sorted.device)
        return int(torch.searchsorted(self.unpruned_sorted, at, right=False).item())

    def _evaluate(self, threshold: float | None, stop_above: float | None = None) -> tuple[float, float | None]:
        with torch.no_grad():
            for n, p in self.params.items():
                p.copy_(self.original[n])
                if threshold is not None:
                    p.masked_fill_(self.original[n].abs() < threshold, 0.0)
        self.evaluations += 1
        if stop_above is None or not self.can_stop_early:
            return loss_and_accuracy(self.val_loss_fn(self.model))
        return loss_and_accuracy(self.val_loss_fn(self.model, stop_above=stop_above))

    def evaluate(self, threshold: float, early_exit: bool = False) -> CandidateOutcome:
        """Evaluate a threshold (the pruned-count cap first, before paying for a pass); with `early_exit` a pass
        may stop once it cannot meet the bound (loss inf)."""
        count = self.count_below(threshold)
        if count > self.max_pruned:
            self.guard_limited = True
            log.info("threshold search: T=%.4g would prune %d weights, over the per-epoch cap %d: rejected",
                     threshold, count, self.max_pruned)
            return CandidateOutcome(False, math.nan, None)
        loss, accuracy = self._evaluate(threshold, self.bound if early_exit else None)
        self.stopped_early += math.isinf(loss)
        accepted = loss <= self.bound
        verdict = "accepted" if accepted else ("rejected (pass stopped early)" if math.isinf(loss) else "rejected")
        if accepted and self.cfg.require_accuracy and not self._accuracy_held(accuracy):
            self.guard_limited = True
            accepted = False
            verdict = (f"rejected by the accuracy guard ({accuracy:.4f} < {self.base_accuracy:.4f} - "
                       f"{self.cfg.accuracy_tolerance})")
        log.info("threshold search: pass %d, T=%.4g prunes %d more (%.2f %% of the unpruned), "
                 "loss %.6f vs bound %.6f: %s",
                 self.evaluations, threshold, count, 100.0 * count / max(self.n_live, 1), loss, self.bound, verdict)
        return CandidateOutcome(accepted, loss, accuracy)

    def _accuracy_held(self, accuracy: float | None) -> bool:
        return accuracy is not None and not accuracy < self.base_accuracy - self.cfg.accuracy_tolerance

    def restore(self) -> None:
        with torch.no_grad():
            for n, p in self.params.items():
                p.copy_(self.original[n])
