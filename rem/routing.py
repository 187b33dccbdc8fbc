"""Routing algorithms as pure functions of the votes.

Conventions shared by every routing here:
- votes `(B, I, J, D)`: input capsule i's prediction for parent j;
- couplings `(B, I, J)`: how much of input i goes to parent j, a softmax over the parents J;
- routing runs in fp32 (softmax of agreement logits is where bf16 loses the ordering).
"""

from __future__ import annotations

import math

import torch

from rem.capsules import EPS, efficient_squash, squash
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


def _parents(c: torch.Tensor, u_hat: torch.Tensor, bias: torch.Tensor | None, quantize_levels: int | None) -> torch.Tensor:
    """v_j = squash(sum_i c_ij u_hat_j|i + bias_j) from parent-major couplings (B, J, I) and votes (B, J, I, D)."""
    weights = quantize_couplings(c, quantize_levels) if quantize_levels else c
    s = torch.matmul(weights.unsqueeze(2), u_hat).squeeze(2)  # (B, J, D)
    if bias is not None:
        s = s + bias.float()
    return squash(s)


def dynamic_routing(
    votes: torch.Tensor,
    iterations: int,
    bias: torch.Tensor | None = None,
    *,
    quantize_levels: int | None = None,
    trace: list | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sabour et al.'s routing-by-agreement, as REM's official code runs it.

    Logits start at 0 for every sample; c = softmax over parents; s_j = sum_i c_ij u_hat_j|i (+ bias);
    v = squash(s); b_ij += <u_hat_j|i, v_j> between iterations. Gradients flow only through the last
    iteration (votes are detached before it), which saves autograd memory without changing the forward.

    `quantize_levels` replaces the last iteration's couplings by their quantized values in the weighted
    sum (REM's "+Q" forward). Returns `(v (B, J, D), c (B, I, J))`, c being the last iteration's couplings.
    `trace`, when given, receives each iteration's `(c (B, I, J), v (B, J, D))`, detached
    (`rem.analysis.routing_iterations` reads it).
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
            v = _parents(c, u_hat if last else detached, bias, quantize_levels if last else None)
            if trace is not None:
                trace.append((c.detach().transpose(1, 2), v.detach()))
            if not last:
                logits = logits + torch.matmul(detached, v.unsqueeze(-1)).squeeze(-1)
    return v, c.transpose(1, 2)


def self_attention_routing(
    votes: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    quantize_levels: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Efficient-CapsNet's non-iterative self-attention routing (Mazzia et al. 2021, `FCCaps`).

    For each parent j the agreement logit of input i is the row sum of the self-attention matrix
    U_j U_j^T / sqrt(D): a_ji = sum_k <u_hat_j|i, u_hat_j|k> / sqrt(D), computed as <u_hat_j|i, sum_k u_hat_j|k>
    (O(I*J*D) instead of O(I^2*J*D)). c = softmax of a over the parents J. The learned prior `bias`
    (shape `(I, J)`, Efficient-CapsNet's B, zero-initialised) is ADDED AFTER the softmax:
    s_j = sum_i u_hat_j|i (c_ij + B_ij), v_j = efficient_squash(s_j).

    Returns `(v (B, J, D), c (B, I, J))` where c is the softmax couplings only (rows sum to 1 over
    parents); the prior is NOT part of c. `quantize_levels` quantizes c (not c + B) in the weighted sum.
    """
    with torch.autocast(votes.device.type, enabled=False):
        u_hat = parent_major(votes)  # (B, J, I, D)
        d = u_hat.shape[-1]
        total = u_hat.sum(dim=2, keepdim=True)  # (B, J, 1, D)
        logits = torch.matmul(u_hat, total.transpose(-1, -2)).squeeze(-1) / math.sqrt(d)  # (B, J, I)
        c = torch.softmax(logits, dim=1)
        weights = quantize_couplings(c, quantize_levels) if quantize_levels else c
        if bias is not None:
            weights = weights + bias.float().t()  # prior (I, J) -> (J, I), broadcast over the batch
        s = torch.matmul(weights.unsqueeze(2), u_hat).squeeze(2)  # (B, J, D)
        v = efficient_squash(s)
    return v, c.transpose(1, 2)


def clip_vote_lengths(u_hat: torch.Tensor, activations: torch.Tensor) -> torch.Tensor:
    """γ-capsules' restriction |u_hat_j|i| <= a_i: parent-major votes `(B, J, I, D)`, activations `(B, I)`.

    Each vote is rescaled to length min(a_i, |u_hat_j|i|); the epsilon inside the root keeps zero votes at 0
    (REM's code divides by the bare norm, which is NaN for a zero vote).
    """
    norm = torch.sqrt((u_hat * u_hat).sum(dim=-1, keepdim=True) + EPS)
    target = torch.minimum(norm, activations.float()[:, None, :, None])
    return u_hat * (target / norm)


def scaled_distance_routing(
    votes: torch.Tensor,
    iterations: int,
    bias: torch.Tensor | None = None,
    activations: torch.Tensor | None = None,
    *,
    quantize_levels: int | None = None,
    p: float = 0.9,
    grad_through_routing: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """γ-CapsNet's scaled-distance-agreement (SDA) routing (Peer et al., as REM's `sda_routing` runs it).

    1. If `activations` `(B, I)` is given, each vote's length is clipped to its input capsule's activation
       (`clip_vote_lengths`); gradients flow through the clipping.
    2. Logits start at 0; c = softmax over parents; s_j = sum_i c_ij u_hat_j|i (+ bias); v = squash(s) (Hinton).
    3. Between iterations: d_ij = |v_j - u_hat_j|i|, d_o = mean distance, d_p = d_o / 2, and
       logits = t * d with t = log(p (J - 1) / (1 - p)) / (d_p - d_o) < 0: a parent at distance d_p, the
       others at d_o, gets probability p (0.9). Nearer parents get larger couplings.
    4. `grad_through_routing=False` (REM's port): gradients only through the last iteration; earlier
       iterations use detached votes, so the last couplings are constants for autograd. `True` (Peer et al.'s
       original γ-capsule code): autograd also runs through the distances and couplings of every iteration.
       Detaching is harmless for dynamic routing, where lengthening an agreeing vote also raises its
       coupling; under SDA a vote made longer moves away from a still-short parent and loses coupling, a
       reaction the detached gradient cannot see (it fits 512 Fashion-MNIST images about twice as fast).

    Assumptions where the references are silent or where we deliberately differ from REM's code:
    - d_o is the mean over (parents, inputs) PER SAMPLE; REM's code averages over the whole batch too
      (its routing then depends on the other samples of the batch; ours does not).
    - distances use sqrt(|.|^2 + EPS) and the denominator adds 1e-12, so all-zero inputs give uniform
      couplings instead of NaN; J = 1 keeps logits at 0 (t is undefined, every coupling is 1 anyway).
    - the vote-length clip uses the input capsule's L2 length (its activation), passed in by the model.
    `quantize_levels` quantizes the last iteration's couplings in the weighted sum (REM's +Q).
    Returns `(v (B, J, D), c (B, I, J))`, c the last iteration's (unquantized) couplings.
    """
    if iterations < 1:
        raise ValueError(f"scaled_distance_routing: iterations must be >= 1, got {iterations}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"scaled_distance_routing: p must be in (0, 1), got {p}")
    with torch.autocast(votes.device.type, enabled=False):
        u_hat = parent_major(votes)  # (B, J, I, D)
        if activations is not None:
            u_hat = clip_vote_lengths(u_hat, activations)
        num_parents = u_hat.shape[1]
        routed = u_hat if grad_through_routing else u_hat.detach()  # what the non-final iterations see
        logits = u_hat.new_zeros(u_hat.shape[:3])  # (B, J, I)
        log_odds = math.log(p * (num_parents - 1) / (1.0 - p)) if num_parents > 1 else 0.0
        for it in range(iterations):
            last = it == iterations - 1
            c = torch.softmax(logits, dim=1)
            v = _parents(c, u_hat if last else routed, bias, quantize_levels if last else None)
            if not last and num_parents > 1:
                diff = (v if grad_through_routing else v.detach()).unsqueeze(2) - routed  # (B, J, I, D)
                dist = torch.sqrt((diff * diff).sum(dim=-1) + EPS)  # (B, J, I)
                d_o = dist.mean(dim=(1, 2), keepdim=True)
                t = log_odds / (0.5 * d_o - d_o - 1e-12)
                logits = t * dist
    return v, c.transpose(1, 2)
