"""Routing variants against small hand-worked examples (2 inputs, 2 parents, tiny D)."""

from __future__ import annotations

import ast
import math
import os
import subprocess
import sys

import pytest
import torch

from rem.capsules import efficient_squash, squash
from rem.models.deepcaps import ConvCaps3d, squash_scalar_capsules
from rem.routing import dynamic_routing, quantize_couplings, scaled_distance_routing, self_attention_routing


def votes_2x2() -> torch.Tensor:
    """(B=1, I=2, J=2, D=2): both inputs agree on parent 0, they disagree on parent 1."""
    v = torch.zeros(1, 2, 2, 2)
    v[0, 0, 0] = torch.tensor([1.0, 0.0])
    v[0, 1, 0] = torch.tensor([1.0, 0.0])
    v[0, 0, 1] = torch.tensor([1.0, 0.0])
    v[0, 1, 1] = torch.tensor([-1.0, 0.0])
    return v


# ----------------------------------------------------------------------------------------------- squash
def test_efficient_squash_by_hand():
    s = torch.tensor([[3.0, 4.0]])
    expected = (1 - math.exp(-5.0)) * torch.tensor([[0.6, 0.8]])
    assert torch.allclose(efficient_squash(s), expected, atol=1e-6)


def test_efficient_squash_finite_value_and_gradient_at_zero():
    s = torch.zeros(3, 8, requires_grad=True)
    v = efficient_squash(s)
    v.sum().backward()
    assert torch.isfinite(v).all() and (v == 0).all()
    assert torch.isfinite(s.grad).all()
    # near 0, (1 - e^-n)/n -> 1: v ~= s, so the gradient is ~1
    assert torch.allclose(s.grad, torch.ones_like(s.grad), atol=1e-3)


def test_efficient_squash_lengths_below_one():
    s = torch.randn(100, 16) * 10  # lengths ~40: 1 - e^-40 rounds to 1 in fp32
    n = efficient_squash(s).norm(dim=-1)
    assert (n <= 1 + 1e-6).all() and (n > 0.99).all()
    small = efficient_squash(torch.randn(100, 16) * 0.01).norm(dim=-1)
    assert (small < 0.1).all() and (small > 0).all()


# ------------------------------------------------------------------------------------ self-attention
def test_self_attention_couplings_by_hand():
    v, c = self_attention_routing(votes_2x2())
    # parent 0: logit_i = <u_i0, u_00 + u_10> / sqrt(2) = 2 / sqrt(2) = sqrt(2) for both inputs;
    # parent 1: u_01 + u_11 = 0 -> logit 0.  c_i0 = sigmoid(sqrt(2)).
    c0 = 1 / (1 + math.exp(-math.sqrt(2)))
    expected = torch.tensor([[[c0, 1 - c0], [c0, 1 - c0]]])
    assert c.shape == (1, 2, 2)
    assert torch.allclose(c, expected, atol=1e-6)
    assert c0 > 0.5  # agreement raises the coupling of the agreeing parent
    s0 = torch.tensor([2 * c0, 0.0])
    assert torch.allclose(v[0, 0], efficient_squash(s0), atol=1e-6)
    assert torch.allclose(v[0, 1], torch.zeros(2), atol=1e-6)  # (1-c0)(1,0) + (1-c0)(-1,0) = 0


def test_self_attention_prior_added_after_softmax_and_not_in_couplings():
    prior = torch.tensor([[0.5, 0.0], [0.0, 0.0]])  # (I, J)
    v, c = self_attention_routing(votes_2x2(), prior)
    c0 = 1 / (1 + math.exp(-math.sqrt(2)))
    assert torch.allclose(c.sum(-1), torch.ones(1, 2), atol=1e-6)  # prior is not part of c
    assert torch.allclose(c[0, 0, 0], torch.tensor(c0), atol=1e-6)
    s0 = torch.tensor([(c0 + 0.5) + c0, 0.0])  # u_00 (c_00 + B_00) + u_10 c_10
    assert torch.allclose(v[0, 0], efficient_squash(s0), atol=1e-6)


def test_self_attention_quantized_weighted_sum():
    votes = torch.randn(3, 5, 4, 6)
    v, c = self_attention_routing(votes, quantize_levels=11)
    q = quantize_couplings(c, 11)
    s = torch.einsum("bij,bijd->bjd", q, votes)
    assert torch.allclose(v, efficient_squash(s), atol=1e-5)


# ------------------------------------------------------------------------------------------------ SDA
def test_sda_couplings_by_hand():
    v, c = scaled_distance_routing(votes_2x2(), iterations=2)
    # iteration 1: c = 1/2 -> s_0 = (1, 0), v_0 = squash = (0.5, 0); s_1 = 0, v_1 = 0.
    # distances: d_i0 = 0.5, d_i1 = 1; d_o = 0.75, d_p = 0.375; t = log(0.9 * 1 / 0.1) / (d_p - d_o).
    t = math.log(9.0) / (0.375 - 0.75)
    c0 = 1 / (1 + math.exp(t * 1.0 - t * 0.5))  # softmax of (t*0.5, t*1.0)
    expected = torch.tensor([[[c0, 1 - c0], [c0, 1 - c0]]])
    assert torch.allclose(c, expected, atol=1e-5)
    assert c0 > 0.5  # the nearer (agreeing) parent gains coupling
    assert torch.allclose(v[0, 0], squash(torch.tensor([2 * c0, 0.0])), atol=1e-5)
    assert torch.allclose(v[0, 1], torch.zeros(2), atol=1e-5)


def test_sda_couplings_sum_to_one_over_parents():
    votes = torch.randn(4, 6, 3, 5)
    _, c = scaled_distance_routing(votes, iterations=3)
    assert torch.allclose(c.sum(-1), torch.ones(4, 6), atol=1e-5)


def test_sda_vote_length_clipping_by_hand():
    votes = torch.zeros(1, 2, 2, 2)
    votes[0, 0, 0] = torch.tensor([3.0, 4.0])  # length 5, input activation 0.5 -> (0.3, 0.4)
    votes[0, 1, 0] = torch.tensor([0.1, 0.0])  # length 0.1 < activation 1 -> unchanged
    act = torch.tensor([[0.5, 1.0]])
    v, c = scaled_distance_routing(votes, iterations=1, activations=act)
    assert torch.allclose(c, torch.full((1, 2, 2), 0.5))
    s0 = 0.5 * torch.tensor([0.4, 0.4])
    assert torch.allclose(v[0, 0], squash(s0), atol=1e-6)


def test_sda_bias_added_before_squash():
    bias = torch.tensor([[0.1, 0.2], [0.0, -0.3]])
    v, _ = scaled_distance_routing(votes_2x2(), iterations=1, bias=bias)
    s = torch.tensor([[1.0, 0.0], [0.0, 0.0]]) + bias
    assert torch.allclose(v[0], squash(s), atol=1e-6)


@pytest.mark.parametrize("routing", ["dynamic", "sda"])
def test_gradient_only_through_last_iteration(routing):
    torch.manual_seed(0)
    votes = torch.randn(2, 7, 3, 4, requires_grad=True)
    fn = (lambda u: dynamic_routing(u, 3)) if routing == "dynamic" else (lambda u: scaled_distance_routing(u, 3))
    v, c = fn(votes)
    (v * torch.arange(4.0)).sum().backward()
    g_routing = votes.grad.clone()
    votes.grad = None
    # the same forward with the last couplings frozen: the gradient must be identical
    s = torch.einsum("bij,bijd->bjd", c.detach(), votes)
    (squash(s) * torch.arange(4.0)).sum().backward()
    assert torch.allclose(g_routing, votes.grad, atol=1e-6)


def test_sda_grad_through_routing_same_forward_gradient_through_couplings():
    """Peer et al.'s variant: the same outputs, but autograd also sees how the couplings react to the votes."""
    torch.manual_seed(0)
    votes = torch.randn(2, 7, 3, 4, requires_grad=True)
    act = torch.rand(2, 7) + 0.5
    weights = torch.arange(4.0)
    grads = {}
    for through in (False, True):
        v, c = scaled_distance_routing(votes, 3, torch.full((3, 4), 0.1), act, grad_through_routing=through)
        (v * weights).sum().backward()
        grads[through], votes.grad = votes.grad.clone(), None
        outputs = grads.setdefault("v", v.detach())
        assert torch.allclose(v, outputs, atol=1e-6) and torch.allclose(c.sum(-1), torch.ones(2, 7), atol=1e-5)
    assert not torch.allclose(grads[False], grads[True], atol=1e-4)  # the couplings' share of the gradient
    zeros = torch.zeros(2, 5, 3, 4, requires_grad=True)
    v, c = scaled_distance_routing(zeros, 3, activations=torch.ones(2, 5), grad_through_routing=True)
    v.sum().backward()
    assert torch.isfinite(zeros.grad).all() and torch.allclose(c, torch.full_like(c, 1 / 3), atol=1e-5)


def sda_written_out(votes, iterations, bias, activations, p, through, levels=None):
    """Scaled-distance routing as its docstring states it, every tensor materialised: the clipped votes, the
    differences v_j - û_j|i, their norms. The routing itself carries clip factors and an expanded distance instead."""
    from rem.capsules import EPS
    from rem.routing import clip_vote_lengths
    u = clip_vote_lengths(votes.transpose(1, 2), activations)  # (B, J, I, D)
    routed = u if through else u.detach()
    j = u.shape[1]
    logits = torch.zeros(u.shape[:3])
    for it in range(iterations):
        last = it == iterations - 1
        c = torch.softmax(logits, dim=1)
        weights = quantize_couplings(c, levels) if (last and levels) else c
        v = squash(torch.einsum("bji,bjid->bjd", weights, u if last else routed) + bias)
        if not last:
            diff = (v if through else v.detach()).unsqueeze(2) - routed
            dist = torch.sqrt((diff * diff).sum(-1) + EPS)
            d_o = dist.mean(dim=(1, 2), keepdim=True)
            logits = math.log(p * (j - 1) / (1 - p)) / (0.5 * d_o - d_o - 1e-12) * dist
    return v, c.transpose(1, 2)


@pytest.mark.parametrize("through", [False, True])
@pytest.mark.parametrize("levels", [None, 6])
def test_sda_fused_equals_the_routing_written_out(through, levels):
    """The fused routing (clip factors, distances by expansion) agrees with the written-out one in outputs,
    couplings and gradients, to fp32 rounding: long and short votes, zero votes and clipped ones together."""
    torch.manual_seed(3)
    base = torch.randn(4, 9, 5, 8) * torch.rand(4, 9, 1, 1) * 2
    base[0, 2] = 0.0  # a dead input capsule
    act = torch.rand(4, 9)
    bias = torch.full((5, 8), 0.1)
    results = []
    for route in (lambda u, a, b: scaled_distance_routing(u, 3, b, a, p=0.9, grad_through_routing=through,
                                                          quantize_levels=levels),
                  lambda u, a, b: sda_written_out(u, 3, b, a, 0.9, through, levels)):
        votes, acts, biases = (t.clone().requires_grad_(True) for t in (base, act, bias))
        v, c = route(votes, acts, biases)
        (v * torch.linspace(-1, 1, 8)).sum().backward()
        results.append((v.detach(), c.detach(), votes.grad, acts.grad, biases.grad))
    (v1, c1, *g1), (v2, c2, *g2) = results
    assert torch.allclose(v1, v2, atol=1e-5) and torch.allclose(c1, c2, atol=1e-5)
    for mine, written_out in zip(g1, g2):  # the votes', the activations' (the clip) and the bias' gradients
        assert torch.isfinite(mine).all() and torch.allclose(mine, written_out, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_sda_steps_written_out_pass_gradcheck(compiled):
    """The two elementwise steps whose backward the routing writes out, in float64: clip factors (votes clipped and
    not) and distance logits (with and without clip factors), eager and as the compiled loops large votes get."""
    from rem.routing.scaled_distance import ClipFactors, DistanceLogits

    torch.manual_seed(4)
    squared = (torch.rand(2, 3, 5, dtype=torch.float64) * 2).requires_grad_(True)
    acts = torch.rand(2, 5, dtype=torch.float64) + 0.2
    acts[0, 1] = 0.5
    with torch.no_grad():
        squared[0, :, 1] = 0.01  # |u| = 0.1 < 0.5: not clipped (the random rest has both kinds)
    acts.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda q, a: ClipFactors.apply(q, a, compiled), (squared, acts))
    dots = torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)
    parents = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    scale = torch.rand(2, 3, 5, dtype=torch.float64, requires_grad=True)
    log_odds = math.log(0.9 * 2 / 0.1)
    assert torch.autograd.gradcheck(lambda d, v, s, q: DistanceLogits.apply(d, v, s, q, log_odds, compiled),
                                    (dots, parents, scale, squared))
    assert torch.autograd.gradcheck(lambda d, v, q: DistanceLogits.apply(d, v, None, q, log_odds, compiled),
                                    (dots, parents, squared))


def test_shared_votes_hand_the_gradient_back_in_the_votes_own_layout_and_dtype():
    """bf16 votes laid out by input capsule, as γ-CapsNet's FC einsum hands them: the routing reads an fp32
    parent-major copy, and the gradient it hands back is bf16 in the votes' own strides (so the einsum's backward
    copies nothing), equal to autograd's on the same products in float64; the sum compiled as large votes get it
    on the CPU equals the eager one."""
    from rem.routing.common import SHARE_SUM, SharedVotes, sum_shares

    torch.manual_seed(6)
    by_input = torch.randn(7, 3, 4, 8).bfloat16().requires_grad_(True)  # (I, B, J, D) in memory
    weights, parents = torch.rand(3, 4, 7), torch.randn(3, 4, 8)
    seen = []

    def loss(votes):
        shared = SharedVotes(votes)
        return ((shared.weighted(weights) * parents).sum() + (shared.dots(parents) * weights).sum()
                + (shared.squared() * weights.flip(1)).sum())

    view = by_input.permute(1, 2, 0, 3)  # (B, J, I, D)
    view.register_hook(lambda grad: seen.append(grad))
    loss(view).backward()
    (grad,) = seen
    assert grad.dtype == torch.bfloat16 and grad.stride() == view.stride()
    plain = by_input.detach().double().requires_grad_(True)
    p64, w64 = parents.double(), weights.double()
    u = plain.permute(1, 2, 0, 3)
    ((torch.einsum("bji,bjid->bjd", w64, u) * p64).sum() + (torch.einsum("bjid,bjd->bji", u, p64) * w64).sum()
     + ((u * u).sum(-1) * w64.flip(1)).sum()).backward()
    assert torch.allclose(by_input.grad.double(), plain.grad, rtol=1e-2, atol=1e-2)
    held = view.detach().float().contiguous()
    shares = [(weights, parents), (weights.flip(1), None)]
    out = torch.empty_strided(view.shape, view.stride(), dtype=torch.float32)
    compiled = SHARE_SUM(True, held, shares, out.clone())
    assert torch.allclose(compiled, sum_shares(held, shares, out), atol=1e-6)


NO_COMPILER = """
import warnings, torch
import torch._inductor.config as inductor
inductor.cpp.cxx = ("/nonexistent/g++",)  # a machine without a C++ compiler
from rem.routing import scaled_distance_routing
torch.manual_seed(0)
votes = torch.randn(2, 1024, 64, 32, requires_grad=True)  # past COMPILED_FROM: the loops are compiled on the CPU
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    v, _ = scaled_distance_routing(votes, 3, None, torch.rand(2, 1024), grad_through_routing=True)
    v.sum().backward()
print([str(w.message) for w in caught if "rem.routing" in str(w.message)])
print(votes.grad[0, :4, 0].flatten().tolist())
"""


def test_sda_trains_without_a_cpp_compiler_with_one_warning(tmp_path):
    """Where SDA's loops (clip, distances, gradient sum) cannot be compiled (here: no C++ compiler, in a process with
    an empty compile cache), they all run eagerly after one warning that names why, with the same gradient."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", NO_COMPILER], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    warned, grad = (ast.literal_eval(line) for line in done.stdout.strip().splitlines()[-2:])
    assert len(warned) == 1 and "could not be compiled here" in warned[0] and "C++ compiler" in warned[0]
    torch.manual_seed(0)
    votes = torch.randn(2, 1024, 64, 32, requires_grad=True)
    v, _ = scaled_distance_routing(votes, 3, None, torch.rand(2, 1024), grad_through_routing=True)
    v.sum().backward()
    assert torch.allclose(torch.tensor(grad), votes.grad[0, :4, 0].flatten(), atol=1e-6)


def test_sda_quantized_weighted_sum():
    votes = torch.randn(3, 5, 4, 6)
    v, c = scaled_distance_routing(votes, 3, quantize_levels=11)
    s = torch.einsum("bij,bijd->bjd", quantize_couplings(c, 11), votes)
    assert torch.allclose(v, squash(s), atol=1e-5)


# ---------------------------------------------------------------------------------- shared properties
ROUTINGS = {
    "dynamic": lambda u, **kw: dynamic_routing(u, 3, **kw),
    "self_attention": lambda u, **kw: self_attention_routing(u, **kw),
    "sda": lambda u, **kw: scaled_distance_routing(u, 3, activations=torch.ones(u.shape[0], u.shape[1]), **kw),
}


@pytest.mark.parametrize("name", sorted(ROUTINGS))
def test_zero_votes_no_nan(name):
    votes = torch.zeros(2, 5, 3, 4, requires_grad=True)
    v, c = ROUTINGS[name](votes)
    v.sum().backward()
    assert torch.isfinite(v).all() and torch.isfinite(c).all() and torch.isfinite(votes.grad).all()
    assert torch.allclose(c, torch.full_like(c, 1 / 3), atol=1e-5)


@pytest.mark.parametrize("name", sorted(ROUTINGS))
def test_routing_fp32_under_bf16_autocast(name):
    votes = torch.randn(2, 5, 3, 4).to(torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        v, c = ROUTINGS[name](votes)
    assert v.dtype == torch.float32 and c.dtype == torch.float32
    assert torch.allclose(c.sum(-1), torch.ones(2, 5), atol=1e-5)


# ------------------------------------------------------------------------------- DeepCaps 3-D layer
def test_conv_caps_3d_votes_are_the_conv3d_of_its_weights():
    """The Conv2d used for speed computes exactly REM's Conv3d (depth stride = capsule dim, spatial pad 1)."""
    torch.manual_seed(0)
    layer = ConvCaps3d(4, 8, 5, 6)
    x = torch.randn(3, 4, 8, 3, 2)
    ref = layer.conv(x.reshape(3, 1, 4 * 8, 3, 2))  # (B, J*D', I, H, W)
    assert torch.allclose(layer.votes(x), ref.view(3, 5, 6, 4, 6), atol=1e-5)


def test_scalar_squash_matches_squash_in_value_and_gradient():
    torch.manual_seed(0)
    x = (torch.randn(2, 5, 4, 4) * 3).requires_grad_()
    x.data[0, 0, 0, 0] = 0.0  # finite at 0 as squash is
    ours = squash_scalar_capsules(x)
    (ours * torch.linspace(-1, 1, 4)).sum().backward()
    g_ours, x.grad = x.grad.clone(), None
    ref = squash(x.unsqueeze(2), dim=2).squeeze(2)
    (ref * torch.linspace(-1, 1, 4)).sum().backward()
    assert torch.allclose(ours, ref, atol=1e-6) and torch.allclose(g_ours, x.grad, atol=1e-5)
    assert torch.isfinite(g_ours).all()


@pytest.mark.parametrize("softmax_over", ["space_and_parents", "parents"])
def test_conv_caps_3d_shapes_and_finite(softmax_over):
    layer = ConvCaps3d(4, 8, 3, 6, softmax_over=softmax_over)
    assert sum(p.numel() for p in layer.parameters()) == 18 * 27 + 18  # (3x3x3 kernel + bias) per output channel
    x = torch.randn(2, 4, 8, 5, 5, requires_grad=True)
    y = layer(x)
    assert y.shape == (2, 3, 6, 5, 5)
    assert (y.norm(dim=2) < 1).all()
    y.sum().backward()
    assert torch.isfinite(x.grad).all()
    z = layer(torch.zeros(2, 4, 8, 5, 5))
    assert torch.isfinite(z).all()


def test_shared_votes_sum_every_products_gradient_as_autograd_does():
    """Votes read by weighted sums, dots and squared lengths: the gradient summed in place is autograd's (float64),
    and a second backward through the same graph sums afresh."""
    from rem.routing.common import SharedVotes

    torch.manual_seed(5)
    base = torch.randn(2, 3, 4, 5, dtype=torch.float64)
    weights, parents = torch.rand(2, 3, 4, dtype=torch.float64), torch.randn(2, 3, 5, dtype=torch.float64)

    def loss(weighted, dots, squared):
        return (weighted * parents).sum() + (dots * weights).sum() + (squared * weights.flip(1)).sum() + \
            (weighted.square() * 0.5).sum()

    plain = base.clone().requires_grad_(True)
    loss(torch.einsum("bji,bjid->bjd", weights, plain), torch.einsum("bjid,bjd->bji", plain, parents),
         (plain * plain).sum(-1)).backward()
    shared_votes = base.clone().requires_grad_(True)
    shared = SharedVotes(shared_votes)
    total = loss(shared.weighted(weights), shared.dots(parents), shared.squared())
    total.backward(retain_graph=True)
    assert torch.allclose(shared_votes.grad, plain.grad, atol=1e-12)
    first, shared_votes.grad = shared_votes.grad.clone(), None
    total.backward()
    assert torch.equal(shared_votes.grad, first)
