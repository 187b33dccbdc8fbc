"""`model.routing`: every registered routing under one calling convention (couplings (B, I, J) summing to 1 over the
parents, +Q, a trace), each capsule architecture built with each built-in routing, "" the architecture's own routing
exactly, and an unknown routing or a model without routing refused in one line."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from rem.capsules import efficient_squash, squash
from rem.config import Config, ConfigError, ModelConfig
from rem.models import create_model
from rem.models.from_config import model_options
from rem.models.registry import default_routing, routing_models
from rem.routing import PARENTS, PRIOR, ROUTINGS, Routing, quantize_couplings, register_routing
from tests.extending.toy_routing import uniform_routing
from tests.tiny_trials import SMALL_CAPSNET

BUILT_IN = ["dynamic", "scaled_distance", "self_attention"]
B, I, J, D = 3, 7, 5, 4
SMALL = {"capsnet": SMALL_CAPSNET, "gamma_capsnet": SMALL_CAPSNET, "efficient_capsnet": {},
         "deepcaps": {"stem_channels": 8, "caps_types": 4}}


def votes_and_bias(routing: Routing) -> tuple[torch.Tensor, torch.Tensor | None]:
    generator = torch.Generator().manual_seed(0)
    votes = torch.randn(B, I, J, D, generator=generator)
    shape = {PARENTS: (J, D), PRIOR: (I, J)}.get(routing.bias)
    return votes, (0.1 * torch.randn(shape, generator=generator) if shape else None)


def test_the_built_in_routings_are_registered_in_order():
    assert ROUTINGS.names()[:3] == BUILT_IN
    assert {name: default_routing(name) for name in routing_models()} == {
        "capsnet": "dynamic", "deepcaps": "dynamic", "efficient_capsnet": "self_attention",
        "gamma_capsnet": "scaled_distance"}


@pytest.mark.parametrize("name", BUILT_IN)
def test_each_routing_returns_outputs_and_couplings_summing_to_one_over_the_parents(name):
    routing = ROUTINGS.get(name)
    votes, bias = votes_and_bias(routing)
    trace: list = []
    v, c = routing(votes, 3, bias, activations=torch.rand(B, I), trace=trace)
    assert v.shape == (B, J, D) and c.shape == (B, I, J)
    assert torch.allclose(c.sum(-1), torch.ones(B, I), atol=1e-6) and (c >= 0).all()
    assert trace and torch.equal(trace[-1][0], c.detach()) and torch.equal(trace[-1][1], v.detach())
    assert len(trace) == (1 if name == "self_attention" else 3)  # one pass, or one entry per iteration


@pytest.mark.parametrize("name", BUILT_IN)
def test_plus_q_sums_the_votes_with_the_quantized_couplings(name):
    routing = ROUTINGS.get(name)
    votes, bias = votes_and_bias(routing)
    votes.requires_grad_(True)
    v, c = routing(votes, 3, bias, quantize_levels=11)  # no activations: scaled_distance leaves the votes unclipped
    q = quantize_couplings(c.detach(), 11)
    assert torch.allclose(q * 10, (q * 10).round(), atol=1e-5)  # the couplings on the 11-level grid
    s = torch.einsum("bij,bijd->bjd", q, votes.detach())
    if routing.bias == PRIOR:  # Efficient-CapsNet's prior B joins the rounded couplings after the softmax
        expected = efficient_squash(s + torch.einsum("ij,bijd->bjd", bias, votes.detach()))
    else:
        expected = squash(s + bias)
    assert torch.allclose(v.detach(), expected, atol=1e-5)
    v.sum().backward()
    assert torch.isfinite(votes.grad).all() and votes.grad.abs().sum() > 0


def test_a_routing_without_couplings_of_the_votes_shape_is_refused():
    flat = Routing(lambda votes, iterations, bias, **_: (votes.sum(1), votes[..., 0].sum(1)))
    with pytest.raises(ValueError, match=r"couplings must be \(3, 7, 5\)"):
        flat(torch.randn(B, I, J, D), 1)


@pytest.mark.parametrize("model", list(SMALL))
@pytest.mark.parametrize("routing", ["", *BUILT_IN])
def test_each_architecture_runs_each_built_in_routing(model, routing):
    torch.manual_seed(0)
    net = create_model(model, in_shape=(1, 28, 28), num_classes=10, routing=routing, **SMALL[model])
    out = net(torch.rand(2, 1, 28, 28), quantize_levels=11)
    assert out.lengths.shape == (2, 10) and out.couplings.shape[::2] == (2, 10)
    assert torch.allclose(out.couplings.sum(-1), torch.ones(out.couplings.shape[:2]), atol=1e-5)
    out.lengths.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in net.parameters() if p.grad is not None)


@pytest.mark.parametrize("model", list(SMALL))
def test_the_empty_routing_is_the_architectures_own_to_the_bit(model):
    own = default_routing(model)
    outputs = []
    for routing in ("", own):
        torch.manual_seed(0)
        net = create_model(model, in_shape=(1, 28, 28), num_classes=10, routing=routing, **SMALL[model]).eval()
        torch.manual_seed(1)
        outputs.append(net(torch.rand(2, 1, 28, 28), quantize_levels=6))
    assert torch.equal(outputs[0].lengths, outputs[1].lengths)
    assert torch.equal(outputs[0].couplings, outputs[1].couplings)


def test_a_bias_of_the_routings_form_only():
    kinds = {name: create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, routing=name, **SMALL_CAPSNET)
             for name in BUILT_IN}
    assert kinds["dynamic"].routing_bias.shape == kinds["scaled_distance"].routing_bias.shape == (10, 16)
    assert kinds["self_attention"].routing_bias is None  # its prior is (I, J), CapsNet's bias (J, D)
    efficient = create_model("efficient_capsnet", in_shape=(1, 28, 28), num_classes=10, routing="dynamic")
    assert efficient.prior is None


def test_a_routing_registered_outside_rem_runs_in_capsnet():
    assert ROUTINGS.get("uniform").route is uniform_routing
    net = create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, routing="uniform", **SMALL_CAPSNET)
    out = net(torch.rand(2, 1, 28, 28), quantize_levels=11)
    assert torch.allclose(out.couplings, torch.full_like(out.couplings, 0.1))
    register_routing("uniform", iterative=False)(uniform_routing)  # the same definition met again is no second entry
    with pytest.raises(ValueError, match="registered twice"):
        register_routing("uniform")(lambda votes, iterations, bias=None, **_: None)


def test_an_unknown_routing_is_one_line_naming_the_known_ones_and_the_plugin_variable():
    with pytest.raises(ValueError) as err:
        create_model("capsnet", in_shape=(1, 28, 28), num_classes=10, routing="no_such_routing", **SMALL_CAPSNET)
    text = str(err.value)
    assert "\n" not in text and "model.routing='no_such_routing'" in text
    assert "dynamic" in text and "REM_PLUGINS" in text


def config(name: str, routing: str) -> Config:
    return dataclasses.replace(Config(), model=ModelConfig(name=name, routing=routing))


def test_the_config_refuses_an_unknown_routing_and_a_model_that_takes_none_in_one_line():
    Config().with_overrides({"model.name": "efficient_capsnet", "model.routing": "dynamic"}, "params")
    with pytest.raises(ConfigError, match=r"^params: model.routing='nope' is not one of \['dynamic', .*REM_PLUGINS"):
        Config().with_overrides({"model.routing": "nope"}, "params")
    with pytest.raises(ConfigError) as err:
        Config().with_overrides({"model.name": "cnn_sabour", "model.routing": "dynamic"}, "params")
    message = str(err.value)
    assert "\n" not in message and "model.routing is set, but model 'cnn_sabour' has no routing" in message


def test_the_model_options_name_the_routing_only_when_one_is_chosen():
    assert "routing" not in model_options(config("capsnet", ""))  # a default trial logs what it always did
    assert model_options(config("capsnet", "self_attention"))["routing"] == "self_attention"
