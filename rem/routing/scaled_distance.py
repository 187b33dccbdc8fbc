"""γ-CapsNet's scaled-distance agreement (`model.routing: scaled_distance`): votes clipped to their input capsule's
activation, couplings from each parent's distance to each vote."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from rem.capsules import EPS
from rem.routing.common import SharedVotes, agreement_iterations
from rem.routing.loops import Loop, compiles
from rem.routing.registry import register_routing


def clip_vote_lengths(u_hat: torch.Tensor, activations: torch.Tensor) -> torch.Tensor:
    """Votes `(B, J, I, D)` rescaled to length min(a_i, |u_hat_j|i|), activations `(B, I)`: γ-capsules' clip, as a
    reference (the routing carries `vote_scales` instead). Zero votes stay 0, where REM's code gives NaN."""
    scale, _ = vote_scales(SharedVotes(u_hat), activations)
    return u_hat * scale.unsqueeze(-1)


def vote_scales(u_hat: SharedVotes, activations: torch.Tensor | None,
                compiled: bool = False) -> tuple[torch.Tensor | None, torch.Tensor]:
    """Each vote's clip factor min(a_i, |u|) / |u| (None without activations) and squared length, both `(B, J, I)`:
    cheaper than materialising the clipped votes. `compiled`: run the elementwise loops compiled (`loops.compiles`)."""
    squared = u_hat.squared()
    if activations is None:
        return None, squared
    return ClipFactors.apply(squared, activations.float(), compiled), squared


def clip_factors(squared: torch.Tensor, limit: torch.Tensor) -> torch.Tensor:
    """min(a, n) / n, n = sqrt(q + EPS), from squared lengths q `(B, J, I)` and activations a `(B, 1, I)`; ties are
    not clipped."""
    norm = torch.sqrt(squared + EPS)
    return torch.where(norm > limit, limit / norm, 1.0)


def clip_factors_backward(grad: torch.Tensor, squared: torch.Tensor, limit: torch.Tensor):
    """(dL/dq, dL/da before its sum over parents): d(a / n)/da = 1 / n where clipped, 0 elsewhere; d(a / n)/dq =
    -a / (2 n^3), n^2 = q + EPS. The norms are made again rather than kept: a pass saved in memory and time."""
    norm2 = squared + EPS
    norm = torch.sqrt(norm2)
    per_norm = grad / norm * (norm > limit)
    return per_norm * limit * -0.5 / norm2, per_norm


CLIP = Loop(clip_factors)
CLIP_BACKWARD = Loop(clip_factors_backward)


class ClipFactors(torch.autograd.Function):
    """`clip_factors` of squared lengths `(B, J, I)` and activations `(B, I)`, with its backward written out (autograd
    of `minimum` spends four passes on ties alone), each direction one loop where `compiled`."""

    @staticmethod
    def forward(ctx, squared, activations, compiled: bool = False):
        ctx.save_for_backward(squared, activations)
        ctx.compiled = compiled
        return CLIP(compiled, squared, activations[:, None, :])

    @staticmethod
    def backward(ctx, grad):
        squared, activations = ctx.saved_tensors
        grad_squared, per_norm = CLIP_BACKWARD(ctx.compiled, grad, squared, activations[:, None, :])
        grad_activations = per_norm.sum(1) if ctx.needs_input_grad[1] else None
        return grad_squared if ctx.needs_input_grad[0] else None, grad_activations, None


def distance_logits(v: torch.Tensor, votes: SharedVotes, scale: torch.Tensor | None, squared: torch.Tensor,
                    log_odds: float, compiled: bool = False) -> torch.Tensor:
    """Next logits `(B, J, I)` = t * |v_j - s_ij u_hat_j|i|, t < 0 from `log_odds` = log(p (J - 1) / (1 - p)).
    The distance is expanded so the votes are read once, by one batched matrix-vector product."""
    dots = votes.dots(v)  # (B, J, I)
    return DistanceLogits.apply(dots, v, scale, squared, log_odds, compiled)


def squared_distances(dots, parents_squared, scale, squared):
    """|v - s u|^2 expanded: s^2 q - 2 s d + |v|^2 (s None: 1), parents' squared lengths `(B, J, 1)`."""
    if scale is None:
        return squared - 2.0 * dots + parents_squared
    return scale * scale * squared - 2.0 * scale * dots + parents_squared


def distances(dots, parents_squared, scale, squared):
    """sqrt(max(`squared_distances`, 0) + EPS): the clamp absorbs rounding below 0."""
    return torch.sqrt(squared_distances(dots, parents_squared, scale, squared).clamp_min(0.0) + EPS)


def distances_backward(grad, dist, t, through_mean, dots, parents_squared, scale, squared):
    """k = -2 dL/dr (r the squared distance; 0 where the clamp held, r made again rather than kept) and the
    gradients of dots (s k), clip factors ((d - s q) k) and squared lengths (-s^2 k / 2); dr/dv = 2 v is left to
    the caller, as it sums k over inputs."""
    inside = squared_distances(dots, parents_squared, scale, squared) >= 0
    k = (grad * -t - through_mean) / dist * inside  # d sqrt(r + EPS) / dr = 1 / (2 dist)
    if scale is None:
        return k, k, None, k * -0.5
    return k, scale * k, (dots - scale * squared) * k, k * (scale * scale) * -0.5


DISTANCES = Loop(distances)
DISTANCES_BACKWARD = Loop(distances_backward)


class DistanceLogits(torch.autograd.Function):
    """t * `distances` from dots d, clip factors s (None: 1), squared lengths q (all `(B, J, I)`) and parents v
    `(B, J, D)`; t = log_odds / (d_o / 2 - d_o - 1e-12), d_o the sample's mean distance. Written out to halve
    autograd's passes over (B, J, I), each as costly as one over the votes' gradient here; where `compiled`, the
    elementwise steps of each direction run as one loop, the means and sums in ATen."""

    @staticmethod
    def forward(ctx, dots, parents, scale, squared, log_odds: float, compiled: bool = False):
        parents_squared = parents.square().sum(-1, keepdim=True)
        dist = DISTANCES(compiled, dots, parents_squared, scale, squared)
        d_o = dist.mean(dim=(1, 2), keepdim=True)
        den = 0.5 * d_o - d_o - 1e-12
        ctx.save_for_backward(dots, parents, scale, squared, dist, den, parents_squared)
        ctx.log_odds, ctx.compiled = log_odds, compiled
        return dist * (log_odds / den)

    @staticmethod
    def backward(ctx, grad):
        dots, parents, scale, squared, dist, den, parents_squared = ctx.saved_tensors
        b, j, i = dist.shape
        t = ctx.log_odds / den
        # t depends on every distance through their mean d_o: dt/dd_o = log_odds / (2 den^2)
        grad_t = torch.bmm(grad.reshape(b, 1, j * i), dist.reshape(b, j * i, 1)).view(b, 1, 1)
        through_mean = grad_t * (0.5 * ctx.log_odds) / (den * den * (j * i))
        k, grad_dots, grad_scale, grad_squared = DISTANCES_BACKWARD(
            ctx.compiled, grad, dist, t, through_mean, dots, parents_squared, scale, squared)
        grad_parents = -parents * k.sum(2, keepdim=True) if ctx.needs_input_grad[1] else None
        needs = ctx.needs_input_grad
        return (grad_dots if needs[0] else None, grad_parents, grad_scale if needs[2] else None,
                grad_squared if needs[3] else None, None, None)


@dataclass(frozen=True)
class ScaledDistanceOptions:
    """SDA routing's options; γ-CapsNet sets both from its own `model.options`."""

    p: float = 0.9  # the probability of a parent at half the mean distance, the others at it
    grad_through_routing: bool = False  # gradients through every iteration (Peer et al.), not the last only (REM)


@register_routing("scaled_distance", activations=True, options=ScaledDistanceOptions)
def scaled_distance_routing(
    votes: torch.Tensor,
    iterations: int,
    bias: torch.Tensor | None = None,
    activations: torch.Tensor | None = None,
    *,
    quantize_levels: int | None = None,
    p: float = 0.9,
    grad_through_routing: bool = False,
    trace: list | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """γ-CapsNet's scaled-distance-agreement (SDA) routing (Peer et al., as REM's `sda_routing` runs it).

    Votes are clipped to `activations` (B, I) when given. Between iterations logits = t * |v_j - u_hat_j|i|, t < 0
    chosen so a parent at half the mean distance d_o, the others at d_o, gets probability `p`; d_o is per sample (REM
    averages over the batch too). `grad_through_routing` (Peer et al.'s code) backpropagates through every
    iteration, not just the last (REM's port): under SDA a longer vote can lose coupling, which the detached gradient
    cannot see. EPS in the distances and 1e-12 in t keep zero inputs uniform, not NaN; J = 1 keeps logits at 0.
    Returns `(v (B, J, D), c (B, I, J))`, c unrounded; `quantize_levels`, `trace` as in dynamic routing.
    """
    if iterations < 1:
        raise ValueError(f"scaled_distance_routing: iterations must be >= 1, got {iterations}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"scaled_distance_routing: p must be in (0, 1), got {p}")
    with torch.autocast(votes.device.type, enabled=False):
        compiled = compiles(votes)
        u_hat = SharedVotes(votes.transpose(1, 2))  # (B, J, I, D)
        scale, squared = vote_scales(u_hat, activations, compiled)
        num_parents = u_hat.votes.shape[1]
        # what the non-final iterations see: the same votes and clip factors, detached unless gradients run through
        keep = (lambda t: t) if grad_through_routing else (lambda t: None if t is None else t.detach())
        routed = u_hat if grad_through_routing else u_hat.detached()
        routed_scale, routed_squared = keep(scale), keep(squared)
        log_odds = math.log(p * (num_parents - 1) / (1.0 - p)) if num_parents > 1 else 0.0

        def next_logits(logits: torch.Tensor | None, v: torch.Tensor) -> torch.Tensor | None:
            if num_parents == 1:  # t is undefined; the one parent's coupling is 1 whatever the logits
                return logits
            return distance_logits(keep(v), routed, routed_scale, routed_squared, log_odds, compiled)

        scales = None if scale is None else (scale, routed_scale)
        return agreement_iterations(u_hat, routed, iterations, bias, quantize_levels, trace, next_logits, scales)
