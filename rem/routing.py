"""Routing algorithms as pure functions of the votes.

Conventions shared by every routing here:
- votes `(B, I, J, D)`: input capsule i's prediction for parent j;
- couplings `(B, I, J)`: how much of input i goes to parent j, a softmax over the parents J;
- routing runs in fp32 (softmax of agreement logits is where bf16 loses the ordering).
"""

from __future__ import annotations

import torch

from rem.capsules import squash
from rem.parse_trees import quantize


def quantize_couplings(c: torch.Tensor, levels: int) -> torch.Tensor:
    """Couplings replaced by the nearest of `levels` equally spaced values in [0, 1] (REM's +Q).

    Ties go down, as REM's (e_k, e_k+1] bins do: 0.05 -> 0.0, 0.15 -> 0.1. The gradient passes
    straight through (the quantized forward is for evaluation; this keeps it differentiable anyway).
    """
    q = quantize(c, levels).to(c.dtype) / (levels - 1)
    return c + (q - c).detach()


def parent_major(votes: torch.Tensor) -> torch.Tensor:
    """The votes as a `(B, J, I, D)` tensor in contiguous memory, without a copy when they already are.

    Routing's two contractions (weighted sum over i, agreement per (i, j)) are batched matmuls over
    (b, j); in parent-major memory they run ~10x faster on CPU than on the (B, I, J, D) layout.
    `CapsuleVotes` produces parent-major votes and hands them out as a transposed (B, I, J, D) view.
    """
    return votes.float().transpose(1, 2).contiguous()


def dynamic_routing(
    votes: torch.Tensor,
    iterations: int,
    bias: torch.Tensor | None = None,
    *,
    quantize_levels: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sabour et al.'s routing-by-agreement, as REM's official code runs it.

    Logits start at 0 for every sample; c = softmax over parents; s_j = sum_i c_ij u_hat_j|i (+ bias);
    v = squash(s); b_ij += <u_hat_j|i, v_j> between iterations. Gradients flow only through the last
    iteration (votes are detached before it), which saves autograd memory without changing the forward.

    `quantize_levels` replaces the last iteration's couplings by their quantized values in the weighted
    sum (REM's "+Q" forward). Returns `(v (B, J, D), c (B, I, J))`, c being the last iteration's couplings.
    """
    if iterations < 1:
        raise ValueError(f"dynamic_routing: iterations must be >= 1, got {iterations}")
    with torch.autocast(votes.device.type, enabled=False):
        u_hat = parent_major(votes)  # (B, J, I, D)
        detached = u_hat.detach()
        logits = u_hat.new_zeros(u_hat.shape[:3])  # (B, J, I)
        for it in range(iterations):
            last = it == iterations - 1
            c = torch.softmax(logits, dim=1)
            weights = quantize_couplings(c, quantize_levels) if (last and quantize_levels) else c
            s = torch.matmul(weights.unsqueeze(2), u_hat if last else detached).squeeze(2)  # (B, J, D)
            if bias is not None:
                s = s + bias.float()
            v = squash(s)
            if not last:
                logits = logits + torch.matmul(detached, v.unsqueeze(-1)).squeeze(-1)
    return v, c.transpose(1, 2)
