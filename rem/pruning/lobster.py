"""LOBSTER, REM's sparsifying update: weights the loss is insensitive to shrink towards zero every step."""

from __future__ import annotations

import torch


def lobster_shrink_(params: list[torch.Tensor], lam: float) -> None:
    """In place, before the optimizer's step: w <- w - lam * w * max(0, 1 - |g|) (g = w.grad, None -> 0)."""
    if lam == 0 or not params:
        return
    with torch.no_grad():
        with_grad = [p for p in params if p.grad is not None]
        without_grad = [p for p in params if p.grad is None]
        if with_grad:
            shrink = torch._foreach_abs([p.grad for p in with_grad])
            torch._foreach_neg_(shrink)
            torch._foreach_add_(shrink, 1.0)
            torch._foreach_clamp_min_(shrink, 0.0)
            torch._foreach_mul_(shrink, with_grad)
            torch._foreach_add_(with_grad, shrink, alpha=-lam)
        if without_grad:  # a missing gradient counts as 0: the factor is 1
            torch._foreach_mul_(without_grad, 1.0 - lam)
