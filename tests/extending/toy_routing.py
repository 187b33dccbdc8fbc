"""A routing of one's own, registered from outside `rem/` (README, "Extending"): every input capsule sends its vote to
every parent in equal parts, in one pass -- the floor routing-by-agreement should beat. Trials find it through
REM_PLUGINS=tests.extending.toy_routing."""

from __future__ import annotations

import torch

from rem.routing import parent_major, register_routing, weighted_parents


@register_routing("uniform", iterative=False)
def uniform_routing(votes: torch.Tensor, iterations: int, bias: torch.Tensor | None = None, *,
                    quantize_levels: int | None = None, trace: list | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """c_ij = 1/J for every input i and parent j whatever `iterations` (nothing to iterate on);
    v_j = squash(sum_i c_ij u_hat_j|i + bias_j), the couplings rounded to `quantize_levels` in the sum for +Q."""
    with torch.autocast(votes.device.type, enabled=False):  # routing runs in fp32, as the built-in ones do
        u_hat = parent_major(votes)  # (B, J, I, D)
        c = torch.full(u_hat.shape[:3], 1.0 / u_hat.shape[1], device=u_hat.device)  # (B, J, I)
        v = weighted_parents(c, u_hat, bias, quantize_levels)
    if trace is not None:
        trace.append((c.transpose(1, 2), v.detach()))
    return v, c.transpose(1, 2)
