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


class WeightedVotes(torch.autograd.Function):
    """s = sum_i w_i u_i per (b, j): weights `(B, J, I)`, parent-major votes `(B, J, I, D)` -> `(B, J, D)`.

    What `torch.matmul(w.unsqueeze(2), u)` computes, forward and backward, with one change: autograd's gradient for
    the votes is a batched matrix product of inner size 1, an outer product per (b, j) that CPU kernels run ~5x
    slower than the same products written as one broadcast multiplication. Each of its elements is a single product
    w_i g_d either way, so the numbers are the same to the bit."""

    @staticmethod
    def forward(ctx, weights: torch.Tensor, votes: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(weights, votes)
        return torch.matmul(weights.unsqueeze(2), votes).squeeze(2)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        weights, votes = ctx.saved_tensors
        grad_weights = grad_votes = None
        if ctx.needs_input_grad[0]:  # as matmul's backward: grad (B, J, 1, D) @ votes^T (B, J, D, I)
            grad_weights = torch.matmul(grad.unsqueeze(2), votes.transpose(-1, -2)).squeeze(2)
        if ctx.needs_input_grad[1]:
            grad_votes = weights.unsqueeze(-1) * grad.unsqueeze(2)
        return grad_weights, grad_votes


class VoteDots(torch.autograd.Function):
    """<u_i, v> per (b, j, i): parent-major votes `(B, J, I, D)`, parents `(B, J, D)` -> `(B, J, I)`; the votes'
    gradient as a broadcast product, for the reason `WeightedVotes` gives. Both matrix-vector products take the
    parents (or the gradient) as the left factor, v^T U^T and g^T U: CPU kernels run them 3-5x faster than U v and
    U^T g, the same sums of D (or I) products in another order (fp32 rounding differs)."""

    @staticmethod
    def forward(ctx, votes: torch.Tensor, parents: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(votes, parents)
        return torch.matmul(parents.unsqueeze(2), votes.mT).squeeze(2)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        votes, parents = ctx.saved_tensors
        grad_votes = grad_parents = None
        if ctx.needs_input_grad[0]:
            grad_votes = grad.unsqueeze(-1) * parents.unsqueeze(2)
        if ctx.needs_input_grad[1]:
            grad_parents = torch.matmul(grad.unsqueeze(2), votes).squeeze(2)
        return grad_votes, grad_parents


class SquaredLengths(torch.autograd.Function):
    """|u|^2 over the last axis, `(..., D)` -> `(...)`, its gradient 2 u g in one broadcast product (a norm's
    backward divides by the norm and masks its zeros: three passes over the votes)."""

    @staticmethod
    def forward(ctx, votes: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(votes)
        return torch.linalg.vecdot(votes, votes)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (votes,) = ctx.saved_tensors
        return votes * (2.0 * grad).unsqueeze(-1)


def weighted_parents(c: torch.Tensor, u_hat: torch.Tensor, bias: torch.Tensor | None,
                     quantize_levels: int | None, vote_scale: torch.Tensor | None = None) -> torch.Tensor:
    """v_j = squash(sum_i c_ij u_hat_j|i + bias_j) from parent-major couplings (B, J, I) and votes (B, J, I, D);
    `quantize_levels` rounds the couplings in the sum (REM's +Q). `vote_scale` (B, J, I) multiplies each vote
    (γ-CapsNet's length clip), applied to the (rounded) coupling so the rescaled votes are never materialised."""
    weights = quantize_couplings(c, quantize_levels) if quantize_levels else c
    if vote_scale is not None:
        weights = weights * vote_scale
    s = WeightedVotes.apply(weights, u_hat)  # (B, J, D)
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
