"""γ-CapsNet's scaled-distance agreement (`model.routing: scaled_distance`): votes clipped to their input capsule's
activation, parents' couplings from their distance to each vote."""

from __future__ import annotations

import math

import torch

from rem.capsules import EPS
from rem.routing.common import SquaredLengths, VoteDots, agreement_iterations, parent_major
from rem.routing.registry import register_routing


def clip_vote_lengths(u_hat: torch.Tensor, activations: torch.Tensor) -> torch.Tensor:
    """γ-capsules' restriction |u_hat_j|i| <= a_i: parent-major votes `(B, J, I, D)`, activations `(B, I)`.

    Each vote is rescaled to length min(a_i, |u_hat_j|i|); the epsilon inside the root keeps zero votes at 0
    (REM's code divides by the bare norm, which is NaN for a zero vote). The routing itself never materialises the
    clipped votes: it carries `vote_scales` instead; this is the definition they are tested against.
    """
    scale, _ = vote_scales(u_hat, activations)
    return u_hat * scale.unsqueeze(-1)


def vote_scales(u_hat: torch.Tensor, activations: torch.Tensor | None) -> tuple[torch.Tensor | None, torch.Tensor]:
    """Each vote's clip factor min(a_i, |u|) / |u| `(B, J, I)` (None without activations) and its squared length
    before the clip `(B, J, I)`: one pass over the votes each way (`SquaredLengths`), where the clipped votes
    themselves would cost three forward and more backward."""
    squared = SquaredLengths.apply(u_hat)
    if activations is None:
        return None, squared
    norm = torch.sqrt(squared + EPS)
    return torch.minimum(norm, activations.float()[:, None, :]) / norm, squared


def distance_logits(v: torch.Tensor, votes: torch.Tensor, scale: torch.Tensor | None, squared: torch.Tensor,
                    log_odds: float) -> torch.Tensor:
    """Next iteration's logits `(B, J, I)` = t * |v_j - s_ij u_hat_j|i|, t < 0 putting probability p on a parent at
    half the mean distance when the others sit at the mean (`log_odds` = log(p (J - 1) / (1 - p))).

    The distance is expanded, |v|^2 - 2 s <u, v> + s^2 |u|^2, so the only pass over the votes `(B, J, I, D)` is one
    batched matrix-vector product (s: the clip factors, |u|^2: `squared`, from `vote_scales`); rounding can take the
    expansion a hair below 0 where a vote meets its parent, hence the clamp before the root's epsilon.
    """
    dots = VoteDots.apply(votes, v)  # (B, J, I)
    own = (v * v).sum(-1, keepdim=True)  # (B, J, 1)
    if scale is None:
        dist2 = own - 2.0 * dots + squared
    else:
        dist2 = own - 2.0 * scale * dots + scale * scale * squared
    dist = torch.sqrt(dist2.clamp_min(0.0) + EPS)
    d_o = dist.mean(dim=(1, 2), keepdim=True)
    t = log_odds / (0.5 * d_o - d_o - 1e-12)
    return t * dist


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

    1. If `activations` `(B, I)` is given, each vote's length is clipped to its input capsule's activation
       (`clip_vote_lengths`, carried as per-vote factors); gradients flow through the clipping.
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
    `quantize_levels` quantizes the last iteration's couplings in the weighted sum (REM's +Q); `trace` receives
    each iteration's `(c, v)`, detached. Returns `(v (B, J, D), c (B, I, J))`, c the last iteration's
    (unquantized) couplings.
    """
    if iterations < 1:
        raise ValueError(f"scaled_distance_routing: iterations must be >= 1, got {iterations}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"scaled_distance_routing: p must be in (0, 1), got {p}")
    with torch.autocast(votes.device.type, enabled=False):
        u_hat = parent_major(votes)  # (B, J, I, D)
        scale, squared = vote_scales(u_hat, activations)
        num_parents = u_hat.shape[1]
        # what the non-final iterations see: the same votes and clip factors, detached unless gradients run through
        keep = (lambda t: t) if grad_through_routing else (lambda t: None if t is None else t.detach())
        routed, routed_scale, routed_squared = keep(u_hat), keep(scale), keep(squared)
        log_odds = math.log(p * (num_parents - 1) / (1.0 - p)) if num_parents > 1 else 0.0

        def next_logits(logits: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            if num_parents == 1:  # t is undefined; the one parent's coupling is 1 whatever the logits
                return logits
            return distance_logits(keep(v), routed, routed_scale, routed_squared, log_odds)

        scales = None if scale is None else (scale, routed_scale)
        return agreement_iterations(u_hat, routed, iterations, bias, quantize_levels, trace, next_logits, scales)
