"""SNIP (Lee et al. 2019): prune once, before training, by the saliency |g * w|; the masks then stay fixed."""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from rem.pruning.masks import Masks


def snip_prune(model: nn.Module, masks: Masks, batch_loss_fn: Callable[[nn.Module], torch.Tensor], sparsity: float,
               batches: int = 1) -> None:
    """Prune round(sparsity * n) weights with the lowest |g * w|, g summed over `batches` calls of batch_loss_fn."""
    params = masks.parameters(model)
    names, tensors = list(params), list(params.values())
    grads = [torch.zeros_like(t) for t in tensors]
    for _ in range(batches):
        loss = batch_loss_fn(model)
        for total, grad in zip(grads, torch.autograd.grad(loss, tensors, allow_unused=True)):
            if grad is not None:
                total += grad
    scores = {n: (g * t.detach()).abs() for n, g, t in zip(names, grads, tensors)}
    masks.prune_lowest(scores, round(sparsity * sum(t.numel() for t in tensors)))
    masks.apply(model)
