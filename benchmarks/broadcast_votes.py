"""The common public formulation of capsule votes, kept only as the benchmarks' baseline.

Most CapsNet implementations compute u_hat = W u as `torch.matmul(W[None], u[:, :, None, :, None])`: the
(I, J, D, K) weight is broadcast over the batch, so matmul materialises (and, in backward, reduces) one
copy of W per sample. `rem.capsules.CapsuleVotes` computes the same numbers as one einsum. The test
tests/benchmarks/test_broadcast_votes.py checks both give the same votes and gradients.
"""

from __future__ import annotations

import torch

from rem.capsules import CapsuleVotes


class BroadcastCapsuleVotes(CapsuleVotes):
    """Same parameter and output `(B, I, J, D)` as CapsuleVotes, computed the common (slow) way."""

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return torch.matmul(self.weight.unsqueeze(0), u[:, :, None, :, None]).squeeze(-1)


def use_broadcast_votes(model: torch.nn.Module) -> torch.nn.Module:
    """Swap every CapsuleVotes of `model` for the broadcast formulation, keeping its weights."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is CapsuleVotes:
                baseline = BroadcastCapsuleVotes.__new__(BroadcastCapsuleVotes)
                baseline.__dict__.update(child.__dict__)  # same nn.Module state, same Parameter object
                setattr(parent, name, baseline)
    return model
