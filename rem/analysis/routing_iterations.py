"""Routing observed at every iteration, not only after the last (issue 36): the reproduction checklist of the
dynamic-routing paper asks to monitor routing entropy and the agreement between votes and outputs across iterations.

Per iteration t of `rem.routing.dynamic_routing` (its `trace`):
- coupling entropy: the entropy of each input capsule's couplings over the parents, in bits, averaged over inputs and
  images (log2 J at the first iteration, where every logit is 0: uniform couplings);
- agreement: the coupling-weighted cosine between each vote û_j|i and its parent's output v_j, Σ_j c_ij cos(û_j|i,
  v_j), averaged over inputs and images (in [-1, 1]; it rises when routing sends each input where its vote agrees).
"""

from __future__ import annotations

import torch

from rem.capsules import EPS
from rem.routing import dynamic_routing


def coupling_entropy_bits(c: torch.Tensor) -> float:
    """Mean over images and inputs of the entropy (bits) of couplings `(B, I, J)` over the parents J."""
    c = c.double()
    return float(-(c * torch.log2(c.clamp_min(1e-30))).sum(-1).mean())


def agreement(votes: torch.Tensor, c: torch.Tensor, v: torch.Tensor) -> float:
    """Mean over images and inputs of Σ_j c_ij cos(û_j|i, v_j); votes `(B, I, J, D)`, c `(B, I, J)`, v `(B, J, D)`."""
    votes, v = votes.double(), v.double()
    cosine = (votes * v.unsqueeze(1)).sum(-1) / (votes.norm(dim=-1) * v.norm(dim=-1).unsqueeze(1) + EPS)
    return float((c.double() * cosine).sum(-1).mean())


@torch.no_grad()
def per_iteration(votes: torch.Tensor, iterations: int, bias: torch.Tensor | None = None) -> list[dict[str, float]]:
    """Each iteration's coupling entropy and agreement for `votes` `(B, I, J, D)` routed by dynamic routing."""
    trace: list = []
    dynamic_routing(votes, iterations, bias, trace=trace)
    return [{"iteration": t, "coupling_entropy": coupling_entropy_bits(c), "agreement": agreement(votes, c, v)}
            for t, (c, v) in enumerate(trace, start=1)]
