"""The public API of DESIGN.md §3: squash, dynamic_routing, margin_loss, quantize, parse_tree_stats, models."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rem.capsules import squash
from rem.losses import margin_loss
from rem.models import count_parameters, create_model, list_models
from rem.parse_trees import parse_tree_stats, quantize
from rem.routing import dynamic_routing


def test_squash_shrinks_length_below_one_and_keeps_direction():
    s = torch.tensor([[3.0, 4.0], [0.3, -0.4]])
    v = squash(s)
    norms = v.norm(dim=-1)
    assert torch.allclose(norms, torch.tensor([25 / 26, 0.25 / 1.25]), atol=1e-6)  # |s|^2 / (1 + |s|^2)
    cos = torch.nn.functional.cosine_similarity(v, s, dim=-1)
    assert torch.allclose(cos, torch.ones(2), atol=1e-6)


def test_squash_is_finite_with_finite_gradient_at_zero():
    # v = g(r) s with g(r) = r / (1 + r^2): its Jacobian g I + g'(r) s s^T / r vanishes at s = 0, and the epsilon
    # inside the square root keeps autograd's value there exactly 0 instead of 0/0.
    s = torch.zeros(4, 8, requires_grad=True)
    v = squash(s)
    v.sum().backward()
    assert torch.equal(v, torch.zeros_like(v))
    assert torch.equal(s.grad, torch.zeros_like(s))


def test_squash_jacobian_is_the_analytic_one():
    s = torch.tensor([3.0, 4.0, 0.0])
    r = 5.0
    g, dg = r / (1 + r**2), (1 - r**2) / (1 + r**2) ** 2  # g(r) = r / (1 + r^2) and its derivative
    expected = g * torch.eye(3) + dg * torch.outer(s, s) / r
    assert torch.allclose(torch.autograd.functional.jacobian(squash, s), expected, atol=1e-6)


def test_dynamic_routing_couplings_sum_to_one_over_parents():
    torch.manual_seed(0)
    votes = torch.randn(3, 5, 4, 6)
    v, c = dynamic_routing(votes, iterations=3)
    assert v.shape == (3, 4, 6) and c.shape == (3, 5, 4)
    assert torch.allclose(c.sum(dim=2), torch.ones(3, 5), atol=1e-6)


def test_dynamic_routing_one_iteration_is_uniform_and_bias_is_added():
    votes = torch.randn(2, 3, 4, 2)
    bias = torch.full((4, 2), 0.5)
    v, c = dynamic_routing(votes, iterations=1, bias=bias)
    assert torch.allclose(c, torch.full((2, 3, 4), 0.25))
    expected = squash(votes.mean(dim=1) * 1.0 * 3 / 4 + bias)  # sum_i (1/4) u_hat + bias
    assert torch.allclose(v, expected, atol=1e-6)


def test_agreement_raises_the_coupling_of_the_agreeing_parent():
    # Two inputs both vote [1, 0] for parent 0 (they agree); for parent 1 they vote in opposite directions.
    votes = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, -1.0]]]])  # (B=1, I=2, J=2, D=2)
    _, c1 = dynamic_routing(votes, iterations=1)
    _, c3 = dynamic_routing(votes, iterations=3)
    assert torch.allclose(c1, torch.full_like(c1, 0.5))
    assert (c3[0, :, 0] > 0.5).all() and (c3[0, :, 1] < 0.5).all()
    # Hand-computed second iteration: v0 = squash([0.5+0.5, 0]) = [0.5, 0]; v1 = squash([0, 0]) = 0.
    # b_i0 = <[1,0],[0.5,0]> = 0.5, b_i1 = 0 -> c_i0 = sigmoid(0.5).
    _, c2 = dynamic_routing(votes, iterations=2)
    assert torch.allclose(c2[0, :, 0], torch.full((2,), 1 / (1 + math.exp(-0.5))), atol=1e-6)


def test_routing_gradient_flows_only_through_the_last_iteration_but_reaches_votes():
    """The gradient w.r.t. the votes is exactly that of the last iteration's weighted sum with its couplings held
    constant: v = squash(sum_i c_ij u_hat_j|i), c detached. A gradient through the earlier iterations' agreement
    updates would differ from it (checked below against routing with the votes never detached)."""
    torch.manual_seed(0)
    votes = torch.randn(2, 6, 3, 4, requires_grad=True)
    weights = torch.randn(2, 3, 4)  # a loss that weighs every parent and dimension differently
    v, c = dynamic_routing(votes, iterations=3)
    (v * weights).sum().backward()

    held = votes.detach().clone().requires_grad_(True)
    s = (c.detach().unsqueeze(-1) * held).sum(dim=1)  # (B, J, D): couplings are constants for autograd
    (squash(s) * weights).sum().backward()
    assert torch.allclose(votes.grad, held.grad, atol=1e-6)

    # Routing differentiated through every iteration (the logits' dependence on the votes) gives another gradient.
    full = votes.detach().clone().requires_grad_(True)
    logits = torch.zeros(2, 6, 3)
    for it in range(3):
        coupling = torch.softmax(logits, dim=2)
        out = squash((coupling.unsqueeze(-1) * full).sum(dim=1))
        logits = logits + (full * out.unsqueeze(1)).sum(-1)
    (out * weights).sum().backward()
    assert torch.allclose(out, v.detach(), atol=1e-5)  # the same forward
    assert not torch.allclose(full.grad, votes.grad, atol=1e-4)


def test_margin_loss_hand_computed():
    lengths = torch.tensor([[0.95, 0.3], [0.5, 0.05]])
    target = torch.tensor([0, 1])
    # sample 0: T=class0: max(0, .9-.95)^2 = 0; class1: .5*max(0,.3-.1)^2 = .02 -> 0.02
    # sample 1: T=class1: max(0, .9-.05)^2 = .7225; class0: .5*max(0,.5-.1)^2 = .08 -> 0.8025
    assert margin_loss(lengths, target).item() == pytest.approx((0.02 + 0.8025) / 2)
    assert margin_loss(lengths, target, m_pos=1.0, m_neg=0.0, lam=1.0).item() == pytest.approx(
        ((0.05**2 + 0.3**2) + (0.95**2 + 0.5**2)) / 2)
    assert margin_loss(lengths, target, reduction="none").tolist() == pytest.approx([0.02, 0.8025])
    with pytest.raises(ValueError, match="reduction='sum'"):
        margin_loss(lengths, target, reduction="sum")


def test_quantize_matches_rem_bins():
    c = torch.tensor([0.0, 0.04, 0.05, 0.051, 0.14, 0.25, 0.5, 0.96, 1.0])
    assert quantize(c).tolist() == [0, 0, 0, 1, 1, 2, 5, 10, 10]
    assert quantize(torch.tensor([0.3, 0.6]), levels=3).tolist() == [1, 1]
    with pytest.raises(ValueError, match="levels"):
        quantize(c, levels=1)


def test_parse_tree_stats_hand_computed():
    # 5 images, I=2 inputs, J=3 classes. Keys at the predicted class:
    # images 0,1,2 predicted 0 with keys (5,5), (5,5), (1,9) -> 2 trees, entropy H(2/3, 1/3)
    # image 3 predicted 2 -> 1 tree, entropy 0 (a class with one image); nobody predicted class 1.
    # image 4 predicted 0 with key (1,9) -> class 0 counts (5,5):2, (1,9):2 -> H = 1 bit
    c = torch.zeros(5, 2, 3)
    c[0, :, 0] = torch.tensor([0.5, 0.5])
    c[1, :, 0] = torch.tensor([0.52, 0.48])  # same key as image 0 after quantization
    c[2, :, 0] = torch.tensor([0.1, 0.9])
    c[3, :, 2] = torch.tensor([0.7, 0.3])
    c[4, :, 0] = torch.tensor([0.12, 0.88])
    predicted = torch.tensor([0, 0, 0, 2, 0])
    stats = parse_tree_stats(c, predicted)
    assert list(stats.index) == [0, 1, 2]
    assert stats.loc[0, "n_images"] == 4 and stats.loc[0, "n_parse_trees"] == 2
    assert stats.loc[0, "entropy_bits"] == pytest.approx(1.0)
    assert stats.loc[1, "n_images"] == 0 and stats.loc[1, "n_parse_trees"] == 0
    assert stats.loc[2, "n_images"] == 1 and stats.loc[2, "n_parse_trees"] == 1 and stats.loc[2, "entropy_bits"] == 0.0
    three = parse_tree_stats(c[:3], predicted[:3])
    p = np.array([2 / 3, 1 / 3])
    assert three.loc[0, "entropy_bits"] == pytest.approx(float(-(p * np.log2(p)).sum()))


def test_parse_tree_stats_identical_keys_give_zero_entropy():
    c = torch.full((50, 7, 4), 0.25)
    stats = parse_tree_stats(c, torch.zeros(50, dtype=torch.long))
    assert stats.loc[0, "n_parse_trees"] == 1 and stats.loc[0, "entropy_bits"] == 0.0


def test_create_model_unknown_name_lists_known_models():
    with pytest.raises(KeyError, match="capsnet"):
        create_model("capsnett", in_shape=(1, 28, 28), num_classes=10)
    assert "capsnet" in list_models()


@pytest.mark.parametrize("in_shape,decoder,expected", [
    ((1, 28, 28), False, 6_804_384),
    ((1, 28, 28), True, 8_215_728),
    ((3, 24, 24), False, 11_990_688),
    ((1, 40, 40), False, 11_228_064),
])
def test_capsnet_parameter_counts_match_rem(in_shape, decoder, expected):
    model = create_model("capsnet", in_shape=in_shape, num_classes=10, decoder=decoder)
    assert count_parameters(model) == expected


def test_capsnet_forward_contract():
    model = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, decoder=True)
    out = model(torch.randn(3, 1, 28, 28))
    assert out.lengths.shape == (3, 10) and out.capsules.shape == (3, 10, 16)
    assert out.couplings.shape == (3, 1152, 10) and out.reconstruction.shape == (3, 1, 28, 28)
    assert torch.allclose(out.couplings.sum(-1), torch.ones(3, 1152), atol=1e-5)
    assert ((out.lengths > 0) & (out.lengths < 1)).all()
