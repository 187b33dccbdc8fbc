"""The benchmarks' baseline (broadcast-matmul votes) computes what rem's einsum votes compute."""

from __future__ import annotations

import torch

from benchmarks.broadcast_votes import BroadcastCapsuleVotes, use_broadcast_votes
from rem.capsules import CapsuleVotes
from rem.models import create_model


def test_broadcast_votes_equal_einsum_votes_and_gradients():
    torch.manual_seed(0)
    ours = CapsuleVotes(in_caps=36, in_dim=8, out_caps=10, out_dim=16)
    baseline = BroadcastCapsuleVotes(in_caps=36, in_dim=8, out_caps=10, out_dim=16)
    baseline.load_state_dict(ours.state_dict())
    u = torch.randn(5, 36, 8)
    a, b = ours(u), baseline(u)
    assert a.shape == b.shape == (5, 36, 10, 16)
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    grad = torch.randn_like(a)
    (ga,) = torch.autograd.grad(a, ours.weight, grad)
    (gb,) = torch.autograd.grad(b, baseline.weight, grad)
    torch.testing.assert_close(ga, gb, rtol=1e-4, atol=1e-4)


def test_swapped_capsnet_gives_the_same_output():
    torch.manual_seed(0)
    model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, conv_channels=16, primary_types=4)
    x = torch.randn(3, 1, 28, 28)
    expected = model(x).lengths
    use_broadcast_votes(model)
    assert isinstance(model.votes, BroadcastCapsuleVotes)
    assert any(p is model.votes.weight for p in model.parameters())  # same Parameter: optimisers see it
    torch.testing.assert_close(model(x).lengths, expected, rtol=1e-5, atol=1e-6)
