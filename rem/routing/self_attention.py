"""Efficient-CapsNet's self-attention routing (`model.routing: self_attention`): one pass, no iterations."""

from __future__ import annotations

import math

import torch

from rem.capsules import efficient_squash
from rem.routing.common import parent_major, quantize_couplings
from rem.routing.registry import PRIOR, register_routing


def self_attention_routing(
    votes: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    quantize_levels: int | None = None,
    trace: list | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Efficient-CapsNet's non-iterative self-attention routing (Mazzia et al. 2021, `FCCaps`).

    For each parent j the agreement logit of input i is the row sum of the self-attention matrix
    U_j U_j^T / sqrt(D): a_ji = sum_k <u_hat_j|i, u_hat_j|k> / sqrt(D), computed as <u_hat_j|i, sum_k u_hat_j|k>
    (O(I*J*D) instead of O(I^2*J*D)). c = softmax of a over the parents J. The learned prior `bias`
    (shape `(I, J)`, Efficient-CapsNet's B, zero-initialised) is ADDED AFTER the softmax:
    s_j = sum_i u_hat_j|i (c_ij + B_ij), v_j = efficient_squash(s_j).

    Returns `(v (B, J, D), c (B, I, J))` where c is the softmax couplings only (rows sum to 1 over
    parents); the prior is NOT part of c. `quantize_levels` quantizes c (not c + B) in the weighted sum.
    `trace`, when given, receives the one pass's `(c, v)`, detached.
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
    if trace is not None:
        trace.append((c.detach().transpose(1, 2), v.detach()))
    return v, c.transpose(1, 2)


@register_routing("self_attention", bias=PRIOR, iterative=False)
def route_self_attention(votes: torch.Tensor, iterations: int, bias: torch.Tensor | None = None, *,
                         quantize_levels: int | None = None,
                         trace: list | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """`self_attention_routing` under the registry's convention: one pass whatever `iterations` (it has no loop)."""
    return self_attention_routing(votes, bias, quantize_levels=quantize_levels, trace=trace)
