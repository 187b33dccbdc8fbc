"""Sabour et al.'s routing-by-agreement (`model.routing: dynamic`), CapsNet's and DeepCaps' class layer."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rem.routing.common import agreement_iterations, parent_major
from rem.routing.registry import register_routing


@dataclass(frozen=True)
class DynamicOptions:
    """Dynamic routing's options; CapsNet sets `agreement_scale` from its own `model.options`."""

    agreement_scale: float = 1.0  # the factor on the agreement added to the logits each iteration


@register_routing("dynamic", options=DynamicOptions)
def dynamic_routing(
    votes: torch.Tensor,
    iterations: int,
    bias: torch.Tensor | None = None,
    *,
    quantize_levels: int | None = None,
    trace: list | None = None,
    agreement_scale: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sabour et al.'s routing-by-agreement as REM runs it: b_ij += agreement_scale * <u_hat_j|i, v_j> between
    iterations, gradients through the last iteration only. Returns `(v (B, J, D), c (B, I, J))`, the last couplings;
    `quantize_levels` rounds them in the sum (+Q), `trace` gets each iteration's detached `(c, v)`."""
    if iterations < 1:
        raise ValueError(f"dynamic_routing: iterations must be >= 1, got {iterations}")
    with torch.autocast(votes.device.type, enabled=False):
        u_hat = parent_major(votes)  # (B, J, I, D)
        detached = u_hat.detach()

        def next_logits(logits: torch.Tensor | None, v: torch.Tensor) -> torch.Tensor:
            agreement = agreement_scale * torch.matmul(detached, v.unsqueeze(-1)).squeeze(-1)
            return agreement if logits is None else logits + agreement  # None: the first logits, all 0

        return agreement_iterations(u_hat, detached, iterations, bias, quantize_levels, trace, next_logits)
