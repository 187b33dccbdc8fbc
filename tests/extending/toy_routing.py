"""A routing of one's own, registered from outside `rem/` (docs/extending.md): every input capsule sends its vote to
every parent in equal parts, in one pass -- the floor routing-by-agreement should beat. Trials find it through
REM_PLUGINS=tests.extending.toy_routing.

Its one option of its own, `model.routing_options.sharpness`, is declared as a dataclass at its registration and
arrives as a keyword of the call: above 0, each input leans to the parents its vote is longest for."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from rem.routing import parent_major, register_routing, weighted_parents


@dataclass(frozen=True)
class UniformOptions:
    sharpness: float = 0.0  # c_ij = softmax_j(sharpness * |u_hat_j|i|): 0 is equal parts

    def __post_init__(self):
        if self.sharpness < 0:  # its type is read against the annotation: only the range is its own to check
            raise ValueError(f"sharpness must be a number >= 0; got {self.sharpness!r}")


@register_routing("uniform", iterative=False, options=UniformOptions)
def uniform_routing(votes: torch.Tensor, iterations: int, bias: torch.Tensor | None = None, *,
                    quantize_levels: int | None = None, trace: list | None = None,
                    sharpness: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """c_ij = 1/J for every input i and parent j whatever `iterations` (nothing to iterate on), or with `sharpness` > 0
    softmax_j(sharpness * |u_hat_j|i|); v_j = squash(sum_i c_ij u_hat_j|i + bias_j), the couplings rounded to
    `quantize_levels` in the sum for +Q."""
    with torch.autocast(votes.device.type, enabled=False):  # routing runs in fp32, as the built-in ones do
        u_hat = parent_major(votes)  # (B, J, I, D)
        if sharpness:
            c = torch.softmax(sharpness * u_hat.float().norm(dim=-1), dim=1)  # (B, J, I), over the parents
        else:
            c = torch.full(u_hat.shape[:3], 1.0 / u_hat.shape[1], device=u_hat.device)  # (B, J, I)
        v = weighted_parents(c, u_hat, bias, quantize_levels)
    if trace is not None:
        trace.append((c.transpose(1, 2), v.detach()))
    return v, c.transpose(1, 2)
