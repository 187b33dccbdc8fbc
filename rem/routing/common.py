"""What every routing shares: the parent-major layout of the votes, the weighted vote sum, REM's +Q rounding.

Conventions shared by every routing:
- votes `(B, I, J, D)`: input capsule i's prediction for parent j;
- couplings `(B, I, J)`: how much of input i goes to parent j, a softmax over the parents J;
- routing runs in fp32 (softmax of agreement logits is where bf16 loses the ordering).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from rem.capsules import squash
from rem.parse_trees import quantize


def quantize_couplings(c: torch.Tensor, levels: int) -> torch.Tensor:
    """Couplings replaced by the nearest of `levels` equally spaced values in [0, 1] (REM's +Q).

    Ties go down, as REM's (e_k, e_k+1] bins do: 0.05 -> 0.0, 0.15 -> 0.1. The gradient passes
    straight through (the quantized forward is for evaluation; this keeps it differentiable anyway).
    """
    q = quantize(c, levels).to(c.dtype) / (levels - 1)
    return c + (q - c).detach()


def parent_major(votes: torch.Tensor) -> torch.Tensor:
    """The votes as a `(B, J, I, D)` tensor in contiguous memory, without a copy when they already are.

    Routing's two contractions (weighted sum over i, agreement per (i, j)) are batched matmuls over
    (b, j); in parent-major memory they run far faster on CPU than on the (B, I, J, D) layout.
    `CapsuleVotes` produces parent-major votes and hands them out as a transposed (B, I, J, D) view.
    """
    return votes.float().transpose(1, 2).contiguous()


def weighted_sum(weights: torch.Tensor, votes: torch.Tensor) -> torch.Tensor:
    """s = sum_i w_i u_i per (b, j): weights `(B, J, I)`, parent-major votes `(B, J, I, D)` -> `(B, J, D)`."""
    return torch.matmul(weights.unsqueeze(2), votes).squeeze(2)


def weights_gradient(grad: torch.Tensor, votes: torch.Tensor) -> torch.Tensor:
    """The weights' gradient of `weighted_sum`: g^T U^T per (b, j), `(B, J, I)` (matmul's own backward)."""
    return torch.matmul(grad.unsqueeze(2), votes.mT).squeeze(2)


def outer_share(a: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """a_i m per (b, j), `(B, J, I, D)`: a product's share of the votes' gradient. Autograd's own for a matmul would be
    a batched matrix product of inner size 1, which CPU kernels run ~5x slower than this broadcast product; each
    element is the single product a_i m_d either way, so the numbers are the same to the bit."""
    return a.unsqueeze(-1) * m.unsqueeze(2)


class WeightedVotes(torch.autograd.Function):
    """`weighted_sum` of votes that nothing else reads (dynamic routing's: its agreement reads detached votes), with
    `outer_share` as the votes' gradient. Plain tensors in and out, so torch.compile keeps it in one graph (CapsNet
    and DeepCaps compile on some trial paths); `SharedVotes` is for votes several products read."""

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
    """Parent-major votes `(B, J, I, D)` that several products read -- weighted sums over the inputs, dots with the
    parents, squared lengths -- with the votes' gradient summed in place.

    Autograd would have each product's backward write its share of the votes' gradient, a votes-sized tensor (150 MB
    for γ-CapsNet's fully-connected capsules at batch 128), and add the shares pairwise. Here the products take a
    token, a scalar that stands for the votes, as their differentiable input: each backward adds its share to one
    sum, and the token's own backward, which autograd runs after every product's, hands that sum on as the votes'
    gradient (γ-CapsNet's routing reads its votes six times). Its Python-side sum is a side effect torch.compile
    cannot trace in one graph: models that compile route their votes as plain tensors (`WeightedVotes`)."""

    def __init__(self, votes: torch.Tensor):
        self.votes = votes.detach()
        self._sum = _GradientSum(self.votes)
        self._token = _Votes.apply(votes, self._sum) if votes.requires_grad else None

    def detached(self) -> SharedVotes:
        """The same votes with no gradient (the routing iterations gradients do not run through)."""
        return SharedVotes(self.votes)

    def weighted(self, weights: torch.Tensor) -> torch.Tensor:
        """s = sum_i w_i u_i per (b, j): weights `(B, J, I)` -> `(B, J, D)`."""
        return _Weighted.apply(weights, self._token, self._sum)

    def dots(self, parents: torch.Tensor) -> torch.Tensor:
        """<u_i, v> per (b, j, i): parents `(B, J, D)` -> `(B, J, I)`."""
        return _Dots.apply(parents, self._token, self._sum)

    def squared(self) -> torch.Tensor:
        """|u_i|^2 per (b, j, i) `(B, J, I)`."""
        return _Squared.apply(self._token, self._sum)


class _GradientSum:
    """The votes' gradient so far: shares a_i m per (b, j) (a `(B, J, I)`, m `(B, J, D)`), or a_i u_i."""

    def __init__(self, votes: torch.Tensor):
        self.votes, self.total = votes, None

    def add(self, a: torch.Tensor, m: torch.Tensor | None = None) -> None:
        if self.total is None:
            self.total = a.unsqueeze(-1) * self.votes if m is None else outer_share(a, m)
        else:
            self.total.addcmul_(a.unsqueeze(-1), self.votes if m is None else m.unsqueeze(2))

    def take(self) -> torch.Tensor:
        total, self.total = self.total, None  # a second backward (retain_graph) sums afresh
        return total if total is not None else torch.zeros_like(self.votes)


class _Votes(torch.autograd.Function):
    """votes -> the token; its backward is the sum the products left."""

    @staticmethod
    def forward(ctx, votes, total: _GradientSum):
        ctx.total = total
        return votes.new_zeros(())

    @staticmethod
    def backward(ctx, _grad):
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
    """`SharedVotes.dots`. Both matrix-vector products take the small factor on the left, v^T U^T and g^T U: CPU
    kernels run them 3-5x faster than U v and U^T g (the same sums of products in another order)."""

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


class _Squared(torch.autograd.Function):
    """`SharedVotes.squared`; its share 2 g_i u_i (a norm's backward would divide by the norm and mask its zeros)."""

    @staticmethod
    def forward(ctx, token, total: _GradientSum):
        ctx.total = total
        return torch.linalg.vecdot(total.votes, total.votes)

    @staticmethod
    def backward(ctx, grad):
        ctx.total.add(2.0 * grad)
        return grad.new_zeros(()), None


def weighted_parents(c: torch.Tensor, u_hat: torch.Tensor | SharedVotes, bias: torch.Tensor | None,
                     quantize_levels: int | None, vote_scale: torch.Tensor | None = None) -> torch.Tensor:
    """v_j = squash(sum_i c_ij u_hat_j|i + bias_j) from parent-major couplings (B, J, I) and votes (B, J, I, D), a
    tensor or `SharedVotes`; `quantize_levels` rounds the couplings in the sum (REM's +Q). `vote_scale` (B, J, I)
    multiplies each vote (γ-CapsNet's length clip), applied to the (rounded) coupling so the rescaled votes are never
    materialised."""
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
                         next_logits: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                         vote_scales: tuple[torch.Tensor, torch.Tensor] | None = None,
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """The loop of the iterative routings, on parent-major votes `(B, J, I, D)` (or `SharedVotes`): logits start at
    0, c = softmax over the parents, v = `weighted_parents`, logits = `next_logits(logits, v)` between iterations
    (the agreement rule).

    Earlier iterations sum `routed` (the votes, detached where gradients flow only through the last), the last sums
    `u_hat`; only the last's couplings are rounded for +Q. `vote_scales` (for `u_hat`, for `routed`), each (B, J, I),
    rescale the votes inside the sums (`weighted_parents`). `trace` receives each iteration's detached `(c (B, I, J),
    v)`. Returns `(v (B, J, D), c (B, I, J))`, c the last iteration's unrounded couplings.
    """
    votes = u_hat.votes if isinstance(u_hat, SharedVotes) else u_hat
    logits = votes.new_zeros(votes.shape[:3])  # (B, J, I)
    for it in range(iterations):
        last = it == iterations - 1
        c = torch.softmax(logits, dim=1)
        scale = None if vote_scales is None else vote_scales[0 if last else 1]
        v = weighted_parents(c, u_hat if last else routed, bias, quantize_levels if last else None, scale)
        if trace is not None:
            trace.append((c.detach().transpose(1, 2), v.detach()))
        if not last:
            logits = next_logits(logits, v)
    return v, c.transpose(1, 2)
