"""Sabour et al.'s routing-by-agreement (`model.routing: dynamic`), CapsNet's and DeepCaps' class layer."""

from __future__ import annotations

import torch

from rem.routing.common import agreement_iterations, parent_major
from rem.routing.registry import register_routing


@register_routing("dynamic", takes=("agreement_scale",))
def dynamic_routing(
    votes: torch.Tensor,
    iterations: int,
    bias: torch.Tensor | None = None,
    *,
    quantize_levels: int | None = None,
    trace: list | None = None,
    agreement_scale: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sabour et al.'s routing-by-agreement, as REM's official code runs it.

    Logits start at 0 for every sample; c = softmax over parents; s_j = sum_i c_ij u_hat_j|i (+ bias);
    v = squash(s); b_ij += <u_hat_j|i, v_j> between iterations. Gradients flow only through the last
    iteration (votes are detached before it), which saves autograd memory without changing the forward.

    `quantize_levels` replaces the last iteration's couplings by their quantized values in the weighted
    sum (REM's "+Q" forward). Returns `(v (B, J, D), c (B, I, J))`, c being the last iteration's couplings.
    `trace`, when given, receives each iteration's `(c (B, I, J), v (B, J, D))`, detached
    (`rem.analysis.routing_iterations` reads it). `agreement_scale` multiplies the agreement added to the logits
    (1: Sabour et al.'s rule); larger values polarise the couplings in fewer iterations.
    """
    if iterations < 1:
        raise ValueError(f"dynamic_routing: iterations must be >= 1, got {iterations}")
    with torch.autocast(votes.device.type, enabled=False):
        u_hat = parent_major(votes)  # (B, J, I, D)
        detached = u_hat.detach()
        return agreement_iterations(u_hat, detached, iterations, bias, quantize_levels, trace, lambda logits, v:
                                    logits + agreement_scale * torch.matmul(detached, v.unsqueeze(-1)).squeeze(-1))
