"""What every routing shares: parent-major votes, the weighted vote sum, REM's +Q rounding.

Votes are `(B, I, J, D)` (input i's prediction for parent j), couplings `(B, I, J)` a softmax over the parents;
routing runs in fp32, since bf16 loses the ordering of the agreement logits.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rem.capsules import squash
from rem.parse_trees import quantize
from rem.routing.loops import Loop, compiles


def quantize_couplings(c: torch.Tensor, levels: int) -> torch.Tensor:
    """Couplings rounded to the nearest of `levels` equally spaced values in [0, 1] (REM's +Q), ties down as REM's
    (e_k, e_k+1] bins; the gradient passes straight through."""
    q = quantize(c, levels).to(c.dtype) / (levels - 1)
    return c + (q - c).detach()


def parent_major(votes: torch.Tensor) -> torch.Tensor:
    """The votes as a contiguous fp32 `(B, J, I, D)` tensor (no copy if they already are): routing's batched matmuls
    over (b, j) run far faster on CPU in this layout. Relaid out before the cast: bf16 votes move half the bytes
    (16 against 43 ms for γ-CapsNet's 150 MB of fp32 votes, Zen 5)."""
    return votes.transpose(1, 2).contiguous().float()


def weighted_sum(weights: torch.Tensor, votes: torch.Tensor) -> torch.Tensor:
    """s = sum_i w_i u_i per (b, j): weights `(B, J, I)`, parent-major votes `(B, J, I, D)` -> `(B, J, D)`."""
    return torch.matmul(weights.unsqueeze(2), votes).squeeze(2)


def weights_gradient(grad: torch.Tensor, votes: torch.Tensor) -> torch.Tensor:
    """The weights' gradient of `weighted_sum`: g^T U^T per (b, j), `(B, J, I)` (matmul's own backward)."""
    return torch.matmul(grad.unsqueeze(2), votes.mT).squeeze(2)


def outer_share(a: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """a_i m per (b, j), `(B, J, I, D)`: a product's share of the votes' gradient, bit for bit autograd's but ~5x
    faster on CPU than its inner-size-1 batched matmul."""
    return a.unsqueeze(-1) * m.unsqueeze(2)


class WeightedVotes(torch.autograd.Function):
    """`weighted_sum` with `outer_share` as the votes' gradient, for votes nothing else reads; plain tensors, so
    torch.compile keeps it in one graph (`SharedVotes` is for votes several products read)."""

    @staticmethod
    def forward(ctx, weights: torch.Tensor, votes: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(weights, votes)
        return weighted_sum(weights, votes)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        weights, votes = ctx.saved_tensors
        grad_weights = weights_gradient(grad, votes) if ctx.needs_input_grad[0] else None
        return grad_weights, outer_share(weights, grad) if ctx.needs_input_grad[1] else None


class SharedVotes:
    """Votes read by several products, held once as parent-major `(B, J, I, D)` with their squared lengths
    (`(B, J, I)`, made in the same pass). Built from votes `(B, J, I, D)` in any memory order and dtype (the layer's
    `votes.transpose(1, 2)`); their gradient goes back in that order and dtype. The products' gradient shares are
    summed once at the end instead of one votes-sized tensor each (150 MB per share for γ-CapsNet at batch 128):
    the products take a scalar token for the votes, whose backward, run after theirs, hands on the sum. Not
    traceable by torch.compile (`WeightedVotes` is)."""

    def __init__(self, votes: torch.Tensor, _held: tuple[torch.Tensor, torch.Tensor] | None = None):
        self._sum = _GradientSum(votes)
        if votes.requires_grad:
            self._token, self._squared = _Votes.apply(votes, self._sum)
        else:
            self._token = None
            self._sum.votes, self._squared = _held or parent_major_with_lengths(votes)
        self.votes = self._sum.votes

    def detached(self) -> SharedVotes:
        """The same votes without gradient."""
        return SharedVotes(self.votes, (self.votes, self._squared.detach()))

    def weighted(self, weights: torch.Tensor) -> torch.Tensor:
        """s = sum_i w_i u_i per (b, j): weights `(B, J, I)` -> `(B, J, D)`."""
        return _Weighted.apply(weights, self._token, self._sum)

    def dots(self, parents: torch.Tensor) -> torch.Tensor:
        """<u_i, v> per (b, j, i): parents `(B, J, D)` -> `(B, J, I)`."""
        return _Dots.apply(parents, self._token, self._sum)

    def squared(self) -> torch.Tensor:
        """|u_i|^2 per (b, j, i) `(B, J, I)`."""
        return self._squared


def parent_major_with_lengths(votes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Votes `(B, J, I, D)` in view as a contiguous copy in at least fp32 (float64 stays), relaid out before the
    cast as `parent_major`, and their squared lengths `(B, J, I)` as a batch of (1 x D)(D x 1) products: 8 against
    22 ms for `vecdot`'s multiply-then-sum over γ-CapsNet's 150 MB of votes (Zen 5)."""
    held = votes.contiguous().to(torch.promote_types(votes.dtype, torch.float32))
    b, j, i, d = held.shape
    flat = held.view(b * j * i, 1, d)
    return held, torch.bmm(flat, flat.mT).view(b, j, i)


class _GradientSum:
    """The votes' gradient: the products' shares a_i m per (b, j) (a `(B, J, I)`, m `(B, J, D)`) or a_i u_i, kept
    until the last has arrived, then summed in one pass into the votes' own memory order and dtype."""

    def __init__(self, votes: torch.Tensor):
        self.votes, self.shares = votes, []
        # the given votes' layout, not the votes: `votes` becomes the parent-major copy, and the given ones may go
        self.like = (votes.shape, votes.stride(), votes.dtype)

    def add(self, a: torch.Tensor, m: torch.Tensor | None = None) -> None:
        self.shares.append((a, m))

    def take(self) -> torch.Tensor:
        shares, self.shares = self.shares, []  # a second backward (retain_graph) sums afresh
        shape, stride, dtype = self.like
        out = torch.empty_strided(shape, stride, dtype=dtype, device=self.votes.device)
        if not shares:
            return out.zero_()
        return SHARE_SUM(compiles(self.votes), self.votes, shares, out)


def sum_shares(votes: torch.Tensor, shares: list, out: torch.Tensor) -> torch.Tensor:
    """`out` = the sum of a_i m (a_i u_i where m is None) over `shares`, in their order."""
    total = None
    for a, m in shares:
        other = votes if m is None else m.unsqueeze(2)
        if total is None:
            total = a.unsqueeze(-1) * other
        else:
            total.addcmul_(a.unsqueeze(-1), other)
    return out.copy_(total)


# Eager on the CPU, each share is a pass over the 150 MB of γ-CapsNet's votes gradient whose innermost loop runs over
# D = 8 with a broadcast factor, unvectorised, and casting and relaying the sum out for the votes are two more;
# compiled, it is written once, in the votes' dtype and order (22 against 88 ms, Zen 5; benchmarks/README.md, "The
# votes' gradient in one pass").
SHARE_SUM = Loop(sum_shares)


class _Votes(torch.autograd.Function):
    """votes -> (the token, their squared lengths); its backward adds the lengths' share 2 g_i u_i to the sum the
    products left and hands it on."""

    @staticmethod
    def forward(ctx, votes, total: _GradientSum):
        ctx.total = total
        total.votes, squared = parent_major_with_lengths(votes)
        return squared.new_zeros(()), squared

    @staticmethod
    def backward(ctx, _grad, grad_squared):
        if grad_squared is not None:
            ctx.total.add(2.0 * grad_squared)
        return ctx.total.take(), None


def _token_gradient(ctx, grad: torch.Tensor) -> torch.Tensor | None:
    return grad.new_zeros(()) if ctx.needs_input_grad[1] else None


class _Weighted(torch.autograd.Function):
    """`SharedVotes.weighted`."""

    @staticmethod
    def forward(ctx, weights, token, total: _GradientSum):
        ctx.total = total
        ctx.save_for_backward(weights)
        return weighted_sum(weights, total.votes)

    @staticmethod
    def backward(ctx, grad):
        (weights,) = ctx.saved_tensors
        grad_weights = weights_gradient(grad, ctx.total.votes) if ctx.needs_input_grad[0] else None
        if ctx.needs_input_grad[1]:
            ctx.total.add(weights, grad)
        return grad_weights, _token_gradient(ctx, grad), None


class _Dots(torch.autograd.Function):
    """`SharedVotes.dots`; the small factor goes on the left (v^T U^T, g^T U), 3-5x faster on CPU than U v, U^T g."""

    @staticmethod
    def forward(ctx, parents, token, total: _GradientSum):
        ctx.total = total
        ctx.save_for_backward(parents)
        return torch.matmul(parents.unsqueeze(2), total.votes.mT).squeeze(2)

    @staticmethod
    def backward(ctx, grad):
        (parents,) = ctx.saved_tensors
        grad_parents = torch.matmul(grad.unsqueeze(2), ctx.total.votes).squeeze(2) if ctx.needs_input_grad[0] else None
        if ctx.needs_input_grad[1]:
            ctx.total.add(grad, parents)
        return grad_parents, _token_gradient(ctx, grad), None


def weighted_parents(c: torch.Tensor, u_hat: torch.Tensor | SharedVotes, bias: torch.Tensor | None,
                     quantize_levels: int | None, vote_scale: torch.Tensor | None = None) -> torch.Tensor:
    """v_j = squash(sum_i c_ij u_hat_j|i + bias_j) from couplings (B, J, I) and votes (B, J, I, D) -> (B, J, D);
    `quantize_levels` rounds the couplings (+Q); `vote_scale` (B, J, I) rescales each vote via its coupling."""
    weights = quantize_couplings(c, quantize_levels) if quantize_levels else c
    if vote_scale is not None:
        weights = weights * vote_scale
    # (B, J, D)
    s = u_hat.weighted(weights) if isinstance(u_hat, SharedVotes) else WeightedVotes.apply(weights, u_hat)
    if bias is not None:
        s = s + bias.float()
    return squash(s)


def agreement_iterations(u_hat: torch.Tensor | SharedVotes, routed: torch.Tensor | SharedVotes, iterations: int,
                         bias: torch.Tensor | None,
                         quantize_levels: int | None, trace: list | None,
                         next_logits: Callable[[torch.Tensor | None, torch.Tensor], torch.Tensor],
                         vote_scales: tuple[torch.Tensor, torch.Tensor] | None = None,
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """The iterative routings' loop on votes `(B, J, I, D)`: logits from 0, c = softmax over parents, v =
    `weighted_parents`, then `next_logits(logits, v)`, which gets None for the zero logits of the first iteration.
    Earlier iterations sum `routed` (possibly detached), the last `u_hat`, rounded for +Q; `vote_scales` is (for
    `u_hat`, for `routed`); `trace` gets each detached `(c, v)`.
    Returns `(v (B, J, D), c (B, I, J))`, c unrounded."""
    votes = u_hat.votes if isinstance(u_hat, SharedVotes) else u_hat
    logits = None  # (B, J, I); none yet: the first couplings are the softmax of zeros, 1/J each, written as such
    for it in range(iterations):
        last = it == iterations - 1
        c = votes.new_full(votes.shape[:3], 1.0 / votes.shape[1]) if logits is None else torch.softmax(logits, dim=1)
        scale = None if vote_scales is None else vote_scales[0 if last else 1]
        v = weighted_parents(c, u_hat if last else routed, bias, quantize_levels if last else None, scale)
        if trace is not None:
            trace.append((c.detach().transpose(1, 2), v.detach()))
        if not last:
            logits = next_logits(logits, v)
    return v, c.transpose(1, 2)
