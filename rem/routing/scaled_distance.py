"""γ-CapsNet's scaled-distance agreement (`model.routing: scaled_distance`): votes clipped to their input capsule's
activation, couplings from each parent's distance to each vote."""

from __future__ import annotations

import math

import torch

from rem.capsules import EPS
from rem.routing.common import SharedVotes, agreement_iterations
from rem.routing.registry import register_routing


def clip_vote_lengths(u_hat: torch.Tensor, activations: torch.Tensor) -> torch.Tensor:
    """Votes `(B, J, I, D)` rescaled to length min(a_i, |u_hat_j|i|), activations `(B, I)`: γ-capsules' clip, as a
    reference (the routing carries `vote_scales` instead). Zero votes stay 0, where REM's code gives NaN."""
    scale, _ = vote_scales(SharedVotes(u_hat), activations)
    return u_hat * scale.unsqueeze(-1)


def vote_scales(u_hat: SharedVotes, activations: torch.Tensor | None) -> tuple[torch.Tensor | None, torch.Tensor]:
    """Each vote's clip factor min(a_i, |u|) / |u| (None without activations) and squared length, both `(B, J, I)`:
    cheaper than materialising the clipped votes."""
    squared = u_hat.squared()
    if activations is None:
        return None, squared
    return ClipFactors.apply(squared, activations.float()), squared


class ClipFactors(torch.autograd.Function):
    """min(a_i, n) / n, n = sqrt(|u|^2 + EPS), from squared lengths `(B, J, I)` and activations `(B, I)`; ties are
    not clipped. Written out because autograd's `minimum` spends four passes on ties alone."""

    @staticmethod
    def forward(ctx, squared, activations):
        norm2 = squared + EPS
        norm = norm2.sqrt()
        limit = activations[:, None, :]  # (B, 1, I)
        clipped = norm > limit
        ctx.save_for_backward(norm, norm2, clipped, activations)
        return torch.where(clipped, limit / norm, 1.0)

    @staticmethod
    def backward(ctx, grad):
        norm, norm2, clipped, activations = ctx.saved_tensors
        per_norm = (grad / norm).mul_(clipped)  # d(a / n)/da = 1 / n where clipped, 0 elsewhere
        grad_activations = per_norm.sum(1) if ctx.needs_input_grad[1] else None
        grad_squared = None
        if ctx.needs_input_grad[0]:  # d(a / n)/dq = -a / (2 n^3), n^2 = q + EPS
            grad_squared = per_norm.mul_(activations[:, None, :] * -0.5).div_(norm2)
        return grad_squared, grad_activations


def distance_logits(v: torch.Tensor, votes: SharedVotes, scale: torch.Tensor | None, squared: torch.Tensor,
                    log_odds: float, fixed: tuple[torch.Tensor | None, torch.Tensor]) -> torch.Tensor:
    """Next logits `(B, J, I)` = t * |v_j - s_ij u_hat_j|i|, t < 0 from `log_odds` = log(p (J - 1) / (1 - p)).
    The distance is expanded so the votes are read once, by one batched matrix-vector product; `fixed` is
    `fixed_terms(scale, squared)`, made once for every iteration."""
    dots = votes.dots(v)  # (B, J, I)
    return DistanceLogits.apply(dots, v, scale, squared, fixed, log_odds)


def fixed_terms(scale: torch.Tensor | None, squared: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor]:
    """(s^2, s^2 q) without gradient ((None, q) where `scale` is None): the parts of the expanded distance that do
    not change between iterations (`DistanceLogits` differentiates them itself)."""
    with torch.no_grad():
        if scale is None:
            return None, squared.detach()
        scale2 = scale * scale
        return scale2, scale2 * squared


class DistanceLogits(torch.autograd.Function):
    """t * sqrt(max(|v|^2 - 2 s d + s^2 q, 0) + EPS) from dots d, clip factors s (None: 1), squared lengths q (all
    `(B, J, I)`), parents v `(B, J, D)` and `fixed_terms` (s^2, s^2 q); t = log_odds / (d_o / 2 - d_o - 1e-12), d_o
    the sample's mean distance. The clamp absorbs rounding below 0; written out to halve autograd's passes over
    (B, J, I): each pass over them costs as much as one over the votes' gradient here."""

    @staticmethod
    def forward(ctx, dots, parents, scale, squared, fixed, log_odds: float):
        scale2, constant = fixed
        r = constant + parents.square().sum(-1, keepdim=True)  # s^2 q + |v|^2
        if scale is None:
            r.add_(dots, alpha=-2.0)
        else:
            r.addcmul_(scale, dots, value=-2.0)
        inside = r >= 0  # where the clamp passes a gradient
        dist = r.clamp_min_(0.0).add_(EPS).sqrt_()
        d_o = dist.mean(dim=(1, 2), keepdim=True)
        den = 0.5 * d_o - d_o - 1e-12
        ctx.save_for_backward(dots, parents, scale, squared, scale2, inside, dist, den)
        ctx.log_odds = log_odds
        return dist * (log_odds / den)

    @staticmethod
    def backward(ctx, grad):
        dots, parents, scale, squared, scale2, inside, dist, den = ctx.saved_tensors
        b, j, i = dist.shape
        t = ctx.log_odds / den
        # t depends on every distance through their mean d_o: dt/dd_o = log_odds / (2 den^2)
        grad_t = torch.bmm(grad.reshape(b, 1, j * i), dist.reshape(b, j * i, 1)).view(b, 1, 1)
        through_mean = grad_t * (0.5 * ctx.log_odds) / (den * den * (j * i))
        # k = -2 dL/dr; d sqrt(r + EPS) / dr = 1 / (2 dist), 0 where the clamp held
        k = torch.addcmul(-through_mean, grad, -t).div_(dist).mul_(inside)
        grad_parents = -parents * k.sum(2, keepdim=True) if ctx.needs_input_grad[1] else None  # dr/dv = 2 v
        grad_squared = None
        if ctx.needs_input_grad[3]:  # dr/dq = s^2
            grad_squared = k * -0.5 if scale2 is None else (k * scale2).mul_(-0.5)
        if scale is None:
            return k, grad_parents, None, grad_squared, None, None
        grad_scale = None
        if ctx.needs_input_grad[2]:  # dr/ds = 2 s q - 2 d
            grad_scale = torch.addcmul(dots, scale, squared, value=-1.0).mul_(k)
        return scale * k, grad_parents, grad_scale, grad_squared, None, None


@register_routing("scaled_distance", activations=True, takes=("p", "grad_through_routing"))
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
        u_hat = SharedVotes(votes.transpose(1, 2))  # (B, J, I, D)
        scale, squared = vote_scales(u_hat, activations)
        num_parents = u_hat.votes.shape[1]
        # what the non-final iterations see: the same votes and clip factors, detached unless gradients run through
        keep = (lambda t: t) if grad_through_routing else (lambda t: None if t is None else t.detach())
        routed = u_hat if grad_through_routing else u_hat.detached()
        routed_scale, routed_squared = keep(scale), keep(squared)
        log_odds = math.log(p * (num_parents - 1) / (1.0 - p)) if num_parents > 1 else 0.0
        fixed = fixed_terms(routed_scale, routed_squared) if num_parents > 1 and iterations > 1 else None

        def next_logits(logits: torch.Tensor | None, v: torch.Tensor) -> torch.Tensor | None:
            if num_parents == 1:  # t is undefined; the one parent's coupling is 1 whatever the logits
                return logits
            return distance_logits(keep(v), routed, routed_scale, routed_squared, log_odds, fixed)

        scales = None if scale is None else (scale, routed_scale)
        return agreement_iterations(u_hat, routed, iterations, bias, quantize_levels, trace, next_logits, scales)
