"""What every routing shares: the parent-major layout of the votes, the weighted vote sum, REM's +Q rounding.

Conventions shared by every routing:
- votes `(B, I, J, D)`: input capsule i's prediction for parent j;
- couplings `(B, I, J)`: how much of input i goes to parent j, a softmax over the parents J;
- routing runs in fp32 (softmax of agreement logits is where bf16 loses the ordering).
"""

from __future__ import annotations

from collections.abc import Callable

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
    (b, j); in parent-major memory they run far faster on CPU than on the (B, I, J, D) layout.
    `CapsuleVotes` produces parent-major votes and hands them out as a transposed (B, I, J, D) view.
    """
    return votes.float().transpose(1, 2).contiguous()


def weighted_parents(c: torch.Tensor, u_hat: torch.Tensor, bias: torch.Tensor | None,
                     quantize_levels: int | None, vote_scale: torch.Tensor | None = None) -> torch.Tensor:
    """v_j = squash(sum_i c_ij u_hat_j|i + bias_j) from parent-major couplings (B, J, I) and votes (B, J, I, D);
    `quantize_levels` rounds the couplings in the sum (REM's +Q). `vote_scale` (B, J, I) multiplies each vote
    (γ-CapsNet's length clip), applied to the (rounded) coupling so the rescaled votes are never materialised."""
    weights = quantize_couplings(c, quantize_levels) if quantize_levels else c
    if vote_scale is not None:
        weights = weights * vote_scale
    s = torch.matmul(weights.unsqueeze(2), u_hat).squeeze(2)  # (B, J, D)
    if bias is not None:
        s = s + bias.float()
    return squash(s)


def agreement_iterations(u_hat: torch.Tensor, routed: torch.Tensor, iterations: int, bias: torch.Tensor | None,
                         quantize_levels: int | None, trace: list | None,
                         next_logits: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                         vote_scales: tuple[torch.Tensor, torch.Tensor] | None = None,
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """The loop of the iterative routings, on parent-major votes `(B, J, I, D)`: logits start at 0, c = softmax over
    the parents, v = `weighted_parents`, logits = `next_logits(logits, v)` between iterations (the agreement rule).

    Earlier iterations sum `routed` (the votes, detached where gradients flow only through the last), the last sums
    `u_hat`; only the last's couplings are rounded for +Q. `vote_scales` (for `u_hat`, for `routed`), each (B, J, I),
    rescale the votes inside the sums (`weighted_parents`). `trace` receives each iteration's detached `(c (B, I, J),
    v)`. Returns `(v (B, J, D), c (B, I, J))`, c the last iteration's unrounded couplings.
    """
    logits = u_hat.new_zeros(u_hat.shape[:3])  # (B, J, I)
    for it in range(iterations):
        last = it == iterations - 1
        c = torch.softmax(logits, dim=1)
        scale = None if vote_scales is None else vote_scales[0 if last else 1]
        v = weighted_parents(c, u_hat if last else routed, bias, quantize_levels if last else None, scale)
        if trace is not None:
            trace.append((c.detach().transpose(1, 2), v.detach()))
        if not last:
            logits = next_logits(logits, v)
    return v, c.transpose(1, 2)
