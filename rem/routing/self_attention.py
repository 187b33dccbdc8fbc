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
    """Efficient-CapsNet's self-attention routing (Mazzia et al. 2021, `FCCaps`): logit a_ji = <u_hat_j|i, sum_k
    u_hat_j|k> / sqrt(D), c = softmax over parents, v_j = efficient_squash(sum_i u_hat_j|i (c_ij + B_ij)), the prior
    `bias` B (I, J) added after the softmax. Returns `(v (B, J, D), c (B, I, J))`, c without B; +Q rounds c only."""
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
    """`self_attention_routing` under the registry's convention; `iterations` is ignored."""
    return self_attention_routing(votes, bias, quantize_levels=quantize_levels, trace=trace)
